"""Gradients of a ``@hybrid`` function: ``@fn.def_grad`` and ``fn.vjp(*inputs, dout)``.

``@fn.def_grad`` registers a gradient function, compiled like ``fn`` (same options).
It takes the forward inputs then ``dout`` (the gradient of the output): the inputs as
``fn`` binds them, defaults filled in, in ``fn``'s parameter order (keyword-only ones by
keyword).  ``fn.vjp(*inputs, dout)`` runs it and returns a tuple with one entry per
input: the gradient for an array input (checked: an ndarray of the input's shape and
dtype), ``None`` for any other input.  Given torch tensors (inputs or ``dout``) it
returns tensors: the arguments are viewed as arrays over the tensors' memory and the
gradients wrapped without copies (``pyasc.jit.tensors``).  The gradient function returns
either one value per array input or one per input (``None`` for the others); a single
array input may get a bare array.  A wrong count, kind, shape or dtype is a coded error (E50001,
E50002) located at the gradient function's ``return``.

Without a registered gradient ``vjp`` differentiates the function automatically
(``pyasc.jit.backward``, ``pyasc.ir.autodiff``): a backward program compiled per
specialization, with the same result convention (for an integer or boolean array
input, zeros of its shape and dtype).  What cannot be differentiated is E50013 at the
line of the operation; ``docs/autodiff.md`` has the table.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from pyasc.callsite import at_caller, public_api
from pyasc.errors import (
    ArgumentError,
    PyascError,
    ShapeInferenceError,
    TypeMismatchError,
)
from pyasc.frontend.callee import Callee
from pyasc.jit.tensors import unwrap

NO_GRADIENT_HINT = "register one: @fn.def_grad def fn_grad(*inputs, dout): ..."


class Differentiable:
    """``def_grad`` and ``vjp`` of ``HybridFunction`` (a mixin: it provides
    ``__name__``, ``__signature__`` and ``_derived(fn)``, a function compiled with the
    same options)."""

    __name__: str
    __signature__: inspect.Signature
    _grad: Any = None
    _positional_names: tuple[tuple[str, ...], str | None]  # (TensorOps's)

    def _derived(self, fn: Callable) -> Any:  # pragma: no cover - HybridFunction's
        raise NotImplementedError

    @public_api
    def def_grad(self, grad_fn: Callable) -> Any:
        """Decorator: register the gradient of this function (compiled like it); it
        takes the forward inputs then ``dout``.  Returns the compiled gradient."""
        g = grad_fn if isinstance(grad_fn, Callee) else self._derived(grad_fn)
        self._grad = g
        return g

    @public_api
    def vjp(self, /, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``fn.vjp(*inputs, dout)``: the gradient of each input given ``dout`` (the
        registered ``def_grad``'s, checked), ``None`` for non-array inputs."""
        if not args:
            raise at_caller(ArgumentError(f"{self.__name__}.vjp(): missing dout",
                                          hint="call fn.vjp(*inputs, dout)"))
        positional, var = self._positional_names
        bridged = unwrap(((*positional, "dout"), var), args, kwargs)
        if bridged is None:
            return self._vjp(args, kwargs)
        # tensors in (arrays over their memory), tensors out (over the results' arrays)
        return bridged.wrap(self._vjp(bridged.args, bridged.kwargs))

    def _vjp(self, args: tuple, kwargs: dict[str, Any]) -> tuple[Any, ...]:
        if self._grad is None:
            auto = self._automatic_vjp()
            return auto(*args[:-1], **kwargs, **{auto.dout_name: args[-1]})
        bound = self._bind_inputs(args[:-1], kwargs)
        positional = [v for name, v in bound.items() if not _keyword_only(self, name)]
        keywords = {n: v for n, v in bound.items() if _keyword_only(self, n)}
        grads = self._grad(*positional, args[-1], **keywords)
        return _checked(self._grad, list(bound.items()), grads)

    def registered_gradient(self) -> Any:
        """The ``@fn.def_grad`` gradient (automatic differentiation uses it where this
        function is called inside another one)."""
        return self._grad

    def _automatic_vjp(self) -> Any:
        """The compiled automatic gradient (made on first use, then kept)."""
        auto = self.__dict__.get("_auto_vjp")
        if auto is None:
            from pyasc.jit.backward import automatic_vjp

            auto = self._auto_vjp = automatic_vjp(self)
        return auto

    def _bind_inputs(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            bound = self.__signature__.bind(*args, **kwargs)
        except TypeError as exc:
            raise at_caller(ArgumentError(f"{self.__name__}.vjp(): {exc}",
                                          hint="call fn.vjp(*inputs, dout)")) from None
        bound.apply_defaults()
        out: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            kind = self.__signature__.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                out.update({f"{name}[{i}]": v for i, v in enumerate(value)})
            elif kind is inspect.Parameter.VAR_KEYWORD:
                out.update(value)
            else:
                out[name] = value
        return out


def _keyword_only(fn: Differentiable, name: str) -> bool:
    p = fn.__signature__.parameters.get(name)
    return p is not None and p.kind is inspect.Parameter.KEYWORD_ONLY


def _checked(grad_fn: Any, inputs: list[tuple[str, Any]], grads: Any) -> tuple[Any, ...]:
    """One checked gradient per input (``None`` for non-arrays)."""
    arrays = [i for i, (_, v) in enumerate(inputs) if isinstance(v, np.ndarray)]
    if not isinstance(grads, tuple | list):
        grads = (grads,)
    if len(grads) == len(inputs):
        extra = [inputs[i][0] for i, g in enumerate(grads)
                 if i not in arrays and g is not None]
        if extra:
            raise _at_return(grad_fn, TypeMismatchError(
                f"the gradient function returned a value for '{extra[0]}', which is not "
                "an array", hint="return None for inputs that are not arrays"))
        grads = [grads[i] for i in arrays]
    elif len(grads) != len(arrays):
        names = ", ".join(inputs[i][0] for i in arrays)
        raise _at_return(grad_fn, TypeMismatchError(
            f"the gradient function returned {len(grads)} value(s) for "
            f"{len(arrays)} array input(s) ({names})",
            hint="return one gradient per array input, in the order of the inputs"))
    out: list[Any] = [None] * len(inputs)
    for i, g in zip(arrays, grads, strict=True):
        out[i] = _check_one(grad_fn, inputs[i], g)
    return tuple(out)


def _check_one(grad_fn: Any, item: tuple[str, Any], g: Any) -> np.ndarray:
    name, x = item
    if not isinstance(g, np.ndarray | np.generic):
        raise _at_return(grad_fn, TypeMismatchError(
            f"the gradient of '{name}' is a {type(g).__name__}, not an array",
            hint="return an array of the input's shape and dtype"))
    g = np.asarray(g)
    if g.shape != x.shape:
        raise _at_return(grad_fn, ShapeInferenceError(
            f"the gradient of '{name}' has shape {g.shape}, the input {x.shape}",
            hint="a gradient has its input's shape: reduce over broadcast axes"))
    if g.dtype != x.dtype:
        raise _at_return(grad_fn, TypeMismatchError(
            f"the gradient of '{name}' is {g.dtype}, the input {x.dtype}",
            hint=f"cast it: .astype(np.{x.dtype})"))
    return g


def _at_return(grad_fn: Any, err: PyascError) -> PyascError:
    """Locate ``err`` at the gradient function's last ``return`` (else its ``def``)."""
    try:
        src = grad_fn.source_info()
    except PyascError:
        return at_caller(err)
    returns = [n for n in ast.walk(src.tree) if isinstance(n, ast.Return)]
    node = max(returns, key=lambda n: (n.lineno, n.col_offset)) if returns else src.tree
    return src.locate(err, node)
