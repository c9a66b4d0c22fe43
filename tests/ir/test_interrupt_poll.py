"""``interrupt-poll`` marks the loops that poll for Ctrl-C: while loops and loops around
loops poll at their back-edge, innermost loops run in strips unless their trip count is
bounded by array extents and small constants, counted while loops (a ``for`` with a
``break``) use their counter."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.llvm.backend import lower_to_loops
from pyasc.ir.ops import loop
from pyasc.ir.passes import LOOP_PIPELINE
from pyasc.ir.passes.interrupt_poll import BOUNDED_CONSTANT


@hybrid(cache=False, sum_lanes=False)  # the user's loops as written (no sum-lanes)
def shapes(x, n, k):
    s = 0.0
    for i in range(n):  # LINE scalar
        s += x[i % 4]
    for i in range(x.shape[0]):  # LINE dim
        s += x[i]
    for i in range(x.shape[0] - 1):  # LINE outer
        for j in range(i, x.shape[0] // 2):  # LINE triangular
            s += x[j]
    for _i in range(10**9):  # LINE huge
        s += x[0] * 0.0
    for _i in range(100):  # LINE small
        s += x[1]
    for i in range(min(n, x.shape[0])):  # LINE min
        s += x[i]
    for _i in range(k * x.shape[0]):  # LINE product
        s += x[0]
    while s > 0:  # LINE while
        s -= 1.0
    for i in range(n):  # LINE search
        if x[i % 8] < 0.0:
            s += 1.0
            break
    return s


def _marks(disabled: str = "") -> dict[str, str | None]:
    """``{comment tag: poll attribute}`` of the loops of ``shapes``."""
    module = lower_to_loops(shapes.specialize(np.ones(8), 3, 2))
    source = shapes.__wrapped__.__code__.co_firstlineno
    lines = open(shapes.__wrapped__.__code__.co_filename).read().splitlines()
    marks = {}
    for op in module.walk():
        if isinstance(op, (loop.ForOp, loop.WhileOp)) and op.loc.known:
            text = lines[op.loc.line - 1]
            if "# LINE" in text and op.loc.line > source:
                marks[text.split("# LINE ")[1]] = op.attributes.get("poll")
    return marks


def test_loops_are_marked_by_shape():
    assert _marks() == {"scalar": "strips", "dim": None, "outer": "backedge",
                        "triangular": None, "huge": "strips", "small": None, "min": None,
                        "product": "strips", "while": "backedge", "search": "counted"}


@hybrid(cache=False)
def long_sum(x, n):
    s = 0.0
    for i in range(n):
        s += x[i % 4]
    return s


def test_a_laned_sum_of_a_long_loop_still_polls():
    """``sum-lanes`` replaces the loop by block and lane loops (a trip count from a
    scalar is not split over threads): the loop over the blocks polls, so Ctrl-C still
    stops it soon (tests/runtime/test_interrupt.py runs it)."""
    module = lower_to_loops(long_sum.specialize(np.ones(8), 3))
    fors = [op for op in module.walk() if isinstance(op, loop.ForOp)]
    assert any(op.attributes.get("lanes") for op in fors)  # the rewrite happened
    assert fors[0].attributes.get("poll") in ("backedge", "strips")  # the loop over blocks


def test_the_pass_runs_last_and_can_be_disabled(monkeypatch):
    assert LOOP_PIPELINE[-1] == "interrupt-poll"
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "interrupt-poll")
    assert set(_marks().values()) == {None}


@pytest.mark.parametrize(("bound", "mark"), [(BOUNDED_CONSTANT, None),
                                             (BOUNDED_CONSTANT + 1, "strips")])
def test_constant_bounds(bound, mark):
    @hybrid(cache=False, sum_lanes=False)
    def count(x):
        s = 0.0
        for _i in range(bound):
            s += x[0]
        return s

    module = lower_to_loops(count.specialize(np.ones(2)))
    [op] = [op for op in module.walk() if isinstance(op, loop.ForOp)]
    assert op.attributes.get("poll") == mark


@hybrid(cache=False)
def counters(x, n, m):
    keep = np.zeros(x.shape[0], np.int64)
    count = 0
    for a in range(x.shape[0]):  # LINE nms-outer
        hit = False
        for k in range(count):  # LINE nms-search
            if x[keep[k]] > x[a]:
                hit = True
                break
        if hit:
            continue
        keep[count] = a
        count += 1
    up, found = 0, 0
    for _i in range(n):  # LINE unbounded-outer
        for k in range(up):  # LINE grows-in-an-unbounded-loop
            if x[k % 8] < 0.0:
                found += k
                break
        up += 2
    down = 0
    for _i in range(x.shape[0]):  # LINE down-outer
        for k in range(down, x.shape[0]):  # LINE counter-falls
            if x[k % 8] < 0.0:
                found += k
                break
        down -= 1
    scaled = 1
    for _i in range(x.shape[0]):  # LINE scaled-outer
        for k in range(scaled):  # LINE counter-doubles
            if x[k % 8] < 0.0:
                found += k
                break
        scaled = scaled * 2 + m
    return count + up + down + scaled + found


def test_a_search_up_to_a_counter_of_a_bounded_loop_is_bounded():
    # NMS: `for k in range(count)` with a break, `count += 1` on some paths of a loop
    # over an array: count <= the array's length, so the search needs no strips (they
    # cost NMS 6%); the loop around it polls and counts the search's trips
    module = lower_to_loops(counters.specialize(np.ones(8), 3, 2))
    lines = open(counters.__wrapped__.__code__.co_filename).read().splitlines()
    marks = {lines[op.loc.line - 1].split("# LINE ")[1]: op.attributes.get("poll")
             for op in module.walk() if isinstance(op, (loop.ForOp, loop.WhileOp))
             and op.loc.known and "# LINE" in lines[op.loc.line - 1]}
    assert marks == {"nms-outer": "backedge", "nms-search": None,
                     "unbounded-outer": "backedge", "grows-in-an-unbounded-loop": "counted",
                     "down-outer": "backedge", "counter-falls": None,
                     "scaled-outer": "backedge", "counter-doubles": "counted"}
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    assert counters(x, 3, 2) == counters.__wrapped__(x, 3, 2)
