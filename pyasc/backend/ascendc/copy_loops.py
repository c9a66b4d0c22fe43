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
nest is run at compile time on *boxes* (offset, shape, strides: no element is touched;
every iteration, at most ``MAX_ITERATIONS``): each iteration's windows must be boxes
with non-negative strides of one common shape and the ``dst`` windows of all iterations
disjoint (the kernel's blocks copy them in any order; checked on their runs of
contiguous elements, at most ``MAX_RUNS``).  The per-iteration offsets are a table in
the kernel text; the box is split into *runs* (contiguous in both buffers, else one
element), *rows* of runs (one ``DataCopyPad`` of up to 4095 blocks with byte gaps) and
outer dimensions, and the
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
MAX_RUNS = 1 << 22         # destination runs enumerated by the overlap check
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


@dataclass(frozen=True)
class Box:
    """A strided window of an array: element ``offset + sum(k[a] * strides[a])`` of its
    flat storage for ``0 <= k[a] < shape[a]``."""

    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @classmethod
    def whole(cls, shape: tuple[int, ...]) -> Box:
        strides = tuple(math.prod(shape[a + 1:]) for a in range(len(shape)))
        return cls(0, tuple(shape), strides)

    def sliced(self, op: Operation, args: list[int]) -> Box:
        """The window of a ``mem.subview`` / ``tensor.slice`` of this one."""
        r = len(self.shape)
        offs, sizes, steps = args[:r], args[r:2 * r], args[2 * r:]
        drop = op.attributes.get("drop", ())
        offset, shape, strides = self.offset, [], []
        for a, (o, n, st) in enumerate(zip(offs, sizes, steps, strict=True)):
            if n < 1 or not (0 <= o < self.shape[a] and 0 <= o + (n - 1) * st < self.shape[a]):
                raise NotACopyLoop("an empty or out-of-bounds window")  # scalar code reports it
            offset += o * self.strides[a]
            if a not in drop:
                shape.append(n)
                strides.append(st * self.strides[a])
        return Box(offset, tuple(shape), tuple(strides))

    def transposed(self, perm: tuple[int, ...]) -> Box:
        return Box(self.offset, tuple(self.shape[p] for p in perm),
                   tuple(self.strides[p] for p in perm))

    def reshaped(self, shape: tuple[int, ...]) -> Box:
        """A reshape of a C-contiguous window (any other is not one box)."""
        if DYN in shape or Box.whole(self.shape).strides != self.strides:
            raise NotACopyLoop("a reshape of a strided window")
        return Box(self.offset, tuple(shape), Box.whole(shape).strides)


def _outer_env(nest: loop.ForOp, fn: FuncOp) -> dict[Value, object]:
    """Values the nest uses from outside: constants, and whole arrays as boxes."""
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
                env[v] = Box.whole(t.shape)
            else:
                raise NotACopyLoop("a value computed outside the nest")
    return env


def _view(op: Operation, env: dict[Value, object]) -> Box:
    box = env[op.operand_values[0]]
    assert isinstance(box, Box)
    if isinstance(op, mem.SubviewOp | tensor.SliceOp):
        return box.sliced(op, [int(env[v]) for v in op.operand_values[1:]])  # type: ignore[call-overload]
    if isinstance(op, mem.TransposeOp | tensor.TransposeOp):
        return box.transposed(op.attributes["perm"])
    if isinstance(op, mem.ReshapeOp | tensor.ReshapeOp):
        t = op.result.type
        assert isinstance(t, MemRefType | TensorType)
        return box.reshaped(t.shape)
    return box   # mem.to_tensor: the same elements


def _run(ops: list[Operation], env: dict[Value, object], out: list, budget: list[int]) -> None:
    """Run ``ops`` on boxes; each ``mem.write`` appends its (src, dst) boxes."""
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
            assert isinstance(value, Box) and isinstance(dest, Box)
            if value.shape != dest.shape:
                raise NotACopyLoop("a broadcasting write")
            out.append((value, dest, op))
        elif isinstance(op, (*_VIEWS, mem.ToTensorOp)):
            env[op.result] = _view(op, env)
        elif not isinstance(op, loop.YieldOp):
            try:
                results = eval_op(op, [env[v] for v in op.operand_values])
            except (IndexError, ValueError, ArithmeticError, NotImplementedError) as exc:
                raise NotACopyLoop(str(exc)) from None  # the scalar kernel reports it
            env.update(zip(op.result_values, results, strict=True))


def _disjoint(boxes: list[Box]) -> bool:
    """True if no element is in two of ``boxes`` (or twice in one): their runs of
    contiguous elements, enumerated (at most ``MAX_RUNS``), never overlap."""
    shape, strides = boxes[0].shape, boxes[0].strides
    axes = [(d, t) for d, t in zip(shape, strides, strict=True) if d > 1]
    run = 1
    while axes and axes[-1][1] == run:   # the trailing axes contiguous in memory
        run *= axes.pop()[0]
    starts = np.array([b.offset for b in boxes], dtype=np.int64)
    if len(starts) * math.prod(d for d, _ in axes) > MAX_RUNS:
        return False
    for d, t in axes:
        starts = (starts[:, None] + np.arange(d, dtype=np.int64) * t).ravel()
    starts.sort()
    return bool(np.all(np.diff(starts) >= run))


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
    """The kernel of the (src, dst) boxes of every iteration: one shape and one pair of
    strides (non-negative) for all, disjoint destinations."""
    first_s, first_d = records[0][0], records[0][1]
    for s_box, d_box, _ in records:
        if (s_box.shape, s_box.strides, d_box.strides) != \
                (first_s.shape, first_s.strides, first_d.strides):
            raise NotACopyLoop("windows of different shapes or strides")
    if min((*first_s.strides, *first_d.strides), default=0) < 0:
        raise NotACopyLoop("a window read or written backwards")
    if not _disjoint([d for _, d, _ in records]):
        raise NotACopyLoop("iterations write the same elements")
    axes = _merged(first_s.shape, first_s.strides, first_d.strides)
    run = 1
    if axes and axes[-1][1] == 1 and axes[-1][2] == 1:
        run = axes.pop()[0]
    rows, s_row, d_row = axes.pop() if axes else (1, 0, 0)
    return CopyKernel("", loc, dst.element, math.prod(src.shape), math.prod(dst.shape),
                      [s.offset for s, _, _ in records], [d.offset for _, d, _ in records],
                      axes, rows, s_row, d_row, run)


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
