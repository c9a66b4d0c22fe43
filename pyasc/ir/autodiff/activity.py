"""Activity analysis: which values of a function depend on the differentiated inputs.

A value is *active* when it is a float scalar/tensor computed from an active value, or
a float buffer (or a view of one) an active value was written into; the inputs being
differentiated start it.  Integers and booleans are never active (they carry no
adjoint), nor is the result of ``autodiff.stop_gradient`` (``pyasc.ops.stop_gradient``).
Only ops with an active result get a gradient rule, so an op on a constant path never
needs one.  The analysis runs to a fixed point (a buffer written late makes
its earlier reads active, loop-carried values their loop's results).

It also refuses the one way an integer could carry a hidden dependence into a float:
the index of an ``argmax``/``argmin``/``argsort`` of an active value used as a number.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyasc.ir.autodiff.registry import not_differentiable
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, scatter, sort, tensor
from pyasc.ir.ops.autodiff import StopGradientOp
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.types import MemRefType, element_type

INDEX_OPS = (tensor.ArgMaxOp, tensor.ArgMinOp, sort.ArgSortOp)
WRITES = {mem.WriteOp: 0, mem.StoreOp: 0, mem.FillOp: 0, mem.CopyOp: 0,
          scatter.ScatterOp: 0}
"""Write ops and the operand written (the destination is operand 1)."""


def can_be_active(v: Value) -> bool:
    """Only float values and float buffers carry adjoints."""
    try:
        return element_type(v.type).is_float
    except TypeError:
        return False


def root(m: Value) -> Value:
    """The buffer a view is a view of (following ``view`` ops)."""
    while isinstance(m, OpResult) and m.op.has_trait("view"):
        m = m.op.operand_values[0]
    return m


def analyze(fn: FuncOp, seeds: Iterable[Value]) -> set[Value]:
    """The active values of ``fn`` given the active ``seeds`` (its arguments)."""
    active = {s for s in seeds if can_be_active(s)}
    tainted: set[Value] = set()
    changed = True
    while changed:
        changed = False
        for op in fn.walk():
            changed |= _step(op, active, tainted)
    return active


def _add(values: Iterable[Value], active: set[Value]) -> bool:
    new = [v for v in values if v not in active and can_be_active(v)]
    active.update(new)
    return bool(new)


def _step(op: Operation, active: set[Value], tainted: set[Value]) -> bool:
    operands = op.operand_values
    if type(op) in WRITES:
        written, dest = operands[WRITES[type(op)]], operands[1]
        return _add([root(dest)], active) if written in active else False
    if isinstance(op, loop.ForOp):
        return _loop_step(op, active)
    if isinstance(op, StopGradientOp):  # its result carries no adjoint
        return False
    if isinstance(op, loop.IfOp):
        ys = [r.blocks[0].terminator.operand_values for r in op.region_list]
        return _add([r for i, r in enumerate(op.result_values)
                     if any(y[i] in active for y in ys)], active)
    if isinstance(op, INDEX_OPS):
        if any(v in active for v in operands):
            new = set(op.result_values) - tainted
            tainted.update(new)
            return bool(new)
        return False
    if any(v in tainted for v in operands):
        _taint(op, tainted)
    if any(v in active for v in operands) or _reads_active(op, active):
        return _add(op.result_values, active)
    return False


def _reads_active(op: Operation, active: set[Value]) -> bool:
    """An op with regions (a ``while``...) whose body reads an active value."""
    if not op.region_list:
        return False
    return any(v in active for inner in op.walk() for v in inner.operand_values)


def _taint(op: Operation, tainted: set[Value]) -> None:
    """Integers computed from an arg-index stay tainted; a float made of one is refused."""
    for r in op.result_values:
        if can_be_active(r) and isinstance(op, arith.CastOp):
            raise not_differentiable(
                op.loc, "the index computed by argmax/argmin/argsort of a differentiated "
                "value is used as a number here: its gradient is not defined",
                hint="use the index only to select values (x[i], np.take)")
        if not isinstance(r.type, MemRefType):
            tainted.add(r)


def _loop_step(op: loop.ForOp, active: set[Value]) -> bool:
    body = op.body.blocks[0]
    ys = body.terminator.operand_values if body.terminator is not None else []
    changed = False
    for i, (init, arg, res) in enumerate(zip(op.inits, op.iter_args, op.outputs,
                                             strict=True)):
        if init in active or (i < len(ys) and ys[i] in active):
            changed |= _add([arg, res], active)
    return changed
