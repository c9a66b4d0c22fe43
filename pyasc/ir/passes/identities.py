"""Algebraic identities and structural simplifications, as a table of rewrite rules.

Every rule must preserve results bit for bit, NaN and signed zeros included:

* ``x + 0`` is ``x`` for integers, but for floats only ``x + (-0.0)`` is (``-0.0 + 0.0``
  is ``+0.0``); ``x - 0.0``, ``x * 1.0`` and ``x / 1.0`` are exact for every float;
* ``x * 0``, ``x - x`` and ``x ^ x`` are zero for integers only (``inf * 0`` and
  ``inf - inf`` are NaN), which ``Pat.const(0)`` (integer zeros only) and the ``where``
  predicates enforce;
* ``cast(cast(x))`` folds only when the inner cast is exact for every input value;
* ``cast(extract(C, i))`` of a constant table ``C`` reads ``i`` of ``cast(C)``,
  converted once when compiling (the cast is elementwise: the same bits);
* shape ops fold only when the result provably equals the source (equal types are not
  enough when dynamic dims come from operands: ``broadcast`` of a ``?`` dim of size 1).

The driver (``pyasc.ir.rewrite``) rejects a replacement whose type differs from the
replaced value's, so ``x + 0`` with a tensor zero and a scalar ``x`` stays as it is.
"""

from __future__ import annotations

from pyasc.ir.core import DenseArray, Operation, OpResult, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.rewrite import Pat, Rewriter, RuleSet, constant_value
from pyasc.ir.semantics import eval_op
from pyasc.ir.types import DYN, ScalarType, ShapedType, element_type, index

x, a, b, c = Pat.var("x"), Pat.var("a"), Pat.var("b"), Pat.var("c")


def _int_or_bool(op: Operation) -> bool:
    elem = element_type(op.result.type)
    return elem.is_int or elem.is_bool


def holds_exactly(wide: ScalarType, narrow: ScalarType) -> bool:
    """True if every value of ``narrow`` converts to ``wide`` and back unchanged."""
    if narrow.is_bool:
        return True
    if wide.is_bool or (narrow.is_float and not wide.is_float):
        return False
    if narrow.is_float:
        return wide.bitwidth > narrow.bitwidth and wide.name != "bf16"
    if wide.is_float:  # integer into float: the mantissa must hold every value
        mantissa = {"f16": 11, "f32": 24, "f64": 53}.get(wide.name, 0)
        return narrow.bitwidth + (0 if narrow.is_unsigned else -1) <= mantissa
    if narrow.is_unsigned:
        return wide.bitwidth > narrow.bitwidth or (wide.is_unsigned and wide == narrow)
    return not wide.is_unsigned and wide.bitwidth >= narrow.bitwidth


def _exact_cast(op: Operation) -> bool:
    return holds_exactly(element_type(op.result.type), element_type(op.operand.type))


def _cast_of_exact_cast(rw: Rewriter, x: Value, inner: Operation) -> Value | None:
    """``cast(cast(x, exact), T)`` is ``cast(x, T)`` (or ``x`` when T is x's type).

    Not when the second cast is float -> int: out-of-range conversions are
    implementation-defined and do differ between source types (f16 vs f32 NaN -> ui32).
    """
    to = element_type(rw.root.result.type)
    if element_type(x.type) == to:
        return x
    if element_type(inner.result.type).is_float and to.is_int:
        return None
    return rw.insert(arith.CastOp.new(x, to)).result


def _constant_table(op: Operation) -> bool:
    """``tensor.extract`` from a dense constant (a table of numbers)."""
    return isinstance(constant_value(op.operand_values[0]), DenseArray)


def _cast_of_table_item(rw: Rewriter, item: Operation) -> Value:
    """``cast(extract(C, i...), T)`` is ``extract(cast(C, T), i...)``, with the table
    converted once, here (a table of Python floats read by float32 code then needs no
    float64 at run time, which a device may not have)."""
    table = item.operand_values[0]
    cast = arith.CastOp.new(table, element_type(rw.root.result.type))
    (converted,) = eval_op(cast, [constant_value(table).array])  # type: ignore[union-attr]
    new_table = rw.constant(converted, cast.result.type)
    return rw.insert(tensor.ExtractOp([new_table, *item.operand_values[1:]],
                                      [cast.result.type.element])).result


def _same_shape(op: Operation) -> bool:
    """Result type equals the source's and every ``?`` dim is the source's own dim."""
    src, dims = op.operand_values[0], op.operand_values[1:]
    t = op.result.type
    if t != src.type:
        return False
    dyn_axes = [i for i, d in enumerate(t.shape) if d == DYN]
    return len(dims) == len(dyn_axes) and all(
        isinstance(d, OpResult) and d.op.name in ("tensor.dim", "mem.dim")
        and d.op.operand_values[0] is src and d.op.attributes["axis"] == axis
        for d, axis in zip(dims, dyn_axes, strict=True))


