"""Loops of window copies as one DMA kernel: ``CopyKernel``.

A top-level loop nest whose body only copies one strided window of a buffer into a
window of another (``dst[..., i, j] = src[..., i * dh : ... : sh, j * dw : ... : sw]``,
the im2col of ``pyasc.ops.conv2d``, patch extraction, tiling copies) would otherwise be a
scalar kernel moving every element with ``GetValue``/``SetValue``.  It is data movement:
each window is a strided box of GM elements, which the vector cores' MTE2/MTE3 move with
``DataCopyPad`` (GM -> UB -> GM, any byte length, gaps between blocks; reference
section 1.2), so no element passes through a scalar register.

What is taken (:func:`plan_copy_loop`): a ``loop.for`` nest with constant bounds and no
loop-carried values whose ops are index arithmetic, views (``mem.subview``,
``mem.transpose``, ``mem.reshape``, or their ``tensor`` forms on a tensor ``src``) of
two whole arrays ``src`` and ``dst`` (static, contiguous, distinct: a tensor, or one of
the two buffers allocated by the function, so they cannot alias), one ``mem.to_tensor``
of a ``src`` view and one ``mem.write`` of it into a ``dst`` view.  The
nest is run at compile time on index arrays (every iteration, at most ``MAX_ITERATIONS``):
each iteration's windows must be boxes with non-negative strides of one common shape and
the ``dst`` windows of all iterations disjoint (the kernel's blocks copy them in any
order).  The per-iteration offsets are a table in the kernel text; the box is split into
*runs* (contiguous in both buffers, else one element), *rows* of runs (one
``DataCopyPad`` of up to 4095 blocks with byte gaps) and outer dimensions, and the
(iteration, outer index) items are spread over the vector cores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pyasc.backend.ascendc.cores import VECTOR
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.tiles import ctype
from pyasc.ir.core import BlockArgument, Location, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.rewrite import constant_value
from pyasc.ir.semantics import eval_op
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType

MAX_ITERATIONS = 4096      # offset-table entries written into the kernel text
MAX_BLOCKS = 4095          # DataCopyPad blockCount
UB_SLOT_BYTES = 64 * 1024  # one of the two ping-pong UB buffers

_VIEWS = (mem.SubviewOp, mem.TransposeOp, mem.ReshapeOp, tensor.SliceOp, tensor.TransposeOp,
          tensor.ReshapeOp)


class NotACopyLoop(Exception):
    """The nest does something else than copying windows."""


@dataclass
class CopyKernel:
    """Windows of ``src`` copied into ``dst`` on the vector cores (module docstring)."""

    core: ClassVar[str] = VECTOR
    name: str
    loc: Location
    dtype: ScalarType
    src_size: int                  # elements of the buffers
    dst_size: int
    src_offsets: list[int]         # per iteration: the window's first element
    dst_offsets: list[int]
    outer: list[tuple[int, int, int]]   # (extent, src stride, dst stride), outermost first
    rows: int                      # runs per row
    src_row: int                   # element stride between the runs of a row
    dst_row: int
    run: int                       # elements per run (contiguous in both buffers)
    block_dim: int = 1

    @property
    def ctype(self) -> str:
        return ctype(self.dtype)

    @property
    def items(self) -> int:
        """(iteration, outer index) pairs: the units the blocks share."""
        return len(self.src_offsets) * math.prod(e for e, _, _ in self.outer)

    @property
    def elements(self) -> int:
        """Elements copied by one launch."""
        return self.items * self.rows * self.run

    @property
    def gm_bytes(self) -> int:
        """GM bytes one launch reads plus writes: each copied element once each way."""
        return 2 * self.elements * self.dtype.itemsize


@dataclass(frozen=True)
class CopyLoop:
    """A matched nest: its buffers and the kernel plan (without a name yet)."""

    src: Value
    dst: Value
    plan: CopyKernel


# ---------------------------------------------------------------- recognition
def _buffer(v: Value, fn: FuncOp) -> bool:
    """A whole static array: a tensor value (its own copy in GM), or a contiguous
    buffer the function allocates or takes."""
    t = v.type
    if isinstance(t, TensorType):
        return DYN not in t.shape
    base = isinstance(v, BlockArgument) and v.block is fn.entry or \
        isinstance(v, OpResult) and isinstance(v.op, mem.AllocOp)
    return base and isinstance(t, MemRefType) and t.is_contiguous and DYN not in t.shape


def _check_ops(nest: loop.ForOp) -> None:
    """Only loops, index arithmetic, views, one snapshot and one write."""
    writes = 0
    for op in nest.walk():
        if isinstance(op, loop.ForOp):
            if op.inits:
                raise NotACopyLoop("loop-carried values")
        elif isinstance(op, mem.WriteOp):
            writes += 1
        elif type(op).__module__ in (arith.__name__, m.__name__):
            if not all(isinstance(v.type, ScalarType)
                       for v in [*op.operand_values, *op.result_values]):
                raise NotACopyLoop("array arithmetic")
        elif not isinstance(op, (*_VIEWS, mem.ToTensorOp, loop.YieldOp)):
            raise NotACopyLoop(op.name)
    if writes != 1:
        raise NotACopyLoop("not one window copy")


def _outer_env(nest: loop.ForOp, fn: FuncOp) -> dict[Value, object]:
    """Values the nest uses from outside: constants, and the buffers as index arrays."""
    env: dict[Value, object] = {}
    inside = {r for op in nest.walk() for r in op.result_values}
    inside |= {a for op in nest.walk() for reg in op.region_list for b in reg.blocks
               for a in b.args}
    for op in nest.walk():
        for v in op.operand_values:
            if v in inside or v in env:
                continue
            c = constant_value(v)
            if c is not None and isinstance(v.type, ScalarType):
                env[v] = c
            elif _buffer(v, fn):
                t = v.type
                assert isinstance(t, MemRefType | TensorType)
                env[v] = np.arange(math.prod(t.shape), dtype=np.int64).reshape(t.shape)
            else:
                raise NotACopyLoop("a value computed outside the nest")
    return env


def _run(ops: list[Operation], env: dict[Value, object], out: list, budget: list[int]) -> None:
    """Run ``ops`` on index arrays; each ``mem.write`` appends (src, dst) index arrays."""
    for op in ops:
        if isinstance(op, loop.ForOp):
            lo, hi, st = (int(env[v]) for v in (op.lower, op.upper, op.step))  # type: ignore[call-overload]
            for i in range(lo, hi, st):
                budget[0] -= 1
                if budget[0] < 0:
                    raise NotACopyLoop("too many iterations")
                env[op.induction_var] = np.int64(i)
                _run(list(op.body.blocks[0].ops), env, out, budget)
        elif isinstance(op, mem.WriteOp):
            value, dest = (env[v] for v in op.operand_values)
            out.append((np.broadcast_to(value, np.shape(dest)), dest, op))
        elif not isinstance(op, loop.YieldOp):
            try:
                results = eval_op(op, [env[v] for v in op.operand_values])
            except (IndexError, ValueError, ArithmeticError, NotImplementedError) as exc:
                raise NotACopyLoop(str(exc)) from None  # the scalar kernel reports it
            env.update(zip(op.result_values, results, strict=True))


def _box(idx: np.ndarray) -> tuple[int, tuple[int, ...]]:
    """(first element, strides) of an index array that is a strided box."""
    if idx.size == 0:
        raise NotACopyLoop("an empty window")
    first = int(idx.flat[0])
    strides = tuple(int(idx[(0,) * a + (1,) + (0,) * (idx.ndim - a - 1)]) - first
                    if d > 1 else 0 for a, d in enumerate(idx.shape))
    want = np.full(idx.shape, first, dtype=np.int64)
    for a, (d, s) in enumerate(zip(idx.shape, strides, strict=True)):
        want += (np.arange(d, dtype=np.int64) * s).reshape((-1,) + (1,) * (idx.ndim - a - 1))
    if not np.array_equal(want, idx) or min(strides, default=0) < 0:
        raise NotACopyLoop("a window that is not a box with non-negative strides")
    return first, strides


def _merged(shape: tuple[int, ...], s: tuple[int, ...],
            t: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(extent, src stride, dst stride) per axis, size-1 axes dropped and neighbours that
    are one axis in both buffers merged."""
    axes: list[tuple[int, int, int]] = []
    for d, a, b in zip(shape, s, t, strict=True):
        if d == 1:
            continue
        if axes and axes[-1][1] == a * d and axes[-1][2] == b * d:
            axes[-1] = (axes[-1][0] * d, a, b)
        else:
            axes.append((d, a, b))
    return axes


