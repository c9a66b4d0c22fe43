"""Reverse-mode automatic differentiation of a function's tensor-level IR.

:func:`build_backward` takes the frontend's ``func.func`` (unoptimized: tensors,
buffers, structured control flow) and builds a new function that recomputes the
forward and then sweeps back through it, accumulating adjoints (``sweep``) with the
per-op rules of the table ``registry.RULES`` (``rules_elementwise``,
``rules_tensor``, ``rules_mem``, ``rules_control``).  The result is an ordinary
function: the default passes fuse and plan it and every backend compiles it.

    bwd = build_backward(fwd, "f_vjp", layout=[0, 1, None], wrt=[0, 1])
    # bwd(x, w, dout) -> (grad_x, grad_w)

Loops with a compile-time trip count are unrolled first (``unroll``).  What cannot be
differentiated is a located E50013 (``NotDifferentiableError``), never a silent zero.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.errors import ArgumentError
from pyasc.ir.autodiff import (  # noqa: F401 - the rule modules fill RULES
    rules_control,
    rules_elementwise,
    rules_mem,
    rules_tensor,
)
from pyasc.ir.autodiff.activity import analyze, root
from pyasc.ir.autodiff.registry import RULES, not_differentiable
from pyasc.ir.autodiff.sweep import Sweep
from pyasc.ir.autodiff.unroll import dissolve_scopes, unroll_active_loops
from pyasc.ir.builder import Builder
from pyasc.ir.core import OpResult, Value
from pyasc.ir.ops import func, mem
from pyasc.ir.ops.autodiff import StopGradientOp
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.types import MemRefType, ScalarType, Type, element_type, shape_of

__all__ = ["RULES", "build_backward"]


def build_backward(fwd: FuncOp, name: str, layout: Sequence[int | None],
                   wrt: Sequence[int], dout: Type | None = None,
                   with_value: bool = False) -> FuncOp:
    """The backward of ``fwd``: parameters ``layout`` (forward argument indices, and
    ``None`` for ``dout``, of type ``dout``: the adjoint of the result, of its shape;
    without ``None`` the result must be a scalar and its adjoint is 1), results the
    forward value if ``with_value``, then one gradient per index of ``wrt`` (zeros for
    a non-float array)."""
    src = fwd.clone()
    args = src.entry.args
    seeds = [args[i] for i in wrt]
    dissolve_scopes(src)
    unroll_active_loops(src, seeds)
    _refuse_input_writes(src)
    ret = src.entry.terminator
    assert ret is not None
    out = _single_result(src, ret, seeding=None not in layout)
    if dout is not None:
        check_dout(out.type, dout)
    types = [args[i].type if i is not None else dout for i in layout]
    bwd = FuncOp.empty(name, types, [], [_param_name(args, i) for i in layout],
                       loc=fwd.loc)
    b = Builder.at_end(bwd.entry, fwd.loc)
    fwd_map: dict[Value, Value] = {args[i]: bwd.entry.args[k]
                                   for k, i in enumerate(layout) if i is not None}
    active = analyze(src, seeds)
    sw = Sweep(b, fwd_map, active, {}, {})
    sw.clone_forward(src.entry.ops)
    for a in seeds:
        if a in active:
            sw.new_buffer(a)
    sw.prepare_buffers(src.entry.ops)
    sw.accumulate(out, _seed(sw, bwd, layout, out))
    sw.run(src.entry.ops)
    results = [sw.v(out)] if with_value else []
    results += [_gradient(sw, a) for a in seeds]
    b.insert(func.ReturnOp(results))
    bwd.set_result_types([v.type for v in results])
    _drop_stop_gradients(bwd)
    return bwd


def _drop_stop_gradients(fn: FuncOp) -> None:
    """``stop_gradient(x)`` is ``x`` once differentiated (the activity analysis gave it
    no adjoint): no pass or backend sees the op."""
    for op in [o for o in fn.walk() if isinstance(o, StopGradientOp)]:
        op.result.replace_all_uses_with(op.x)
        op.erase()


def _single_result(fn: FuncOp, ret: func.ReturnOp, seeding: bool) -> Value:
    values = ret.operand_values
    if len(values) == 1 and isinstance(values[0].type, MemRefType) and \
            isinstance(root(values[0]), OpResult):  # a local array: its contents
        read = mem.ToTensorOp([values[0]], [values[0].type.tensor_type()], loc=ret.loc)
        values = [Builder.before(ret).insert(read).result]
    if len(values) != 1 or isinstance(values[0].type, MemRefType):
        what = f"{len(values)} results" if len(values) != 1 else "an input array"
        raise not_differentiable(ret.loc, f"'{fn.sym_name}' returns {what}; automatic "
                                 "differentiation needs one array or scalar result",
                                 hint="return one value (a copy of an input: x.copy())")
    out = values[0]
    if seeding and not isinstance(out.type, ScalarType):
        raise not_differentiable(ret.loc, f"pyasc.grad needs a scalar result, "
                                 f"'{fn.sym_name}' returns {out.type}",
                                 hint="reduce it (.sum()), or use fn.vjp(*inputs, dout)")
    if not element_type(out.type).is_float:
        raise not_differentiable(ret.loc, f"'{fn.sym_name}' returns {out.type}: an "
                                 "integer or boolean result has no gradient")
    return out


def _refuse_input_writes(fn: FuncOp) -> None:
    """The backward recomputes the forward: a write into an argument would repeat."""
    for op in fn.walk():
        if op.has_trait("writes") and len(op.operand_values) > 1 and \
                not isinstance(root(op.operand_values[1]), OpResult):
            raise not_differentiable(op.loc, "this line writes into an input array; "
                                     "the backward would repeat the write",
                                     hint="compute into a new array and return it")


def _param_name(args: Sequence[Value], i: int | None) -> str:
    return "dout" if i is None else (args[i].name_hint or f"arg{i}")


def _seed(sw: Sweep, bwd: FuncOp, layout: Sequence[int | None], out: Value) -> Value:
    if None not in layout:
        return sw.em.const(1.0, element_type(out.type))
    d = bwd.entry.args[list(layout).index(None)]
    if isinstance(d.type, MemRefType):
        d = sw.em.read(d)
        if not shape_of(out.type):
            d = sw.em.reshape(d, ())
    return sw.em.cast(d, element_type(out.type))


def _gradient(sw: Sweep, a: Value) -> Value:
    """The gradient of argument ``a``: whole reads plus its gradient buffer."""
    t = a.type
    assert isinstance(t, MemRefType)
    like = sw.v(a)
    g = sw.buffer_adjoint(a) if a in sw.gbufs else None
    if g is None:
        return sw.em.zeros(t.tensor_type(), like=like)
    return sw.em.fit(g, like) if shape_of(g.type) != t.shape else g


def check_dout(out_type: Type, dout: Type) -> None:
    """``dout`` must have the result's shape (any float dtype: it is cast)."""
    if shape_of(out_type) != shape_of(dout):
        raise ArgumentError(f"dout has shape {shape_of(dout)}, the result "
                            f"{shape_of(out_type)}", hint="pass dout of the result's shape")