def _identity_perm(op: Operation) -> bool:
    return tuple(op.attributes["perm"]) == tuple(range(len(op.attributes["perm"])))


def _static_dim(op: Operation) -> bool:
    t = op.operand_values[0].type
    return isinstance(t, ShapedType) and t.shape[op.attributes["axis"]] != DYN


def _dim_constant(rw: Rewriter, op: Operation, x: Value) -> Value:
    return rw.constant(x.type.shape[op.attributes["axis"]], index)


def _trip_count(op: Operation) -> int | None:
    lb, ub, step = (constant_value(v) for v in op.operand_values[:3])
    if not all(isinstance(v, int) for v in (lb, ub, step)) or step == 0:
        return None
    return max(0, -((lb - ub) // step))


def _fold_for(rw: Rewriter, op: Operation) -> list[Value] | None:
    """Zero iterations: the inits; one iteration: the body, inlined with ``iv = lb``."""
    trips = _trip_count(op)
    if trips == 0:
        return op.inits
    if trips == 1:
        return rw.inline_block(op.body.block, [op.lower, *op.inits])
    return None


def _false_condition(op: Operation) -> bool:
    term = op.before.block.terminator
    return term is not None and constant_value(term.operand_values[0]) is False


def _inline_before(rw: Rewriter, op: Operation) -> list[Value]:
    """A ``while`` whose condition is constantly false runs ``before`` once."""
    return rw.inline_block(op.before.block, op.inits)[1:]


RULES = [
    # additive identities
    (Pat("arith.add", x, Pat.const(0)), lambda x: x),
    (Pat("arith.add", x, Pat.const(-0.0)), lambda x: x),
    (Pat("arith.sub", x, Pat.const(0)), lambda x: x),
    (Pat("arith.sub", x, Pat.const(0.0)), lambda x: x),
    (Pat(("arith.sub", "arith.xor"), x, x, where=_int_or_bool),
     lambda rw, x: rw.splat(0, like=x)),
    # multiplicative identities
    (Pat("arith.mul", x, Pat.const(1)), lambda x: x),
    (Pat("arith.mul", x, Pat.const(1.0)), lambda x: x),
    (Pat("arith.mul", x, Pat.const(0)), lambda rw, x: rw.splat(0, like=x)),
    (Pat("arith.floordiv", x, Pat.const(1)), lambda x: x),
    (Pat("arith.div", x, Pat.const(1.0)), lambda x: x),
    # idempotent ops and involutions
    (Pat(("arith.max", "arith.min", "arith.and", "arith.or"), x, x), lambda x: x),
    (Pat("arith.neg", Pat("arith.neg", x)), lambda x: x),
    (Pat("arith.not", Pat("arith.not", x)), lambda x: x),
    # selection
    (Pat("arith.select", Pat.const(True), a, b), lambda a, b: a),
    (Pat("arith.select", Pat.const(False), a, b), lambda a, b: b),
    (Pat("arith.select", c, a, a), lambda c, a: a),
    (Pat("arith.select", c, Pat.const(True), Pat.const(False)), lambda c: c),
    # casts
    (Pat("arith.cast", x, where=lambda op: op.result.type == op.operand.type), lambda x: x),
    (Pat("arith.cast", Pat("arith.cast", x, where=_exact_cast, bind="inner")),
     _cast_of_exact_cast),
    (Pat("arith.cast", Pat("tensor.extract", ..., where=_constant_table, bind="item")),
     _cast_of_table_item),
    # shapes
    (Pat(("tensor.reshape", "tensor.broadcast", "mem.reshape"), x, ..., where=_same_shape),
     lambda x: x),
    (Pat(("tensor.transpose", "mem.transpose"), x, where=_identity_perm), lambda x: x),
    (Pat(("tensor.dim", "mem.dim"), x, where=_static_dim, bind="op"), _dim_constant),
    # control flow and checks
    (Pat("func.assert", Pat.const(True), ...), lambda: []),  # with any reported values
    (Pat("loop.if", Pat.const(True), bind="op"),
     lambda rw, op: rw.inline_block(op.then_region.block)),
    (Pat("loop.if", Pat.const(False), bind="op"),
     lambda rw, op: rw.inline_block(op.else_region.block)),
    (Pat("loop.for", ..., bind="op"), _fold_for),
    (Pat("loop.while", ..., where=_false_condition, bind="op"), _inline_before),
]

IDENTITIES = RuleSet(RULES)
"""The rules above, indexed by root op name (a rewrite function for the driver)."""
