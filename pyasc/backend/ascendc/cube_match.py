"""Which matmuls run on the cube unit, and what they read: ``ascend.cube_matmul``.

Before kernels are formed, every top-level ``tensor.matmul`` the cube takes (a cube
operand dtype of ``soc.cube``, rank >= 1 with a non-scalar result; static shapes, or
run-time ones, whose limits the host checks per call: ``cube_dynamic``) is replaced by
:class:`CubeMatmulOp`, whose operands are what the cube kernel reads:

* **transposed views are looked through**: an operand ``x.T`` / ``np.swapaxes(x, -1, -2)``
  (a host ``tensor.transpose`` or ``mem.transpose`` of the last two axes, before or after
  a snapshot) becomes ``x`` with ``trans_a`` / ``trans_b`` set, so no transposing copy is
  made on the host; the kernel picks the load path of that layout (``emit_cube``);
* **widening casts are looked through** when both operands widen from the same cube
  dtype to its L0C accumulator type: ``a.astype(np.float32) @ b.astype(np.float32)``
  with float16 (bfloat16) ``a``, ``b`` is one float16 (bfloat16) cube matmul with a
  float32 result, ``a.astype(np.int32) @ b.astype(np.int32)`` with int8 operands one int8
  cube matmul with an int32 result, both exact (the L0C sums are float32/int32);
* **int8 @ int8**: numpy's result is int8, wrapping.  Fixpipe has no wrapping
  int32 -> int8 conversion (``REQ8`` requantizes and saturates), so the cube result is
  int32 (exact, and exact modulo 2**32 past int32's range, which keeps the low 8 bits
  right) followed by an ordinary ``arith.cast`` to int8, numpy's ``astype``; it runs as
  the vector or scalar kernel the cast gets.

Casts and views that nothing else uses are then dead and erased.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pyasc.backend.ascendc.soc import SoC
from pyasc.ir.core import Operation, OpResult, Value, attr
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.ops.common import require
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.ops.tensor import matmul_shape
from pyasc.ir.semantics import as_type, register_evaluator
from pyasc.ir.types import DYN, SCALAR_TYPES, MemRefType, TensorType

INT32_MAX = 2**31 - 1

# (operand dtype, result dtype) -> Fixpipe quantPre from the fp32/int32 L0C: the results
# a cube kernel writes itself (reference section 6.1; int32 -> int8 only requantizes)
QUANT: dict[tuple[str, str], str] = {
    ("f16", "f16"): "F322F16", ("f16", "f32"): "NoQuant",
    ("bf16", "bf16"): "F322BF16", ("bf16", "f32"): "NoQuant",
    ("f32", "f32"): "NoQuant", ("i8", "i32"): "NoQuant",
}


class CubeMatmulOp(Operation):
    """``lhs @ rhs`` on the cube unit.  ``trans_a``: ``lhs`` holds A with its last two
    axes swapped (``(..., K, M)``); ``trans_b`` likewise for B (``(..., N, K)``).  The
    result is numpy's matmul of the logical operands, of the operands' element type or
    of their L0C accumulator type."""

    name = "ascend.cube_matmul"
    operands = ("lhs", "rhs")
    results = ("result",)
    attrs = {"trans_a": attr(bool), "trans_b": attr(bool)}
    traits = frozenset({"pure"})

    def logical_shapes(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The shapes of A and B as numpy's matmul sees them."""
        a, b = self.lhs.type, self.rhs.type
        assert isinstance(a, TensorType) and isinstance(b, TensorType)
        return (_swap(a.shape, self.attributes["trans_a"]),
                _swap(b.shape, self.attributes["trans_b"]))

    def verify_op(self) -> None:
        a, b, r = self.lhs.type, self.rhs.type, self.result.type
        require(isinstance(a, TensorType) and isinstance(b, TensorType)
                and isinstance(r, TensorType), "cube_matmul takes and gives tensors")
        assert isinstance(a, TensorType) and isinstance(b, TensorType)
        assert isinstance(r, TensorType)
        require(a.element == b.element, "cube_matmul operands of one element type")
        la, lb = self.logical_shapes()
        require(matmul_shape(la, lb) == r.shape, f"cube_matmul of {la} and {lb} is not {r}")


