"""``pyasc.torch.autograd_op(fn)``: a ``@hybrid`` function as a differentiable torch op.

The op is a ``torch.autograd.Function``: its forward calls ``fn`` on the tensors'
memory (no copies, see ``pyasc.torch.tensors``) and its backward calls ``fn.vjp(*inputs,
dout)`` (a gradient registered with ``@fn.def_grad``, or the automatic one), so
``loss.backward()`` runs through pyasc operators and the torch operations around them.

* Inputs: the op takes what ``fn`` takes, by position or keyword; each argument of the
  call (``*args`` items one by one) is an input of the ``Function``.  Tensors get
  gradients; numbers, numpy arrays and other values are constants (``None`` gradient).
  Tensors inside tuples or lists are constants too: torch tracks top-level tensors only.
* Outputs: a tensor, or a tuple/list of tensors (``dout`` is then the tuple of their
  gradients).  Integer and bool outputs are marked non-differentiable.
* The backward pass is not itself differentiable (``once_differentiable``): no second
  derivatives through a pyasc op.
* Without a gradient (no ``def_grad``, no automatic one), ``backward`` raises
  ``fn.vjp``'s coded error (E50010), whose hint says how to register one.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from pyasc.callsite import at_caller, public_api
from pyasc.errors import ArgumentError

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
               inspect.Parameter.VAR_POSITIONAL)


class Layout:
    """How the flat inputs of the ``Function`` map back onto ``fn``'s parameters: one
    ``(name, by_keyword)`` per input, in ``fn.vjp``'s order of inputs."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[tuple[str, bool], ...]) -> None:
        self.items = items

    @classmethod
    def bind(cls, fn: Any, args: tuple, kwargs: dict[str, Any]) -> tuple[Layout, list]:
        """The layout and flat inputs of one call of ``fn``."""
        sig: inspect.Signature = fn.__signature__
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise at_caller(ArgumentError(f"{fn.__name__}(): {exc}")) from None
        bound.apply_defaults()
        items: list[tuple[str, bool]] = []
        values: list[Any] = []
        for name, value in bound.arguments.items():
            kind = sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                items += [(name, False)] * len(value)
                values += list(value)
            elif kind is inspect.Parameter.VAR_KEYWORD:
                items += [(k, True) for k in value]
                values += list(value.values())
            else:
                items.append((name, kind not in _POSITIONAL))
                values.append(value)
        return cls(tuple(items)), values

    def call(self, values: list[Any]) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments of ``fn`` for the flat ``values``."""
        args = [v for (_, kw), v in zip(self.items, values, strict=True) if not kw]
        kwargs = {n: v for (n, kw), v in zip(self.items, values, strict=True) if kw}
        return args, kwargs


class PyascFunction(torch.autograd.Function):
    """``forward(ctx, fn, layout, *inputs)``: ``fn`` on the inputs; ``backward``:
    ``fn.vjp``.  Use :func:`autograd_op` rather than ``apply`` directly."""

    @staticmethod
    def forward(ctx: Any, fn: Any, layout: Layout, *inputs: Any) -> Any:
        args, kwargs = layout.call(list(inputs))
        out = fn(*args, **kwargs)
        ctx.fn, ctx.layout = fn, layout
        is_tensor = [isinstance(v, torch.Tensor) for v in inputs]
        ctx.constants = [None if t else v for t, v in zip(is_tensor, inputs, strict=True)]
        ctx.save_for_backward(*[v for t, v in zip(is_tensor, inputs, strict=True) if t])
        ctx.multiple = isinstance(out, tuple | list)
        outs = out if ctx.multiple else (out,)
        _check_outputs(fn, outs)
        outs = unaliased(outs, inputs)
        frozen = [o for o in outs if not (o.is_floating_point() or o.is_complex())]
        if frozen:
            ctx.mark_non_differentiable(*frozen)
        return tuple(outs) if ctx.multiple else outs[0]

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *douts: torch.Tensor) -> tuple[Any, ...]:
        saved = iter(ctx.saved_tensors)
        inputs = [host_array(next(saved)) if c is None else c for c in ctx.constants]
        args, kwargs = ctx.layout.call(inputs)
        dout = tuple(host_array(d) for d in douts) if ctx.multiple else host_array(douts[0])
        grads = ctx.fn.vjp(*args, dout, **kwargs)
        wanted = [g if ctx.needs_input_grad[i + 2] else None for i, g in enumerate(grads)]
        used = [*inputs, *(dout if ctx.multiple else (dout,))]
        return (None, None, *grad_tensors(wanted, used))  # (None: fn, layout)


def unaliased(outs: Any, inputs: Any) -> list[Any]:
    """``outs`` with each tensor that shares memory with one of ``inputs`` (an input
    returned, or a view of it: pyasc returns views as numpy does) copied.  torch does
    not know such a result is a view, so its autograd would miss in-place changes made
    through it; and a custom op must not alias its inputs."""
    arrays = [t.detach().numpy() for t in inputs if isinstance(t, torch.Tensor)]
    return [o.clone() if isinstance(o, torch.Tensor) and any(
        np.may_share_memory(o.detach().numpy(), a) for a in arrays) else o for o in outs]


def grad_tensors(grads: list[Any], used: list[Any]) -> list[Any]:
    """Tensors of the gradient arrays (``None`` stays), each over memory of its own: a
    gradient function may return ``dout`` itself, or one array for two inputs, and
    autograd accumulates into (and may keep) the tensors it gets, so two gradients
    sharing memory, or a gradient sharing ``dout``'s or an input's, would change each
    other later.  Those are copied; fresh results are wrapped without a copy."""
    seen = [a for a in used if isinstance(a, np.ndarray)]
    out: list[Any] = []
    for g in grads:
        if g is None:
            out.append(None)
            continue
        if any(np.may_share_memory(g, a) for a in seen):
            g = g.copy()
        g = np.ascontiguousarray(g)
        seen.append(g)
        out.append(torch.from_numpy(g))
    return out


def host_array(t: Any) -> Any:
    """A tensor's memory as a read-only ndarray (no copy) for ``fn.vjp``: the saved
    inputs and ``dout`` belong to autograd (``dout`` may feed other gradients too), so
    a gradient function writing into them is refused (E50040), never silently applied."""
    if not isinstance(t, torch.Tensor):
        return t
    a = t.detach().resolve_conj().resolve_neg().numpy()
    a.flags.writeable = False  # (this view's flag only)
    return a


def _check_outputs(fn: Any, outs: Any) -> None:
    for o in outs:
        if not isinstance(o, torch.Tensor):
            raise at_caller(ArgumentError(
                f"{fn.__name__} returned a {type(o).__name__}: a torch op returns tensors",
                hint="return arrays (or a tuple of arrays) from the @hybrid function"))


class AutogradOp:
    """A ``@hybrid`` function called as a differentiable torch op (:func:`autograd_op`)."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn.__wrapped__)

    @public_api
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` recorded by autograd (backward: ``fn.vjp``)."""
        layout, inputs = Layout.bind(self.fn, args, kwargs)
        return PyascFunction.apply(self.fn, layout, *inputs)

    def __repr__(self) -> str:
        return f"<pyasc.torch.autograd_op of {self.fn.__name__}>"


@public_api
def autograd_op(fn: Any) -> AutogradOp:
    """``fn`` (a ``@hybrid`` function) as a callable torch op whose backward is
    ``fn.vjp``; see the module docstring."""
    if not callable(getattr(fn, "vjp", None)):
        raise at_caller(ArgumentError(
            f"autograd_op() takes a @hybrid function, not a {type(fn).__name__}",
            hint="decorate the function with @pyasc.hybrid first"))
    return AutogradOp(fn)
