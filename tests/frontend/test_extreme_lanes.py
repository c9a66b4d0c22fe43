"""``max``/``min`` and ``argmax``/``argmin`` of rows long enough to be searched in lanes
(``lower_group_acc``, ``lower_argreduce``): the same bits as the source-order search
(which ``-0.0``/``0.0`` and which NaN comes out included), the same indices as numpy,
and lanes really used (the loop IR), so that LLVM vectorizes the rows."""

from __future__ import annotations

import re

import numpy as np
import pytest
from diff import check, rand

from pyasc import hybrid
from pyasc.ir import parse_module
from pyasc.ir.ops.arith import first_wins_ties
from pyasc.ir.passes.lower_group_acc import LANES, ORDER_FREE_LANES
from pyasc.ir.types import ScalarType

FLOATS = ["float16", "float32", "float64"]
LENGTHS = [15, 16, 17, 33, 63, 64, 65, 129, 191, 1000]


@hybrid
def row_extremes(x):
    return np.max(x, axis=-1), np.min(x, axis=-1), np.argmax(x, axis=-1), np.argmin(x, axis=-1)


@hybrid
def whole_extremes(x):
    return np.max(x), np.min(x), np.argmax(x), np.argmin(x)


@hybrid
def column_argmax(x):
    return np.argmax(x, axis=0), np.argmin(x, axis=0)


