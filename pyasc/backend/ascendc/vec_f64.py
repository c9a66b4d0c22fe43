"""``device_float64="demote"`` for array work: float64 tensor ops computed in float32.

The vector unit has no float64 (``soc.py``), so a group with float64 tensors is not a
vector kernel; without the option it is a scalar kernel, refused with E50041 where the
SoC cannot hold it.  With the option the user accepts float32 rounding on the device;
scalar kernels demote their whole region (``scalar_f64.demote``).  This module does the
same for the top-level tensor work before grouping, so that it stays on the vector unit:
the seed's bilateral filter weights its float32 window by a float64 space kernel
(numpy's promotion), and once ``batch-loops`` has batched it, every weight is a float64
image.

:func:`demote_tensor_f64` walks the entry block in order.  A widening cast of a float32
tensor to float64 is dropped (its float32 operand stands for it); an elementwise or
reduction op (``analysis.is_vector_op``) with a float64 tensor result, or reducing such
a tensor, is rebuilt with float32 types, its float64 operands cast to float32 first
(host scalars: a scalar cast; other tensors: a tensor cast, which the planner keeps
out of vector groups).  A remaining user of a demoted value gets it cast back to
float64, unless that user is itself a cast to float32 (then the demoted value replaces
it) or to another type (a float16 result: it casts the demoted value).  One
:class:`~pyasc.errors.DeviceFloat64Warning` names the function's line.
"""

from __future__ import annotations

import warnings

from pyasc.backend.ascendc.analysis import is_vector_op
from pyasc.errors import DeviceFloat64Warning
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.types import ScalarType, TensorType, Type, f32, f64


def _elem(t: Type) -> ScalarType | None:
    if isinstance(t, ScalarType):
        return t
    return t.element if isinstance(t, TensorType) else None


def _narrow(t: Type) -> Type:
    if t == f64:
        return f32
    return t.with_element(f32) if isinstance(t, TensorType) and t.element == f64 else t


def _widening(op: Operation) -> bool:
    """A cast of a float32 tensor to float64."""
    return isinstance(op, arith.CastOp) and isinstance(op.result.type, TensorType) and \
        _elem(op.result.type) == f64 and _elem(op.operand_values[0].type) == f32


def _candidate(op: Operation, narrow: dict[Value, Value]) -> bool:
    if op.region_list or len(op.result_values) != 1 or isinstance(op, arith.ConstantOp) or \
            not is_vector_op(op):
        return False
    r = op.result_values[0]
    if isinstance(r.type, TensorType):
        return r.type.element == f64
    return r.type == f64 and any(v in narrow for v in op.operand_values)


def _rebuild(op: Operation, narrow: dict[Value, Value]) -> Value:
    block = op.parent
    assert block is not None
    operands = []
    for v in op.operand_values:
        if v in narrow:
            v = narrow[v]
        elif _elem(v.type) == f64:
            cast = arith.CastOp([v], [_narrow(v.type)], loc=op.loc)
            block.insert(block.index_of(op), cast)
            v = cast.result
        operands.append(v)
    new = type(op)(operands, [_narrow(op.result_values[0].type)], dict(op.attributes),
                   loc=op.loc)
    block.insert(block.index_of(op), new)
    return new.result_values[0]


def _fix_uses(old: Value, new: Value, replaced: set[Operation]) -> None:
    for user, i in list(old.uses):
        if user in replaced:
            continue
        if isinstance(user, arith.CastOp) and _elem(user.result.type) == f32 and \
                user.result.type == new.type:
            user.result.replace_all_uses_with(new)
            user.erase()
            continue
        if isinstance(user, arith.CastOp) and _elem(user.result.type) != f64:
            # a narrowing cast (float16 result of a float16 image): from the float32
            # value directly (a float64 cast back would be a scalar kernel)
            user.set_operand(i, new)
            continue
        block = user.parent
        assert block is not None
        back = arith.CastOp([new], [old.type], loc=user.loc)
        block.insert(block.index_of(user), back)
        user.set_operand(i, back.result)


def demote_tensor_f64(fn: FuncOp) -> bool:
    """Compute ``fn``'s top-level float64 tensor work in float32 (module docstring);
    returns whether anything changed (then warns once)."""
    narrow: dict[Value, Value] = {}
    replaced: list[Operation] = []
    for op in list(fn.entry.ops):
        if _widening(op):
            narrow[op.result_values[0]] = op.operand_values[0]
        elif _candidate(op, narrow):
            narrow[op.result_values[0]] = _rebuild(op, narrow)
        else:
            continue
        replaced.append(op)
    if not replaced:
        return False
    done = set(replaced)
    for op in replaced:
        _fix_uses(op.result_values[0], narrow[op.result_values[0]], done)
    for op in reversed(replaced):
        if not any(r.uses for r in op.result_values):
            op.erase()
    loc = fn.loc
    warnings.warn_explicit(DeviceFloat64Warning(
        "float64 array work is computed in float32 on the AI Core's vector unit "
        "(device_float64='demote'): results differ from numpy's by float32 rounding"),
        DeviceFloat64Warning, loc.file or "<unknown>", loc.line or 0)
    return True


__all__ = ["demote_tensor_f64"]
