"""bfloat16 array work on the vector unit: each operation computed in float32 and rounded.

The dav-c220 vector unit moves bfloat16 (``DataCopy``, ``Duplicate``, ``Gather``) and
converts it (``Cast`` to and from float32, reference section 1.3) but has no bfloat16
arithmetic, comparison, selection or reduction (``soc.C220_DTYPES``).

numpy, with ml_dtypes' bfloat16, computes every operation in float32 and rounds its
result to bfloat16; pyasc's bfloat16 reductions accumulate in float32 and round once
(docs/numpy-support.md). :func:`widen_tensor_bf16` rewrites the top-level tensor work
(and the fusion groups in it) into exactly that before grouping: an elementwise op or
reduction (``is_vector_op``) that reads or makes bfloat16 values gets its bfloat16
operands cast to float32, is rebuilt on float32, and its bfloat16 result is a ``Cast``
of the float32 one with ``CAST_RINT`` (round to nearest even, as ml_dtypes). Chained ops
keep the rounding between them (``cast(cast(x, bf16), f32)`` is not folded: the inner
cast is inexact), so the results are numpy's bit for bit. Without this pass such a group
was a scalar kernel (``GetValue``/``SetValue``).
"""

from __future__ import annotations

from pyasc.backend.ascendc.analysis import is_vector_op
from pyasc.ir.core import Operation
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops.func import FuncOp, FusionGroupOp
from pyasc.ir.types import ScalarType, ShapedType, TensorType, Type, bf16, element_type, f32

_MOVES = (arith.CastOp, arith.ConstantOp, tensor.BroadcastOp, tensor.FillOp)
"""Vector ops the unit does on bfloat16 itself: conversion and data movement."""


def _is_bf16(t: Type) -> bool:
    return isinstance(t, ScalarType | ShapedType) and element_type(t) == bf16


def _to_f32(t: Type) -> Type:
    if t == bf16:
        return f32
    return t.with_element(f32) if isinstance(t, TensorType) and _is_bf16(t) else t


def _candidate(op: Operation) -> bool:
    if op.region_list or len(op.result_values) != 1 or isinstance(op, _MOVES) or \
            not is_vector_op(op):
        return False
    values = [*op.operand_values, *op.result_values]
    return any(_is_bf16(v.type) for v in values)


def _widen(op: Operation) -> None:
    """Rebuild ``op`` on float32 in front of it; its users get the result rounded back."""
    block = op.parent
    assert block is not None
    operands = []
    for v in op.operand_values:
        if _is_bf16(v.type):
            up = arith.CastOp([v], [_to_f32(v.type)], loc=op.loc)
            block.insert(block.index_of(op), up)
            v = up.result
        operands.append(v)
    old = op.result_values[0]
    new = type(op)(operands, [_to_f32(old.type)], dict(op.attributes), loc=op.loc)
    block.insert(block.index_of(op), new)
    result = new.result_values[0]
    if _is_bf16(old.type):
        down = arith.CastOp([result], [old.type], loc=op.loc)
        block.insert(block.index_of(op), down)
        result = down.result
    old.replace_all_uses_with(result)
    op.erase()


def widen_tensor_bf16(fn: FuncOp) -> bool:
    """Compute ``fn``'s top-level bfloat16 tensor work in float32, rounding each result
    (module docstring); returns whether anything changed."""
    blocks = [fn.entry, *(g.body.blocks[0] for g in fn.entry.ops
                          if isinstance(g, FusionGroupOp))]
    ops = [op for block in blocks for op in block.ops if _candidate(op)]
    for op in ops:
        _widen(op)
    return bool(ops)


__all__ = ["widen_tensor_bf16"]
