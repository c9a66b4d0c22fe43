"""``speculate-guards``: the guarded loads and arithmetic of an innermost loop run
unconditionally and the guard moves into the store's condition, so LLVM vectorizes with
plain loads (no masked gathers).  Results are compared with the pass on and off
(``check`` runs every runner, one of them with the optional passes disabled); guards
that protect something (an index not provably in bounds, an integer division, a
buffer the loop writes) keep their loads."""

from __future__ import annotations

import numpy as np
import pytest
from diff import check, rand

from pyasc import hybrid
from pyasc.ir import parse_module


@hybrid
def nms_mask(b, areas, thr):
    n = b.shape[0]
    keep = np.ones(n, np.int64)
    for i in range(n):
        if keep[i] == 1:
            for j in range(i + 1, n):
                if keep[j] == 1:
                    xx1 = max(b[i, 0], b[j, 0])
                    yy1 = max(b[i, 1], b[j, 1])
                    xx2 = min(b[i, 2], b[j, 2])
                    yy2 = min(b[i, 3], b[j, 3])
                    inter = max(xx2 - xx1, 0.0) * max(yy2 - yy1, 0.0)
                    if inter / (areas[i] + areas[j] - inter) > thr:
                        keep[j] = 0
    return keep


@hybrid
def clipped_where(x, y):
    out = np.zeros(x.shape[0], np.float32)
    for j in range(x.shape[0]):
        v = np.float32(0.0)
        if x[j] > 0:
            v = x[j] * y[j]
        else:
            v = y[j] - 1
        out[j] = v
    return out


@hybrid
def guard_keeps_index_in_bounds(x, n):
    out = np.zeros(n, np.float32)
    m = x.shape[0]
    for j in range(n):
        if j < m:
            out[j] = x[j] * 2
    return out


@hybrid
def guarded_integer_division(x, d):
    out = np.zeros(x.shape[0], np.int64)
    for j in range(x.shape[0]):
        if d[j] != 0:
            out[j] = x[j] // d[j]
    return out


@hybrid
def data_dependent_index(x, idx):
    out = np.zeros(idx.shape[0], np.float32)
    for j in range(idx.shape[0]):
        if idx[j] >= 0:
            out[j] = x[idx[j]]
    return out


@hybrid
def reads_what_it_writes(x):
    out = x.copy()
    for j in range(1, x.shape[0]):
        if out[j - 1] > 0:
            out[j] = out[j - 1] * 0.5
    return out


def _guarded_loads(fn, *args) -> int:
    """``mem.load``\\ s inside a ``loop.if`` of an innermost loop of the loop IR."""
    module = parse_module(fn.kernel(*args).loop_ir)
    count = 0
    for lp in module.walk():
        if lp.name != "loop.for" or any(o.name == "loop.for" for o in lp.walk() if o is not lp):
            continue
        for branch in lp.walk():
            if branch.name == "loop.if":
                count += sum(1 for o in branch.walk() if o.name == "mem.load")
    return count


def _boxes(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    xy = rng.random((n, 2)).astype(np.float32) * 20
    wh = rng.random((n, 2)).astype(np.float32) * 8 + 1
    b = np.concatenate([xy, xy + wh], 1).astype(np.float32)
    return b, ((b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])).astype(np.float32)


def test_nms_loads_leave_the_guard_and_the_result_is_unchanged() -> None:
    b, areas = _boxes(97, 0)
    assert _guarded_loads(nms_mask, b, areas, 0.3) == 0
    keep = check(nms_mask, b, areas, 0.3)
    assert 0 < keep.sum() < len(keep)  # some boxes suppressed, some kept


def test_nms_with_nan_boxes_and_empty_input() -> None:
    b, areas = _boxes(31, 1)
    b[3, 1] = np.nan
    areas[7] = np.nan
    check(nms_mask, b, areas, 0.2)
    check(nms_mask, b[:0], areas[:0], 0.2)


def test_if_with_results_becomes_selects() -> None:
    x, y = rand((37,), "float32"), rand((37,), "float32", 1)
    assert _guarded_loads(clipped_where, x, y) == 0
    check(clipped_where, x, y)


@pytest.mark.parametrize("boundscheck", [True, False])
def test_a_guard_that_keeps_an_index_in_bounds_stays(boundscheck: bool) -> None:
    fn = hybrid(guard_keeps_index_in_bounds.__wrapped__, boundscheck=boundscheck)
    x = rand((5,), "float32")
    assert _guarded_loads(fn, x, 9) >= 1
    check(fn, x, 9)


def test_integer_division_is_not_speculated() -> None:
    x = np.arange(-8, 9, dtype=np.int64)
    d = np.array([0, 1, -2, 0, 3] * 3 + [0, 5], np.int64)
    assert _guarded_loads(guarded_integer_division, x, d) >= 1
    check(guarded_integer_division, x, d)


def test_data_dependent_index_stays_guarded() -> None:
    x = rand((6,), "float32")
    idx = np.array([0, -1, 5, -7, 2, 3, -100], np.int64)
    assert _guarded_loads(data_dependent_index, x, idx) >= 1
    check(data_dependent_index, x, idx)


def test_loads_of_a_buffer_the_loop_writes_stay_guarded() -> None:
    x = rand((23,), "float32")
    assert _guarded_loads(reads_what_it_writes, x) >= 1
    check(reads_what_it_writes, x)
