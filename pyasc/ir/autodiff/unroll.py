"""Unrolling the ``loop.for`` loops the gradient goes through (trip count known).

Reverse mode needs every iteration's values; pyasc unrolls rather than keeping a tape:
the unrolled backward is straight-line code the default passes fuse and plan like any
other.  Only *active* loops (carrying or reading differentiated values) are unrolled;
loops of index arithmetic stay loops.  A loop whose bounds are not compile-time
constants, or whose unrolled body would exceed :data:`MAX_UNROLLED_OPS`, is left as it
is, and the sweep reports it (``rules_control``).  ``fusion.scope`` bodies are inlined
first (:func:`dissolve_scopes`).
"""

from __future__ import annotations

from pyasc.ir.autodiff.activity import analyze
from pyasc.ir.builder import Builder
from pyasc.ir.core import OpResult, Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.ops.func import FuncOp, FusionScopeOp
from pyasc.ir.types import index

MAX_UNROLLED_OPS = 200_000
"""Ops one unrolled loop may produce (its trip count times its body's op count)."""

FOLD = {arith.AddOp: lambda a, b: a + b, arith.SubOp: lambda a, b: a - b,
        arith.MulOp: lambda a, b: a * b, arith.MaxOp: max, arith.MinOp: min,
        arith.FloorDivOp: lambda a, b: a // b if b else None}
"""Index arithmetic folded when computing a trip count."""


def constant_int(v: Value) -> int | None:
    """The value of an index computed from constants only, else ``None``."""
    if not isinstance(v, OpResult):
        return None
    op = v.op
    if isinstance(op, arith.ConstantOp):
        return op.value if isinstance(op.value, int) else None  # type: ignore[return-value]
    fn = FOLD.get(type(op))
    if fn is None:
        return None
    args = [constant_int(x) for x in op.operand_values]
    return None if None in args else fn(*args)


def trip_count(op: loop.ForOp) -> int | None:
    lb, ub, step = (constant_int(v) for v in (op.lower, op.upper, op.step))
    if lb is None or ub is None or not step:
        return None
    return max(0, -((lb - ub) // step))


def unroll_active_loops(fn: FuncOp, seeds: list[Value]) -> None:
    """Unroll every active loop of ``fn`` with a known trip count, outermost first,
    until none is left (the inner loops of an unrolled one are copies to unroll)."""
    while True:
        active = analyze(fn, seeds)
        loops = [op for op in fn.walk() if isinstance(op, loop.ForOp) and _wanted(op, active)]
        outer = [op for op in loops if not any(o is not op and o.is_ancestor_of(op)
                                               for o in loops)]
        if not outer:
            return
        for op in outer:
            _unroll(op, trip_count(op))  # type: ignore[arg-type]


def dissolve_scopes(fn: FuncOp) -> None:
    """Inline the bodies of ``fusion.scope`` ops (``with fusion_scope():``): a fusion
    boundary means nothing to the gradient, and the backward gets its own fusion."""
    for op in [o for o in fn.walk() if isinstance(o, FusionScopeOp)]:
        b = Builder.before(op)
        body = op.body.blocks[0]
        for inner in body.ops[:-1]:
            b.insert(body.detach(inner))
        for r, y in zip(op.result_values, body.terminator.operand_values, strict=True):
            r.replace_all_uses_with(y)
        op.erase()


def _wanted(op: loop.ForOp, active: set[Value]) -> bool:
    n = trip_count(op)
    if n is None or n * sum(1 for _ in op.walk()) > MAX_UNROLLED_OPS:
        return False
    return any(v in active for inner in op.walk() for v in
               (*inner.operand_values, *inner.result_values))


def _unroll(op: loop.ForOp, n: int) -> None:
    b = Builder.before(op)
    lb, step = constant_int(op.lower), constant_int(op.step)
    body = op.body.blocks[0]
    values: list[Value] = list(op.inits)
    with b.location(op.loc):
        for k in range(n):
            iv = b.insert(arith.ConstantOp.new(lb + k * step, index)).result  # type: ignore
            mapping: dict[Value, Value] = {op.induction_var: iv}
            mapping.update(zip(op.iter_args, values, strict=True))
            for inner in body.ops[:-1]:
                b.insert(inner.clone(mapping))
            values = [mapping.get(y, y) for y in body.terminator.operand_values]
    for r, v in zip(op.result_values, values, strict=True):
        r.replace_all_uses_with(v)
    op.erase()