def plan_copy_loop(nest: loop.ForOp, fn: FuncOp, soc: SoC) -> CopyLoop:
    """The copy kernel of ``nest`` (module docstring); raises :class:`NotACopyLoop`."""
    _check_ops(nest)
    env = _outer_env(nest, fn)
    records: list = []
    _run([nest], env, records, [MAX_ITERATIONS])
    if not records:
        raise NotACopyLoop("no copy runs")
    write = records[0][2]
    src = _base(write.operand_values[0])
    dst = _base(write.dest)
    fresh = isinstance(src.type, TensorType) or any(isinstance(b, OpResult) for b in (src, dst))
    if src is dst or not (_buffer(src, fn) and _buffer(dst, fn)) or not fresh:
        raise NotACopyLoop("source and destination may be the same memory")
    t = dst.type
    assert isinstance(t, MemRefType) and isinstance(src.type, MemRefType | TensorType)
    if src.type.element != t.element or not soc.supports("copy", t.element.name):
        raise NotACopyLoop("a converting copy")
    return CopyLoop(src, dst, _geometry(records, nest.loc, t, src.type))


def _base(v: Value) -> Value:
    while isinstance(v, OpResult) and isinstance(v.op, (*_VIEWS, mem.ToTensorOp)):
        v = v.op.operand_values[0]
    return v


