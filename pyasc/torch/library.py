"""``pyasc.torch.custom_op(fn)``: a ``@hybrid`` function as a ``torch.library`` custom op.

``torch.compile`` traces a custom op as one node of its graph (no graph break) instead
of looking inside it.  Two ops are registered per function, in the ``pyasc`` namespace:

* ``pyasc::<name>``: runs ``fn`` on the tensors (the eager bridge, no copies).  Its fake
  (meta) implementation gives the shapes and dtypes of the results from the types of
  ``fn``'s compiled specialization for the inputs' shapes and dtypes, without running it.
* ``pyasc::<name>_vjp`` (``dout`` first, then the inputs): runs ``fn.vjp``; the
  forward op's autograd formula calls it, so the backward pass is one node of the
  compiled backward graph too.

The schema comes from ``fn``'s signature: a parameter without a default is a
``Tensor``; one with a ``bool``/``int``/``float`` default is that scalar type.  Other
parameters (``*args``, keyword-only, other defaults) are refused (E50040): bind them
first with a wrapper ``@hybrid`` function.  ``outputs=n`` declares ``n`` result tensors
(``fn`` returns a tuple of ``n`` arrays).  Results are fresh tensors (a returned input
is copied: custom ops must not alias their inputs); shapes that depend on the data are
not supported by the fake implementation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pyasc.callsite import at_caller, public_api
from pyasc.errors import ArgumentError
from pyasc.torch.autograd import grad_tensors, host_array, unaliased
from pyasc.torch.tensors import NUMPY_DTYPES

TORCH_DTYPES = {v: k for k, v in NUMPY_DTYPES.items()}

_SCALARS = {bool: "bool", int: "int", float: "float"}


def _schema_args(fn: Any) -> list[tuple[str, str]]:
    """(name, schema type) of each parameter of ``fn``; refuses the others."""
    out = []
    for p in fn.__signature__.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise at_caller(ArgumentError(
                f"custom_op({fn.__name__}): parameter '{p.name}' is {p.kind.description}",
                hint="a custom op takes tensors and numbers by position"))
        if p.default is p.empty:
            out.append((p.name, "Tensor"))
        elif type(p.default) in _SCALARS:
            kind = _SCALARS[type(p.default)]
            out.append((p.name, f"{kind} {p.name}={p.default!r}"))
        else:
            raise at_caller(ArgumentError(
                f"custom_op({fn.__name__}): parameter '{p.name}' defaults to a "
                f"{type(p.default).__name__}", hint="a custom op's parameters are tensors "
                "(no default) or bool/int/float numbers (with a default)"))
    return out


def _declare(args: list[tuple[str, str]], defaults: bool = True) -> str:
    return ", ".join((t if defaults else t.split("=")[0]) if " " in t else f"{t} {n}"
                     for n, t in args)


def _outputs(n: int) -> str:
    return "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"


def _stand_ins(args: tuple) -> list[Any]:
    """Arrays with the inputs' shapes and dtypes (uninitialised: never read)."""
    return [np.empty(tuple(a.shape), NUMPY_DTYPES[a.dtype]) if isinstance(a, torch.Tensor)
            else a for a in args]


def _fake_results(fn: Any, args: tuple, n: int) -> Any:
    """Empty tensors shaped like ``fn``'s results for ``args`` (from its IR types)."""
    program = fn.bind(*_stand_ins(args)).program
    types = program.module.get(program.entry).function_type.results
    shape = program.call_data["template"]["shape"]
    leaves = shape[1] if shape[0] in ("tuple", "list") else [shape]
    if len(leaves) != n or any(leaf[0] != "result" for leaf in leaves):
        raise ArgumentError(f"{fn.__name__} returns {shape}, not {n} array(s)",
                            hint="pass outputs= the number of arrays it returns")
    out = []
    for leaf in leaves:
        t = types[leaf[1]]
        dims = tuple(getattr(t, "shape", ()))
        if any(d < 0 for d in dims):
            raise ArgumentError(f"{fn.__name__}: a result shape depends on the data",
                                hint="custom ops need result shapes known from the inputs")
        dtype = np.dtype(getattr(t, "element", t).to_numpy())
        out.append(torch.empty(dims, dtype=TORCH_DTYPES[dtype]))
    return out[0] if n == 1 else tuple(out)


class CustomOp:
    """The registered ops of one ``@hybrid`` function (:func:`custom_op`)."""

    def __init__(self, fn: Any, name: str, outputs: int) -> None:
        self.fn, self.outputs = fn, outputs
        params = _schema_args(fn)
        self.tensor_params = [i for i, (_, t) in enumerate(params) if t == "Tensor"]
        douts = "Tensor dout" if outputs == 1 else "Tensor[] dout"
        grads = _outputs(len(self.tensor_params))
        self.op = torch.library.custom_op(
            f"pyasc::{name}", self._forward, mutates_args=(),
            schema=f"({_declare(params)}) -> {_outputs(outputs)}")
        self.op.register_fake(lambda *a: _fake_results(fn, a, outputs))
        self.vjp = torch.library.custom_op(
            f"pyasc::{name}_vjp", self._vjp, mutates_args=(),
            schema=f"({douts}, {_declare(params, defaults=False)}) -> {grads}")
        self.vjp.register_fake(self._fake_vjp)
        self.op.register_autograd(self._backward, setup_context=self._setup)

    def _forward(self, *args: Any) -> Any:
        out = self.fn(*args)
        many = isinstance(out, tuple | list)
        outs = unaliased(out if many else (out,), args)
        return tuple(outs) if many else outs[0]

    def _vjp(self, dout: Any, *inputs: Any) -> Any:
        douts = [host_array(d) for d in (dout if self.outputs > 1 else (dout,))]
        hosts = [host_array(a) for a in inputs]
        grads = self.fn.vjp(*hosts, tuple(douts) if self.outputs > 1 else douts[0])
        out = tuple(grad_tensors([grads[i] for i in self.tensor_params], hosts + douts))
        return out[0] if len(out) == 1 else out

    def _fake_vjp(self, dout: Any, *inputs: Any) -> Any:
        out = tuple(torch.empty_like(inputs[i], memory_format=torch.contiguous_format)
                    for i in self.tensor_params)
        return out[0] if len(out) == 1 else out

    def _setup(self, ctx: Any, inputs: tuple, output: Any) -> None:
        ctx.inputs = inputs  # (the op's own inputs: what vjp needs)

    def _backward(self, ctx: Any, *douts: Any) -> tuple[Any, ...]:
        dout = list(douts) if self.outputs > 1 else douts[0]
        grads = self.vjp(dout, *ctx.inputs)
        grads = grads if isinstance(grads, tuple) else (grads,)
        out: list[Any] = [None] * len(ctx.inputs)
        for i, g in zip(self.tensor_params, grads, strict=True):
            out[i] = g
        return tuple(out)


@public_api
def custom_op(fn: Any, name: str | None = None, *, outputs: int = 1) -> Any:
    """Register ``fn`` (a ``@hybrid`` function) as ``torch.ops.pyasc.<name>`` with its
    backward ``fn.vjp`` (see the module docstring); returns the op (torch's
    ``CustomOpDef``: calling it is calling ``torch.ops.pyasc.<name>``, which
    ``torch.compile`` keeps in its graph)."""
    if not callable(getattr(fn, "vjp", None)):
        raise at_caller(ArgumentError(
            f"custom_op() takes a @hybrid function, not a {type(fn).__name__}",
            hint="decorate the function with @pyasc.hybrid first"))
    return CustomOp(fn, name or fn.__name__, outputs).op
