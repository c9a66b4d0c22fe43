"""Constant tables: module-level and closure tuples and lists of numbers indexed by
run-time values (``frontend/tables.py``), on the IR, the CPU and the AscendC simulator."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, compare, rand

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")


def check(fn, *args, runners=RUNNERS):
    """``diff.check`` on every runner, the simulator included (none may be skipped)."""
    expected, skipped = compare(fn, *args, runners=runners)
    assert not skipped, skipped
    return expected


GAUSS3 = ((1, 2, 1), (2, 4, 2), (1, 2, 1))
COEF = [0.5, 0.25, -0.125]
SCALES32 = (np.float32(0.5), np.float32(2.0), np.float32(-1.5))
FLAGS = (True, False, True, True)
MIXED = (1, 0.5)
RAGGED = ((1, 2), (3,))


@hybrid
def blur(img):
    h, w = img.shape
    out = np.zeros((h - 2, w - 2), dtype=img.dtype)
    for i in range(h - 2):
        for j in range(w - 2):
            acc = img[0, 0] * 0
            for di in range(3):
                for dj in range(3):
                    acc += GAUSS3[di][dj] * img[i + di, j + dj]
            out[i, j] = acc / 16
    return out


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_tuple_of_tuples_in_a_loop(dtype):
    # Python ints of the table are weak: the image's dtype is kept (numpy's
    # np.array(GAUSS3) would be int64 and promote float16/int32 data); the device has
    # no float64 for int32 / 16
    out = check(blur, rand((5, 6), dtype),
                runners=DEFAULT_RUNNERS if dtype == "int32" else RUNNERS)
    assert out.dtype == np.dtype(dtype)


def test_non_contiguous_input():
    check(blur, rand((9, 8), "float32")[::2, ::-1])


@hybrid
def poly(x):
    s = np.zeros_like(x)
    for k in range(len(COEF)):  # Horner's scheme
        s = s * x + COEF[k]
    return s


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_list_of_floats(dtype):
    # the float64 table is converted to the computing dtype when compiled, so the
    # device (which has no float64) runs it too
    check(poly, rand((8,), dtype))


def make_closure(table):
    @hybrid
    def pick(x, k):
        return x * table[k] + table[-1 - k]
    return pick


@pytest.mark.parametrize("k", [0, 2, -1])
def test_closure_table_and_negative_index(k):
    check(make_closure((3, 5, 7)), rand((4,), "float32"), k)


@hybrid
def out_of_range(x, k):
    return x * COEF[k]


def test_index_out_of_range_is_an_index_error():
    check(out_of_range, rand((4,), "float32"), 3)
    with pytest.raises(IndexError, match="out of bounds"):
        out_of_range(rand((4,), "float32"), -4)


@hybrid
def numpy_scalars(x, k):
    return x * SCALES32[k], SCALES32[k]


def test_numpy_scalar_items_keep_their_dtype():
    # np.float32 items are numpy scalars (strong): float16 data gives float32
    out = check(numpy_scalars, rand((4,), "float16"), 1)
    assert out[0].dtype == np.float32


@hybrid
def flags(x):
    out = np.zeros_like(x)
    n = 0
    for i in range(4):
        if FLAGS[i]:
            out[i] = x[i]
            n += 1
    return out, n


def test_table_of_bools():
    check(flags, rand((4,), "float32"))


@hybrid
def rows(x, i):
    row = GAUSS3[i]
    total = 0
    for j in range(len(row)):
        total += row[j]
    return x * total


def test_row_read_then_indexed():
    check(rows, rand((3,), "float32"), 1)


@hybrid
def mixed(x, k):
    return x * MIXED[k]


@hybrid
def ragged(x, k):
    return x * RAGGED[k][0]


@hybrid
def tuple_of_arrays(x):
    parts = (x, x + 1)
    return parts[int(x[0] > 0)]  # an index from the data


def test_mixed_kinds_ragged_rows_and_tuples_of_arrays_are_coded_errors():
    x = rand((3,), "float32")
    with pytest.raises(errors.TypeMismatchError, match="mixes float and int"):
        mixed.ir(x, 1)
    with pytest.raises(errors.ShapeInferenceError, match="rectangular"):
        ragged.ir(x, 1)


BIG = tuple(range(70000))


@hybrid
def big_table(x, k):
    return x * BIG[k]


def test_a_table_too_large_to_embed_is_indexed_by_compile_time_values():
    # as before tables: the index argument is specialized by value (no huge constant)
    check(big_table, rand((3,), "float32"), 5, runners=("ir",))
    assert "dense<" not in big_table.ir(rand((3,), "float32"), 5, optimized=False)


def test_a_tuple_index_that_must_be_known_has_a_syntax_error_title():
    # not "unsupported numpy call": the index into a tuple of arrays is Python syntax
    with pytest.raises(errors.UnsupportedSyntaxError) as info:
        tuple_of_arrays.ir(rand((3,), "float32"))
    assert "an index into a tuple must be known at compile time" in str(info.value)
    assert "unsupported numpy call" not in str(info.value)


def test_a_module_list_is_keyed_by_its_contents():
    # a list is mutable: its contents when compiled are what the kernel embeds, and
    # what the cache key covers (as for np.array globals)
    from test_cache_key import define, key_of

    ns = define("@hybrid\ndef f(x, k):\n    return x * TABLE[k]\n", TABLE=[1.0, 2.0])
    x = np.ones(3, np.float32)
    before = key_of(ns["f"], x, 1)
    ns["TABLE"][1] = 3.0
    assert key_of(ns["f"], x, 1) != before
    ns["TABLE"][1] = 2.0
    assert key_of(ns["f"], x, 1) == before
