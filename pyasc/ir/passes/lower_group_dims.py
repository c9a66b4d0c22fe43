"""Run-time sizes of the values of a ``fusion.group`` body (used by ``Evaluator``).

One rule per op class (a table): elementwise ops broadcast their operands' sizes
(``LoopGen.broadcast``, which also emits the ``shape`` check numpy's broadcasting
would fail and records the index maps ``Evaluator`` reads operands through),
``fill``/``arange``/``broadcast``/``reshape`` take their size operands, slices their
sizes, transposes permute, gathers splice the index array's sizes in, reductions keep
or drop the reduced axes.  Reshapes check element counts when a size is dynamic.
All of it runs once, before any loop of the group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import tensor
from pyasc.ir.passes.fusion_rules import ELEMENTWISE, REDUCTIONS
from pyasc.ir.passes.loopgen import shape_template
from pyasc.ir.passes.lower_elementwise import result_dims
from pyasc.ir.passes.lower_group_base import Evaluator
from pyasc.ir.types import DYN


def _dims_elementwise(ev: Evaluator, op: Operation) -> list[Value]:
    t = op.result_values[0].type
    bc = ev.gen.broadcast([ev.dims(v) for v in op.operand_values], t.shape)
    ev.bcast[op] = bc
    return bc.out_dims


def _dims_from_operands(ev: Evaluator, op: Operation) -> list[Value]:
    t = op.result.type
    n_dyn = sum(d == DYN for d in t.shape)
    dyn = [ev.scalar(v) for v in op.operand_values[len(op.operand_values) - n_dyn:]]
    return result_dims(ev.gen, t, dyn)


def _dims_broadcast(ev: Evaluator, op: tensor.BroadcastOp) -> list[Value]:
    dims = _dims_from_operands(ev, op)
    ev.bcast[op] = ev.gen.broadcast([ev.dims(op.source)], op.result.type.shape, dims,
                                     "cannot broadcast")
    return dims


def _dims_slice(ev: Evaluator, op: tensor.SliceOp) -> list[Value]:
    drop = op.attributes.get("drop", ())
    sizes = [ev.scalar(v) for a, v in enumerate(op.parts()[1]) if a not in drop]
    return [ev.gen.const(d) if d != DYN else s
            for d, s in zip(op.result.type.shape, sizes, strict=True)]


def _dims_transpose(ev: Evaluator, op: tensor.TransposeOp) -> list[Value]:
    src = ev.dims(op.source)
    return [src[p] for p in op.attributes["perm"]]


def _dims_reshape(ev: Evaluator, op: tensor.ReshapeOp) -> list[Value]:
    gen, t = ev.gen, op.result.type
    dims = _dims_from_operands(ev, op)
    if not (op.source.type.is_static and t.is_static):
        total = gen.product(ev.dims(op.source))
        values = [total]
        text = shape_template(dims, values)
        gen.check(gen.cmp("eq", total, gen.product(dims)),
                  f"cannot reshape array of size {{0}} into shape {text}", "shape", values)
    return dims


def _dims_gather(ev: Evaluator, op: tensor.GatherOp) -> list[Value]:
    axis = op.attributes["axis"]
    sd = ev.dims(op.source)
    return sd[:axis] + ev.dims(op.indices) + sd[axis + 1:]


def _dims_reduce(ev: Evaluator, op: Operation) -> list[Value]:
    src = ev.dims(op.operand_values[0])
    axes, keep = op.attributes["axes"], op.attributes["keepdims"]
    if keep:
        return [ev.gen.const(1) if a in axes else d for a, d in enumerate(src)]
    return [d for a, d in enumerate(src) if a not in axes]


DIMS: dict[type[Operation], Callable[[Evaluator, Any], list[Value]]] = {
    **{cls: _dims_elementwise for cls in ELEMENTWISE},
    tensor.MapOp: _dims_elementwise,
    tensor.FillOp: _dims_from_operands,
    tensor.ArangeOp: _dims_from_operands,
    tensor.BroadcastOp: _dims_broadcast,
    tensor.SliceOp: _dims_slice,
    tensor.TransposeOp: _dims_transpose,
    tensor.ReshapeOp: _dims_reshape,
    tensor.GatherOp: _dims_gather,
    **{cls: _dims_reduce for cls in REDUCTIONS},
}
