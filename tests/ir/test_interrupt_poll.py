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


@hybrid(cache=False)
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


def test_the_pass_runs_last_and_can_be_disabled(monkeypatch):
    assert LOOP_PIPELINE[-1] == "interrupt-poll"
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "interrupt-poll")
    assert set(_marks().values()) == {None}


@pytest.mark.parametrize(("bound", "mark"), [(BOUNDED_CONSTANT, None),
                                             (BOUNDED_CONSTANT + 1, "strips")])
def test_constant_bounds(bound, mark):
    @hybrid(cache=False)
    def count(x):
        s = 0.0
        for _i in range(bound):
            s += x[0]
        return s

    module = lower_to_loops(count.specialize(np.ones(2)))
    [op] = [op for op in module.walk() if isinstance(op, loop.ForOp)]
    assert op.attributes.get("poll") == mark
