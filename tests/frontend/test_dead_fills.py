"""``dead-fills``: the fill of a new array is dropped when the function overwrites every
element before reading any, and kept otherwise (results unchanged either way: every
case runs on every runner, the CPU one with and without the pass)."""

from __future__ import annotations

import numpy as np
import pytest
from diff import check, rand
from loop_kernels import conv_direct

from pyasc import hybrid
from pyasc.ir import parse_module
from pyasc.ir.passes import run_pipeline


@hybrid
def rows_of_empty_like(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
    return out


@hybrid
def columns_of_zeros(x):
    out = np.zeros(x.shape, x.dtype)
    for j in range(x.shape[1]):
        out[:, j] = x[:, j] + 1.0
    return out


@hybrid
def scalar_loops_of_empty(x):
    n, m = x.shape
    out = np.empty((n, m), np.float32)
    for i in range(n):
        for j in range(m):
            out[i, j] = x[i, j] - 1.0
    return out


@hybrid
def whole_of_empty(x):
    out = np.empty(x.shape, x.dtype)
    out[...] = x * x
    return out


@hybrid
def layernorm_rows(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        mu = np.mean(x[i])
        out[i] = (x[i] - mu) / np.sqrt(np.mean((x[i] - mu) ** 2) + 1e-5)
    return out


@hybrid
def all_but_last_row(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0] - 1):
        out[i] = x[i]
    return out


@hybrid
def from_second_row(x):
    out = np.zeros_like(x)
    out[1:] = x[1:]
    return out


@hybrid
def every_other_row(x):
    out = np.zeros_like(x)
    for i in range(0, x.shape[0], 2):
        out[i] = x[i]
    return out


@hybrid
def strided_slice(x):
    out = np.zeros_like(x)
    out[::2] = x[::2]
    return out


@hybrid
def conditional_rows(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i, 0] > 0:
            out[i] = x[i]
    return out


@hybrid
def rows_until_break(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i, 0] > 1.0:
            break
        out[i] = x[i]
    return out


@hybrid
def reads_before_writing(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = out[i - 1] + x[i]
    return out


@hybrid
def shorter_inner_loop(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1] - 1):
            out[i, j] = x[i, j]
    return out


@hybrid
def repeated_whole_write(x, reps):
    out = np.zeros_like(x)
    for _ in range(reps):
        out[:] = x
    return out


@hybrid
def diagonal_only(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i, i] = x[i, i]
    return out


@hybrid
def through_transpose(x):
    out = np.zeros_like(x)
    t = out.T
    for j in range(x.shape[1] - 1):
        t[j] = x[:, j]
    return out


@hybrid
def row_written_then_rescaled(x):
    n, m = x.shape
    out = np.empty_like(x)
    for i in range(n):
        s = np.float32(0.0)
        for j in range(m):
            out[i, j] = x[i, j] * x[i, j]
            s += out[i, j]
        for j in range(m):
            out[i, j] = out[i, j] / (s + 1)
    return out


@hybrid
def row_written_then_next_row_read(x):
    n, m = x.shape
    out = np.zeros_like(x)
    for i in range(n - 1):
        for j in range(m):
            out[i, j] = x[i, j]
        out[i, 0] = out[i + 1, 0] + 1
    for j in range(m):
        out[n - 1, j] = x[n - 1, j]
    return out


@hybrid
def row_read_before_written(x):
    n, m = x.shape
    out = np.zeros_like(x)
    for i in range(n):
        s = out[i, 0]
        for j in range(m):
            out[i, j] = x[i, j] + s
    return out


FULL = [rows_of_empty_like, columns_of_zeros, scalar_loops_of_empty, whole_of_empty,
        layernorm_rows, row_written_then_rescaled]
PARTIAL = [all_but_last_row, from_second_row, every_other_row, strided_slice,
           conditional_rows, rows_until_break, reads_before_writing, shorter_inner_loop,
           diagonal_only, through_transpose, row_written_then_next_row_read,
           row_read_before_written]
READ_ZEROS = (reads_before_writing, row_written_then_next_row_read, row_read_before_written)


def _fills_left(fn, *args) -> int:
    module = parse_module(fn.ir(*args))
    before = sum(op.name == "mem.fill" for op in module.walk())
    run_pipeline(module, ["dead-fills"])
    after = sum(op.name == "mem.fill" for op in module.walk())
    assert before >= 1
    return after


@pytest.mark.parametrize("fn", FULL, ids=lambda f: f.__name__)
def test_fill_of_an_array_written_whole_is_dropped(fn) -> None:
    x = rand((6, 6), "float32")
    assert _fills_left(fn, x) == 0
    check(fn, x, rtol=1e-5)


@pytest.mark.parametrize("fn", PARTIAL, ids=lambda f: f.__name__)
def test_fill_of_an_array_written_in_part_stays(fn) -> None:
    x = rand((6, 6), "float32", seed=4)
    x[3, 0] = 2.0  # the break, the condition
    assert _fills_left(fn, x) == 1
    if fn not in READ_ZEROS:  # the zeros left show in the result
        assert np.count_nonzero(fn(x) == 0) > 0
    check(fn, x)


@pytest.mark.parametrize("reps", [0, 1, 2])
def test_a_loop_that_may_not_run_keeps_the_fill(reps: int) -> None:
    x = rand((4, 5), "float32")
    assert _fills_left(repeated_whole_write, x, reps) == 1
    check(repeated_whole_write, x, reps)


def test_a_one_trip_loop_folded_away_still_covers_its_axis() -> None:
    x, w = rand((1, 3, 9, 8), "float32"), rand((4, 3, 3, 3), "float32", 1)
    assert _fills_left(conv_direct, x, w) == 0
    check(conv_direct, x, w, rtol=1e-5)
    x2 = rand((2, 3, 9, 8), "float32", 2)
    assert _fills_left(conv_direct, x2, w) == 0
    check(conv_direct, x2, w, rtol=1e-5)


@hybrid
def shifted_rows(x, k):
    out = np.empty(x.shape[0] - 2, x.dtype)
    for i in range(out.shape[0]):
        out[i] = x[i + k] * 2  # an affine check: the loop is versioned
    return out


@hybrid
def if_else_rows(x, flag):
    out = np.empty_like(x)
    if flag > 0:
        for i in range(x.shape[0]):
            out[i] = x[i]
    else:
        for i in range(x.shape[0]):
            out[i] = -x[i]
    return out


@hybrid
def if_without_else(x, flag):
    out = np.zeros_like(x)
    if flag > 0:
        for i in range(x.shape[0]):
            out[i] = x[i]
    return out


def test_both_branches_of_a_versioned_loop_or_an_if_else_cover() -> None:
    x = rand((10,), "float32")
    assert _fills_left(shifted_rows, x, 1) == 0
    for k in (0, 2):
        check(shifted_rows, x, k)
    y = rand((4, 5), "float32")
    assert _fills_left(if_else_rows, y, 1) == 0
    for flag in (1, -1):
        check(if_else_rows, y, flag)
    assert _fills_left(if_without_else, y, 1) == 1
    for flag in (1, -1):
        check(if_without_else, y, flag)
