"""``lower-to-loops`` rules for elementwise ops, array creation and buffer writes.

* elementwise ``arith.*``/``math.*`` on tensors (any mix with scalars): a loop nest over
  the broadcast result shape that loads each operand (size-1 axes index 0, decided at
  run time for ``?`` dims), applies the same op to scalars and stores the result into
  a fresh buffer; one ``func.assert`` of kind ``shape`` checks dynamic sizes first;
* ``tensor.map``: the same nest with the map's body inlined per element;
* ``arith.constant`` with a dense value: ``mem.constant``;
* ``tensor.fill``/``arange``/``broadcast``: a fresh buffer filled by a loop nest;
* ``mem.write``/``copy``/``fill``: a nest of loads and stores into the destination
  (numpy broadcasting of the source); ``mem.contiguous``: ``mem.alloc`` plus a copy.

Loop nests run over the result in C order, so the innermost loop has unit stride on
the freshly allocated (contiguous) result.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.core import DenseArray, Operation, Value
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.passes.bufferize import Lowerer, LowerFn, lower_generic
from pyasc.ir.passes.loopgen import LoopGen
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType


def result_dims(gen: LoopGen, t: TensorType | MemRefType, dyn: Sequence[Value]) -> list[Value]:
    """Sizes of a result of type ``t`` whose ``?`` dims are the operands ``dyn``."""
    it = iter(dyn)
    return [next(it) if d == DYN else gen.const(d) for d in t.shape]


def _scalar_op(op: Operation, operands: Sequence[Value], element: ScalarType) -> Operation:
    """``op`` rebuilt on scalar operands (same class and attributes)."""
    return type(op)(list(operands), [element], dict(op.attributes))


def lower_elementwise(cx: Lowerer, op: Operation) -> list[Value]:
    """Any elementwise ``arith``/``math`` op."""
    t = op.result.type
    ins = cx.getall(op.operand_values)
    if not isinstance(t, TensorType):
        return [cx.gen.emit(_scalar_op(op, ins, t))]  # type: ignore[arg-type]
    gen = cx.gen
    bc = gen.broadcast([gen.dims(v) for v in ins], t.shape)
    out = cx.alloc(t, bc.out_dims, op.result.name_hint)

    def body(ivs: list[Value]) -> None:
        vals = [gen.load(v, bc.index(gen, k, ivs)) for k, v in enumerate(ins)]
        gen.store(gen.emit(_scalar_op(op, vals, t.element)), out, ivs)
    gen.nest(bc.out_dims, body, parallel=True)
    return [out]


def _lower_map(cx: Lowerer, op: tensor.MapOp) -> list[Value]:
    gen = cx.gen
    ins = cx.getall(op.inputs)
    block = op.body.blocks[0]
    if not any(isinstance(r.type, TensorType) for r in op.outputs):
        return cx.inline(block, ins)
    shape = op.outputs[0].type.shape
    bc = gen.broadcast([gen.dims(v) for v in ins], shape)
    outs = [cx.alloc(r.type, bc.out_dims, r.name_hint) for r in op.outputs]

    def body(ivs: list[Value]) -> None:
        vals = [gen.load(v, bc.index(gen, k, ivs)) for k, v in enumerate(ins)]
        for y, out in zip(cx.inline(block, vals), outs, strict=True):
            gen.store(y, out, ivs)
    gen.nest(bc.out_dims, body, parallel=True)
    return outs


def _lower_constant(cx: Lowerer, op: arith.ConstantOp) -> list[Value]:
    value = op.value
    if not isinstance(value, DenseArray):
        return lower_generic(cx, op)
    t = op.result.type
    assert isinstance(t, TensorType)
    return [cx.gen.emit(mem.ConstantOp([], [MemRefType(t.shape, t.element)],
                                       {"value": value}))]


def _lower_fill(cx: Lowerer, op: tensor.FillOp) -> list[Value]:
    t = op.result.type
    dims = result_dims(cx.gen, t, cx.getall(op.dims))
    out = cx.alloc(t, dims, op.result.name_hint)
    cx.gen.copy(cx.get(op.value), out, dims, parallel=True)
    return [out]


def _lower_arange(cx: Lowerer, op: tensor.ArangeOp) -> list[Value]:
    gen, t = cx.gen, op.result.type
    start, step = cx.get(op.start), cx.get(op.step)
    dims = result_dims(gen, t, cx.getall(op.dims))
    out = cx.alloc(t, dims, op.result.name_hint)

    def body(ivs: list[Value]) -> None:
        k = gen.cast(ivs[0], t.element)
        gen.store(gen.emit(arith.AddOp.new(start, gen.emit(arith.MulOp.new(k, step)))),
                  out, ivs)
    gen.nest(dims, body, parallel=True)
    return [out]


def _lower_broadcast(cx: Lowerer, op: tensor.BroadcastOp) -> list[Value]:
    t = op.result.type
    dims = result_dims(cx.gen, t, cx.getall(op.dims))
    out = cx.alloc(t, dims, op.result.name_hint)
    cx.gen.copy(cx.get(op.source), out, dims, "cannot broadcast", parallel=True)
    return [out]


def _lower_write(cx: Lowerer, op: Operation) -> list[Value]:
    """``mem.write``, ``mem.copy`` and ``mem.fill``: (source, dest) operands."""
    src, dst = cx.getall(op.operand_values)
    if src is dst:  # a fused group already stored into dst (lower_group_inplace)
        return []
    # A written tensor or scalar never overlaps the destination (snapshots that could
    # are copies); a mem.copy between user buffers may.
    cx.gen.copy(src, dst, parallel=not isinstance(op, mem.CopyOp))
    return []


def _lower_contiguous(cx: Lowerer, op: mem.ContiguousOp) -> list[Value]:
    src = cx.get(op.source)
    dims = cx.gen.dims(src)
    t = op.result.type
    out = cx.gen.alloc(t.shape, t.element, dims, op.result.name_hint)
    cx.gen.copy(src, out, dims, parallel=True)
    return [out]


def _elementwise_classes() -> list[type[Operation]]:
    bases = (arith.ElementwiseOp, arith.CmpOp, arith.SelectOp, arith.CastOp, m.ClassifyOp)
    found: list[type[Operation]] = []
    for module in (arith, m):
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, bases) and obj.name:
                found.append(obj)
    return found


RULES: dict[type[Operation], LowerFn] = {
    **{cls: lower_elementwise for cls in _elementwise_classes()},
    tensor.MapOp: _lower_map,  # type: ignore[dict-item]
    arith.ConstantOp: _lower_constant,  # type: ignore[dict-item]
    tensor.FillOp: _lower_fill,  # type: ignore[dict-item]
    tensor.ArangeOp: _lower_arange,  # type: ignore[dict-item]
    tensor.BroadcastOp: _lower_broadcast,  # type: ignore[dict-item]
    mem.WriteOp: _lower_write,
    mem.CopyOp: _lower_write,
    mem.FillOp: _lower_write,
    mem.ContiguousOp: _lower_contiguous,  # type: ignore[dict-item]
}

__all__ = ["RULES", "lower_elementwise", "result_dims"]
