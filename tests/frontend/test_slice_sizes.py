"""Sizes of slices over run-time extents (``slicing.slice_params``).

Each slice's offset and size are built as IR over a run-time extent ``d`` and evaluated
with the reference semantics for ``d = 0..12``: they must be numpy's (Python's
``slice.indices``) for every bound pair in ``-6..6`` and ``None``, step 1, 2, -1.  Slices
of equal length (``x[:-2]``, ``x[1:-1]``, ``x[2:]``) must get one canonical size
expression, which is what lets ``stencil-windows`` see shifted views as one output domain
under ``dynamic_shape``.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pyasc.frontend import indexmath as im
from pyasc.frontend.emit import Emitter
from pyasc.frontend.slicing import slice_params
from pyasc.frontend.values import Scalar
from pyasc.ir.builder import Builder
from pyasc.ir.core import Block, OpResult, Value
from pyasc.ir.ops import arith
from pyasc.ir.semantics import eval_op
from pyasc.ir.types import index

BOUNDS = [None, *range(-6, 7)]


def _build(sl: slice) -> tuple[Block, object, object]:
    """A block of one ``index`` argument (the extent) computing ``sl``'s offset, size."""
    block = Block([index])
    em = Emitter(Builder.at_end(block), {})
    lw = SimpleNamespace(em=em, static=lambda v, what: v,
                         unit=SimpleNamespace(options={}))
    d = Scalar(block.args[0], weak=True, lo=0)
    o, n, _, _ = slice_params(lw, sl, d)
    return block, o, n


def _evaluate(block: Block, dims: object, d: int) -> list[int]:
    env: dict[Value, object] = {block.args[0]: d}
    for op in block.ops:
        for r, v in zip(op.result_values, eval_op(op, [env[x] for x in op.operand_values]),
                        strict=True):
            env[r] = v
    return [x if isinstance(x, int) else int(env[x.value]) for x in dims]  # type: ignore[union-attr, attr-defined]


def _expr(v: object) -> object:
    """A structural form of an index value (what ``stencil-windows`` compares)."""
    if isinstance(v, int):
        return v
    value = v.value if isinstance(v, Scalar) else v
    if not isinstance(value, OpResult):
        return "d"
    op = value.op
    if isinstance(op, arith.ConstantOp):
        return int(op.attributes["value"])  # type: ignore[arg-type]
    return (op.name, *(_expr(x) for x in op.operand_values))


@pytest.mark.parametrize("step", [1, 2, -1])
def test_slice_of_a_runtime_extent_is_numpys(step: int) -> None:
    for start in BOUNDS:
        for stop in BOUNDS:
            sl = slice(start, stop, step)
            block, o, n = _build(sl)
            for d in range(13):
                got_o, got_n = _evaluate(block, [o, n], d)
                want = range(*sl.indices(d))
                assert got_n == len(want), (sl, d)
                if got_n:
                    assert got_o == want[0], (sl, d)


@pytest.mark.parametrize("group", [
    [slice(None, -2), slice(1, -1), slice(2, None)],
    [slice(None, -1), slice(1, None)],
    [slice(-3, -1), slice(1, 3)],
    [slice(-2, None), slice(0, 2)],
])
def test_equal_lengths_have_one_size_expression(group: list[slice]) -> None:
    sizes = {repr(_expr(_build(sl)[2])) for sl in group}
    assert len(sizes) == 1, sizes


def test_a_slice_to_the_end_has_no_clamp_left() -> None:
    # x[1:] is max(d - 1, 0): one max, not max(0, d - min(1, d))
    _, _, n = _build(slice(1, None))
    assert _expr(n) == ("arith.max", ("arith.add", "d", -1), 0)


def _build_affine(start_k: int | None, stop_k: int | None) -> tuple[Block, object, object]:
    """``x[h + start_k : h + stop_k]`` with ``h = x.shape[0]`` (None: that bound is 0/end)."""
    block = Block([index])
    em = Emitter(Builder.at_end(block), {})
    lw = SimpleNamespace(em=em, static=lambda v, what: v,
                         unit=SimpleNamespace(options={}))
    d = Scalar(block.args[0], weak=True, lo=0)
    start = None if start_k is None else im.add(em, d, start_k)
    stop = None if stop_k is None else im.add(em, d, stop_k)
    o, n, _, _ = slice_params(lw, slice(start, stop), d)
    return block, o, n


def test_bounds_of_the_extent_itself_are_numpys_and_canonical() -> None:
    # x[h - 3:], x[:h - 2], x[h - 5:h - 1] ...: numpy wraps h - k when negative
    for start_k in [None, *range(-7, 3)]:
        for stop_k in [None, *range(-7, 3)]:
            block, o, n = _build_affine(start_k, stop_k)
            for d in range(16):
                start = None if start_k is None else d + start_k
                stop = None if stop_k is None else d + stop_k
                want = range(*slice(start, stop).indices(d))
                got_o, got_n = _evaluate(block, [o, n], d)
                assert got_n == len(want), (start_k, stop_k, d)
                if got_n:
                    assert got_o == want[0], (start_k, stop_k, d)
    # x[0:h - 2] and x[:-2] are one length
    assert repr(_expr(_build_affine(None, -2)[2])) == repr(_expr(_build(slice(None, -2))[2]))