def _swap(shape: tuple[int, ...], swapped: bool) -> tuple[int, ...]:
    return (*shape[:-2], shape[-1], shape[-2]) if swapped and len(shape) >= 2 else shape


def _evaluate(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Reference semantics: numpy's matmul of the logical operands in the result type
    (exact for the widened forms: the operands convert to it without rounding)."""
    t = op.result.type
    assert isinstance(t, TensorType)
    la, lb = (np.swapaxes(x, -1, -2) if op.attributes[f] and x.ndim >= 2 else x
              for x, f in ((a, "trans_a"), (b, "trans_b")))
    dtype = t.element.to_numpy()
    return as_type(np.matmul(la.astype(dtype), lb.astype(dtype)), t)


register_evaluator(CubeMatmulOp, _evaluate)


# ---------------------------------------------------------------- looking through
@dataclass(frozen=True)
class Source:
    """What a matmul operand reads: ``value`` (a tensor, or a memref still to be
    snapshotted right after ``anchor``), transposed or not, widened from ``dtype``."""

    value: Value
    trans: bool
    anchor: Operation | None = None

    @property
    def dtype(self) -> str:
        t = self.value.type
        assert isinstance(t, TensorType | MemRefType)
        return t.element.name


def _swaps_last_two(perm: tuple[int, ...]) -> bool:
    n = len(perm)
    return n >= 2 and tuple(perm) == (*range(n - 2), n - 1, n - 2)


def _through_tensor_transpose(op: Operation, s: Source) -> Source | None:
    if _swaps_last_two(op.attributes["perm"]):
        return Source(op.operand_values[0], not s.trans)
    return None


def _through_snapshot(op: Operation, s: Source) -> Source | None:
    """``to_tensor`` of a chain of last-two-axes ``mem.transpose`` views: a snapshot of
    the viewed buffer taken at the same point (right after the old snapshot)."""
    buf, trans = op.operand_values[0], s.trans
    while isinstance(buf, OpResult) and isinstance(buf.op, mem.TransposeOp) \
            and _swaps_last_two(buf.op.attributes["perm"]):
        buf, trans = buf.op.operand_values[0], not trans
    return Source(buf, trans, op) if buf is not op.operand_values[0] else None


_VIEW_RULES: dict[type[Operation], Callable[[Operation, Source], Source | None]] = {
    tensor.TransposeOp: _through_tensor_transpose,
    mem.ToTensorOp: _through_snapshot,
}


def _views(s: Source) -> Source:
    """``s`` with every transposing host view in front of it looked through."""
    while s.anchor is None and isinstance(s.value, OpResult):
        rule = _VIEW_RULES.get(type(s.value.op))
        nxt = rule(s.value.op, s) if rule else None
        if nxt is None:
            break
        s = nxt
    return s


def _widened(v: Value) -> tuple[Value, bool] | None:
    """(the narrow value ``v`` is a cast of, transposed or not): a top-level
    ``arith.cast``, or a fusion group that is one cast of one of its inputs, maybe
    followed by last-two-axes transposes (``x.astype(np.float32).T``)."""
    if not isinstance(v, OpResult):
        return None
    op = v.op
    if type(op) is arith.CastOp:
        return op.operand_values[0], False
    if not isinstance(op, FusionGroupOp) or len(op.result_values) != 1:
        return None
    block = op.body.blocks[0]
    body = {o for o in block.ops if o.name != "fusion.yield"}
    assert block.terminator is not None
    y, trans, used = block.terminator.operand_values[0], False, set()
    while isinstance(y, OpResult) and type(y.op) is tensor.TransposeOp and y.op in body \
            and _swaps_last_two(y.op.attributes["perm"]):
        used.add(y.op)
        y, trans = y.op.operand_values[0], not trans
    if not (isinstance(y, OpResult) and type(y.op) is arith.CastOp and y.op in body):
        return None
    used.add(y.op)
    args = list(block.args)
    arg = y.op.operand_values[0]
    if used != body or arg not in args:
        return None
    return op.inputs[args.index(arg)], trans


def operand_sources(v: Value) -> tuple[Source, Source | None]:
    """(``v`` through transposing views, and through one widening cast too if any)."""
    plain = _views(Source(v, False))
    if plain.anchor is not None:
        return plain, None
    narrow = _widened(plain.value)
    if narrow is None:
        return plain, None
    return plain, _views(Source(narrow[0], plain.trans != narrow[1]))


# ---------------------------------------------------------------- the rewrite
def _array(t: object) -> bool:
    return isinstance(t, TensorType | MemRefType) and t.rank >= 1


def _sizes_fit(a: Source, b: Source) -> bool:
    """Row pitches fit ``Nd2NzParams.srcDValue`` (uint16) and every extent, stride and
    offset the kernel takes fits int32 (for run-time shapes the host checks it per call
    and runs a scalar twin when not: ``cube_dynamic``)."""
    for s, k_axis in ((a, -2 if a.trans else -1), (b, -1 if b.trans else -2)):
        t = s.value.type
        assert isinstance(t, TensorType | MemRefType)
        if DYN in t.shape:
            continue
        size = 1
        for d in t.shape:
            size *= d
        # b32/b8 operands may be transposed on the host to rows of K (cube_plan)
        k = t.shape[k_axis] if t.rank >= 2 and s.dtype not in ("f16", "bf16") else 0
        if max(t.shape[-1], k) > 65535 or size > INT32_MAX or size == 0:
            return False
    return True


def _pick(op: tensor.MatmulOp, soc: SoC) -> tuple[Source, Source, str] | None:
    """(A source, B source, result dtype of the cube) or None: not a cube matmul."""
    assert soc.cube is not None
    (pa, na), (pb, nb) = operand_sources(op.lhs), operand_sources(op.rhs)
    result = op.result.type
    if not isinstance(result, TensorType):
        return None
    acc = soc.cube.accumulator
    elem = result.element.name
    if na is not None and nb is not None and na.dtype == nb.dtype \
            and acc.get(na.dtype) == elem:
        pa, pb = na, nb
    if pa.dtype not in acc or not (_array(pa.value.type) and _array(pb.value.type)):
        return None
    if not _sizes_fit(pa, pb):
        return None
    out = elem if (pa.dtype, elem) in QUANT else acc[pa.dtype]
    return pa, pb, out


def _snapshot(s: Source) -> Value:
    if s.anchor is None:
        return s.value
    t = s.value.type
    assert isinstance(t, MemRefType)
    block = s.anchor.parent
    assert block is not None
    snap = mem.ToTensorOp([s.value], [t.tensor_type()], loc=s.anchor.loc)
    block.insert(block.index_of(s.anchor) + 1, snap)
    return snap.result


def rewrite_cube_matmuls(fn: FuncOp, soc: SoC) -> None:
    """Replace the top-level matmuls of ``fn`` that the cube takes (module docstring)."""
    if soc.cube is None:
        return
    for op in list(fn.entry.ops):
        if not isinstance(op, tensor.MatmulOp):
            continue
        picked = _pick(op, soc)
        if picked is None:
            continue
        a, b, out = picked
        block = fn.entry
        rt = op.result.type
        assert isinstance(rt, TensorType)
        cube = CubeMatmulOp([_snapshot(a), _snapshot(b)],
                            [TensorType(rt.shape, SCALAR_TYPES[out])],
                            {"trans_a": a.trans, "trans_b": b.trans}, loc=op.loc)
        block.insert(block.index_of(op), cube)
        result: Value = cube.result
        if out != rt.element.name:  # int8 @ int8: numpy's wrap to int8 (docstring)
            cast = arith.CastOp.new(result, rt.element, loc=op.loc)
            block.insert(block.index_of(op), cast)
            result = cast.result
        op.result.replace_all_uses_with(result)
        operands = op.operand_values
        op.erase()
        _erase_dead(operands)


_DEAD = (tensor.TransposeOp, mem.TransposeOp, mem.ToTensorOp, arith.CastOp, FusionGroupOp)


def _erase_dead(values: list[Value]) -> None:
    """Erase the views, snapshots and cast groups that fed a replaced matmul and that
    nothing uses any more."""
    todo = list(values)
    while todo:
        v = todo.pop()
        if isinstance(v, OpResult) and isinstance(v.op, _DEAD) and v.op.parent is not None \
                and all(not r.uses for r in v.op.result_values):
            todo.extend(v.op.operand_values)
            v.op.erase()

__all__ = ["QUANT", "CubeMatmulOp", "Source", "operand_sources", "rewrite_cube_matmuls"]