def _geometry(records: list, loc: Location, dst: MemRefType,
              src: MemRefType | TensorType) -> CopyKernel:
    marks = np.zeros(math.prod(dst.shape), dtype=np.bool_)
    shape, geometry = records[0][1].shape, None
    s_offs, d_offs = [], []
    for s_idx, d_idx, _ in records:
        (s0, s), (d0, d) = _box(s_idx), _box(d_idx)
        if d_idx.shape != shape or geometry not in (None, (s, d)) or \
                any(b == 0 and n > 1 for n, b in zip(shape, d, strict=True)):
            raise NotACopyLoop("windows of different shapes or overlapping writes")
        geometry = (s, d)
        if marks[d_idx].any():
            raise NotACopyLoop("iterations write the same elements")
        marks[d_idx] = True
        s_offs.append(s0)
        d_offs.append(d0)
    assert geometry is not None
    axes = _merged(shape, *geometry)
    run = 1
    if axes and axes[-1][1] == 1 and axes[-1][2] == 1:
        run = axes.pop()[0]
    rows, s_row, d_row = axes.pop() if axes else (1, 0, 0)
    return CopyKernel("", loc, dst.element, math.prod(src.shape), math.prod(dst.shape),
                      s_offs, d_offs, axes, rows, s_row, d_row, run)


def find_copy_loops(fn: FuncOp, soc: SoC) -> dict[Operation, CopyLoop]:
    """The top-level loop nests of ``fn`` that are window copies."""
    found: dict[Operation, CopyLoop] = {}
    for op in fn.entry.ops:
        if isinstance(op, loop.ForOp):
            try:
                found[op] = plan_copy_loop(op, fn, soc)
            except NotACopyLoop:
                continue
    return found


__all__ = ["CopyKernel", "CopyLoop", "NotACopyLoop", "find_copy_loops", "plan_copy_loop"]
