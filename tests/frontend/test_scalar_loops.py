"""Explicit scalar loops with a sequential accumulator (issue 17): the expensive terms of
the sum run in a loop of their own (``distribute-reductions``, bit-identical: the same
additions in the same order), and a per-row scalar read of an input (``mx = x[i, 0]``)
no longer makes ``layout`` copy the whole input.  The sums here are compiled with
``sum_lanes=False``: that is the order ``distribute-reductions`` works on (with
``sum-lanes`` they run in np.sum's lanes instead: tests/frontend/test_sum_lanes.py)."""

from __future__ import annotations

import numpy as np
from diff import MATH, SUM, check, passes_disabled, rand

from pyasc import hybrid
from pyasc.ir import parse_module


def softmax_scalar(x):
    n, m = x.shape
    out = np.empty_like(x)
    for i in range(n):
        mx = x[i, 0]
        for j in range(1, m):
            if x[i, j] > mx:
                mx = x[i, j]
        s = np.float32(0.0)
        for j in range(m):
            e = np.exp(x[i, j] - mx)
            out[i, j] = e
            s += e
        for j in range(m):
            out[i, j] = out[i, j] / s
    return out


def logsumexp_rows(x):
    n, m = x.shape
    out = np.empty(n, np.float32)
    for i in range(n):
        s = np.float32(0.0)
        for j in range(2, m):  # the terms buffer is indexed from the loop's start
            s += np.exp(x[i, j]) * np.float32(0.5)
        out[i] = np.log(s + np.float32(1.0))
    return out


def two_sums(x):
    s = np.float32(0.0)
    t = np.float32(1.0)
    for j in range(x.shape[0]):
        s += np.tanh(x[j])
        t = t * np.float32(0.5) + np.exp(x[j])  # not `t op e`: left alone
    return s, t


def squared_error(a, b):
    s = np.float32(0.0)
    for i in range(a.shape[0]):
        d = a[i] - b[i]
        s += d * d
    return s


def _heavy_carried_loops(fn, *args) -> int:
    """Loops carrying a value whose body also computes an expanded exp/tanh."""
    module = parse_module(fn.kernel(*args).loop_ir)
    return sum(1 for op in module.walk() if op.name == "loop.for" and op.result_values
               and any(o.name == "arith.bitcast" for o in op.walk()))


def _carried_loops(fn, *args) -> int:
    module = parse_module(fn.kernel(*args).loop_ir)
    return sum(1 for op in module.walk() if op.name == "loop.for" and op.result_values)


def _bit_identical(py, *args) -> None:
    on = hybrid(py, sum_lanes=False)(*args)
    with passes_disabled(["distribute-reductions"]):
        off = hybrid(py, sum_lanes=False)(*args)
    for a, b in zip(np.atleast_1d(on), np.atleast_1d(off), strict=True):
        assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def test_softmax_terms_leave_the_sum_loop() -> None:
    x = rand((5, 37), "float32")
    fn = hybrid(softmax_scalar, sum_lanes=False)
    assert _heavy_carried_loops(fn, x) == 0
    check(fn, x, rtol=MATH + SUM(37))
    _bit_identical(softmax_scalar, x)


def test_terms_not_stored_go_to_a_buffer() -> None:
    x = rand((4, 29), "float32")
    fn = hybrid(logsumexp_rows, sum_lanes=False)
    assert _heavy_carried_loops(fn, x) == 0
    check(fn, x, rtol=MATH + SUM(29))
    _bit_identical(logsumexp_rows, x)
    check(fn, rand((3, 2), "float32"), rtol=MATH)  # zero-trip sum loops: an empty buffer


def test_only_a_op_e_chains_are_split() -> None:
    x = rand((41,), "float32")
    fn = hybrid(two_sums, sum_lanes=False)
    assert _heavy_carried_loops(fn, x) == 1
    check(fn, x, rtol=MATH + SUM(41))


def test_cheap_terms_stay_in_one_loop() -> None:
    a, b = rand((100,), "float32"), rand((100,), "float32", 1)
    fn = hybrid(squared_error, sum_lanes=False)
    assert _carried_loops(fn, a, b) == 1
    check(fn, a, b)


def test_a_per_row_scalar_read_does_not_copy_the_input() -> None:
    x = rand((80, 96), "float32")  # large enough for layout's copy rule
    text = hybrid(softmax_scalar, sum_lanes=False).kernel(x).loop_ir
    assert "_c = \"mem.alloc\"" not in text


def four_dots(a, b, c, d, e):
    s0 = np.float32(0.0)
    s1 = np.float32(0.0)
    s2 = np.float32(0.0)
    s3 = np.float32(0.0)
    for i in range(a.shape[0]):
        s0 += a[i] * b[i]
        s1 += a[i] * c[i]
        s2 += a[i] * d[i]
        s3 += a[i] * e[i]
    return s0, s1, s2, s3


def test_many_cheap_terms_stay_in_one_loop() -> None:
    """The cost that pays for the split is per term (a store and a load each): four
    products (13 ops together, 3-4 each) stay in their loop.  Counted over all terms,
    the 8 x 32 accumulators of the matmul's micro-kernel were split into 256 buffers of
    products (int32 65 x 65: 46 s of LLVM time)."""
    a, b, c, d, e = (rand((100,), "float32", s) for s in range(5))
    fn = hybrid(four_dots)
    assert _carried_loops(fn, a, b, c, d, e) == 1
    assert "terms" not in fn.kernel(a, b, c, d, e).loop_ir
    check(fn, a, b, c, d, e, rtol=SUM(100))