@hybrid
def softmax_per_row(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        e = np.exp(x[i] - np.max(x[i]))
        out[i] = e / np.sum(e)
    return out


def _source_order(row: np.ndarray, is_max: bool) -> np.generic:
    """numpy's reduction rule applied element by element (the accumulator first)."""
    first = first_wins_ties(ScalarType({"float16": "f16"}.get(row.dtype.name, "f32")))
    acc = row.dtype.type(-np.inf if is_max else np.inf)
    for x in row:
        keep = (acc >= x if is_max else acc <= x) if first else (acc > x if is_max else acc < x)
        acc = acc if keep or np.isnan(acc) else x
    return acc


def _special_rows(n: int, dtype: str, seed: int) -> np.ndarray:
    """Rows with NaNs (two payloads), infinities, zeros of both signs, ties."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((10, n)).astype(dtype)
    x[0, rng.integers(0, n, 2)] = np.nan
    x[1, n // 3] = -np.nan  # a NaN with the sign bit set: its bits come out
    x[2] = np.where(rng.random(n) < 0.5, -0.0, 0.0)  # only zeros: the order decides
    x[3] = -np.abs(x[3])
    x[3, rng.integers(0, n, 3)] = np.where(rng.random(3) < 0.5, -0.0, 0.0)  # max is a zero
    x[4] = np.abs(x[4])
    x[4, rng.integers(0, n, 3)] = -0.0  # min is a zero
    x[5] = -np.inf
    x[6, rng.integers(0, n)] = np.inf
    x[7] = np.round(x[7])  # many ties
    x[8] = 1.0
    return x


def _bits(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v)
    return v.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[v.dtype.itemsize])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", LENGTHS)
def test_float_rows_have_the_bits_of_the_source_order(dtype: str, n: int) -> None:
    x = _special_rows(n, dtype, n)
    mx, mn, amax, amin = row_extremes(x)
    for r, row in enumerate(x):
        assert _bits(mx[r]) == _bits(_source_order(row, True)), (r, mx[r])
        assert _bits(mn[r]) == _bits(_source_order(row, False)), (r, mn[r])
    np.testing.assert_array_equal(amax, np.argmax(x, axis=-1))
    np.testing.assert_array_equal(amin, np.argmin(x, axis=-1))
    flat = whole_extremes(x)
    assert _bits(flat[0]) == _bits(_source_order(x.ravel(), True))
    assert _bits(flat[1]) == _bits(_source_order(x.ravel(), False))
    assert (flat[2], flat[3]) == (np.argmax(x), np.argmin(x))


@pytest.mark.parametrize("dtype", FLOATS)
def test_against_numpy_on_every_runner(dtype: str) -> None:
    x = rand((5, 300), dtype, seed=3)
    x[1, 7], x[1, 200], x[2, 150], x[3, 31] = np.nan, np.nan, np.inf, -np.inf
    check(row_extremes, x)
    check(whole_extremes, x)
    check(column_argmax, x)
    check(column_argmax, np.ascontiguousarray(x.T))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "uint64", "bool"])
def test_integer_rows(dtype: str) -> None:
    x = rand((4, 161), dtype, seed=5, low=-3, high=3)  # many ties
    x[2] = x[2, 0]
    check(row_extremes, x)
    check(whole_extremes, x[:, ::2])  # a strided array: the search in order


def test_softmax_per_row_keeps_the_lanes() -> None:
    x = rand((6, 1000), "float32", seed=1)
    x[2, 500] = np.nan
    check(softmax_per_row, x, rtol=1e-5)
    module = parse_module(softmax_per_row.kernel(x).loop_ir)
    assert _lane_updates(module, "arith.max"), "the row maximum is not laned"


def _lane_updates(module, name: str, width: int | None = None) -> list:
    """Stores of an ``name`` op's result into a lane buffer (of ``width`` elements, by
    default 16 or, for a row of ``max``/``min`` only, 64): lane updates."""
    widths = (LANES, ORDER_FREE_LANES) if width is None else (width,)
    return [op for op in module.walk() if op.name == "mem.store"
            and getattr(op.value, "op", None) is not None and op.value.op.name == name
            and op.dest.type.shape in [(w,) for w in widths]]


@pytest.mark.parametrize("n, width", [(63, 16), (64, 64), (1000, 64)])
def test_rows_of_extremes_only_take_several_vectors_of_lanes(n: int, width: int) -> None:
    """A row reduced by ``max``/``min`` alone (no sum fixing an order) is searched in 64
    lanes: four 512-bit accumulators instead of one loop-carried chain; rows shorter
    than 64 keep 16 lanes."""
    x = rand((3, n), "float32", seed=n)
    module = parse_module(row_extremes.kernel(x).loop_ir)
    assert _lane_updates(module, "arith.max", width) and _lane_updates(module, "arith.min", width)


def test_lanes_are_used() -> None:
    x = rand((4, 64), "float32")
    module = parse_module(row_extremes.kernel(x).loop_ir)
    assert _lane_updates(module, "arith.max") and _lane_updates(module, "arith.min")
    text = str(module)
    assert "lane_best" in text and "lane_idx" in text, text


@hybrid
def whole_sum_of_squares(x, y):
    return np.sum((x - y) ** 2)


@pytest.mark.parametrize("fn, args", [
    (row_extremes, (rand((4, 4096), "float32"),)),
    (whole_extremes, (rand((64, 512), "float32"),)),
    (whole_sum_of_squares, (rand((1 << 17,), "float32"), rand((1 << 17,), "float32", 2))),
], ids=["rows", "whole", "sum_of_squares"])
def test_lane_loops_are_whole_vectors_on_one_thread(fn, args) -> None:
    """A lane loop (``lanes = 16``) is never split over threads (one vector step per
    dispatch) and LLVM vectorizes it 16 wide instead of unrolling it into scalars that
    SLP re-packs in 4- and 2-wide pieces (``llvm.loop`` metadata)."""
    from pyasc.ir.passes.parallel_safe import splittable

    module = parse_module(fn.kernel(*args).loop_ir)
    lane_loops = [op for op in module.walk() if op.name == "loop.for"
                  and op.attributes.get("lanes") == 16]
    assert lane_loops and not any(splittable(op) for op in lane_loops)
    widths = {int(w) for w in re.findall(
        r"= (?:fadd|fsub|fmul|fcmp \w+)(?: \w+)* <(\d+) x float>", fn.llvm_ir(*args))}
    # 16 wide; 2-wide pieces may combine the lanes at the end, never 4-, 7- or 8-wide
    # pieces of the lane loop itself
    assert 16 in widths and not widths & {4, 7, 8}, widths
