"""Automatic gradients of ``@hybrid`` functions: ``fn.vjp``, ``pyasc.grad``,
``pyasc.value_and_grad``.

A :class:`Backward` is the program of a ``HybridFunction`` derived from another one
(``fn._derived_program``): for each specialization it asks the frontend for the
forward's IR, hands it to ``pyasc.ir.autodiff.build_backward``, and the derived
function compiles the result like any function (same passes, same backends, same
specialization and kernel caches, keyed by the forward's source and the kind of
gradient).  This module never imports ``decorator`` (which imports ``gradients``,
which asks this module for ``fn.vjp``).

* ``mode="vjp"``: called as ``g(*inputs, dout)``; returns one entry per input of the
  forward (its inputs as ``fn.vjp`` binds them): the gradient of a float array, zeros
  for an integer or boolean array, ``None`` for anything else.
* ``mode="grad"`` / ``"value_and_grad"``: called as the forward is; its result must be
  a scalar; returns the gradient of argument ``argnums`` (an int: one array; a tuple:
  a tuple), after the value for ``value_and_grad``.

``target="interpret"`` runs the backward's unoptimized IR in the IR interpreter (the
reference of every pass), since the forward's Python has no backward to run.
"""

from __future__ import annotations

import inspect
from typing import Any

from pyasc.callsite import at_caller, public_api
from pyasc.errors import ArgumentError
from pyasc.frontend.signature import Param, Spec, flatten_args, param_type, params_of
from pyasc.jit.callplan import rebuild

MODES = ("vjp", "grad", "value_and_grad")


class Backward:
    """The backward program of ``forward`` (a ``HybridFunction``), compiled by the
    ``HybridFunction`` that ``forward._derived_program(Backward(...))`` returns."""

    def __init__(self, forward: Any, mode: str, argnums: int | tuple[int, ...] = 0) -> None:
        assert mode in MODES
        self.forward = forward
        self.mode = mode
        self.argnums = argnums
        self.name = f"{forward.__name__}_{mode}"
        self.signature = forward.__signature__
        self.dout: str | None = None
        if mode == "vjp":
            self.signature, self.dout = _with_dout(self.signature)
        self.key_prefix = f"# autodiff {mode} {argnums!r}\n"

    def build(self, specs: dict[str, Spec], params: list[Param],
              options: dict[str, Any]) -> Any:
        """The backward's unoptimized module for ``specs`` (a ``compiler.Built``)."""
        from pyasc.frontend.compiler import Built, ResultTemplate, build_module
        from pyasc.ir.autodiff import build_backward
        from pyasc.ir.ops.func import ModuleOp

        fwd_specs = {k: v for k, v in specs.items() if k != self.dout}
        fwd_params = params_of(fwd_specs)
        from pyasc.frontend.custom_vjp import AUTODIFF_CALLS

        # calls of functions with a registered gradient stay whole (custom_vjp)
        built = build_module(self.forward, fwd_specs, fwd_params,
                             {**options, AUTODIFF_CALLS: True})
        paths = [p.path for p in fwd_params]
        layout = [None if p.path == (self.dout,) else paths.index(p.path) for p in params]
        entries = self._entries(fwd_specs)
        wrt = [paths.index(path) for path in entries if path is not None]
        dout = param_type(specs[self.dout])[0] if self.dout else None
        value = self.mode == "value_and_grad"
        bwd = build_backward(built.module.get(self.forward.__name__), self.name,
                             layout, wrt, dout, with_value=value)
        module = ModuleOp.empty()
        module.append(bwd)
        shape = _template(entries, self.mode == "vjp" or isinstance(self.argnums, tuple),
                          int(value))
        if value:
            shape = ("tuple", [built.template.shape, shape])
        return Built(module, ResultTemplate(shape), dict(built.callees))

    def _entries(self, specs: dict[str, Spec]) -> list[tuple | None]:
        """The flat parameter path of each gradient returned (``None``: not an array)."""
        if self.mode == "vjp":
            return [path if spec[0] == "array" else None
                    for path, spec in _inputs(self.forward.__signature__, specs)]
        nums = self.argnums if isinstance(self.argnums, tuple) else (self.argnums,)
        out = []
        for k in nums:
            name = _positional(self.forward)[k]
            spec = specs[name]
            if spec[0] != "array" or spec[1] not in ("float16", "float32", "float64"):
                raise ArgumentError(f"{self.mode}: argument '{name}' (argnums={k}) is "
                                    "not a float array", hint="differentiate float arrays")
            out.append((name,))
        return out

    def interpret(self, spec: Any, arguments: dict[str, Any]) -> Any:
        """A call on ``target="interpret"``: the backward's unoptimized IR run by the IR
        interpreter (the forward's Python has no backward to run)."""
        from pyasc.ir.interpreter import Interpreter
        from pyasc.ir.parser import parse_module

        flat = flatten_args(spec.specs, arguments)
        results = Interpreter(parse_module(spec.unoptimized)).call(self.name, *flat)
        return rebuild(spec.template.shape, results, flat, spec.template.params)


def _with_dout(sig: inspect.Signature) -> tuple[inspect.Signature, str]:
    """``sig`` plus a keyword-only ``dout`` parameter (renamed if the function has a
    parameter of that name): ``fn.vjp`` passes it by keyword."""
    params = list(sig.parameters.values())
    name = "dout"
    while name in sig.parameters:
        name = "_" + name
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    params.insert(at, inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY))
    return sig.replace(parameters=params), name


def _inputs(sig: inspect.Signature, specs: dict[str, Spec]) -> list[tuple[tuple, Spec]]:
    """Each input as ``fn.vjp`` counts them (a ``*args`` tuple item by item)."""
    out = []
    for name, spec in specs.items():
        p = sig.parameters.get(name)
        if p is not None and p.kind is p.VAR_POSITIONAL:
            out += [((name, i), s) for i, s in enumerate(spec[1:])]
        else:
            out.append(((name,), spec))
    return out


def _template(entries: list[tuple | None], as_tuple: bool, first: int) -> Any:
    leaves, j = [], first
    for path in entries:
        if path is None:
            leaves.append(("const", None))
        else:
            leaves.append(("result", j, "array"))
            j += 1
    return ("tuple", leaves) if as_tuple else leaves[0]


def _positional(fn: Any) -> list[str]:
    return [n for n, p in fn.__signature__.parameters.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _derive(fn: Any, mode: str, argnums: Any) -> Any:
    if not hasattr(fn, "_derived_program"):
        raise at_caller(ArgumentError(f"cannot differentiate a {type(fn).__name__}",
                                      hint="decorate the function with @hybrid"))
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    n = len(_positional(fn))
    if not nums or not all(isinstance(k, int) and 0 <= k < n for k in nums):
        raise at_caller(ArgumentError(
            f"argnums={argnums!r}: '{fn.__name__}' has {n} positional parameter(s)",
            hint="an int or a tuple of ints indexing the positional parameters"))
    return fn._derived_program(Backward(fn, mode, argnums))


@public_api
def grad(fn: Any, argnums: int | tuple[int, ...] = 0) -> Any:
    """The gradient of the scalar-valued ``@hybrid`` function ``fn`` with respect to
    its positional argument(s) ``argnums``: a compiled function taking ``fn``'s
    arguments (JAX's ``grad``; a tuple ``argnums`` gives a tuple of gradients)."""
    return _derive(fn, "grad", argnums)


@public_api
def value_and_grad(fn: Any, argnums: int | tuple[int, ...] = 0) -> Any:
    """Like :func:`grad`, returning ``(value, gradient)`` from one compiled program."""
    return _derive(fn, "value_and_grad", argnums)


def automatic_vjp(fn: Any) -> Any:
    """The compiled automatic ``vjp`` of ``fn``: called ``g(*inputs, dout=...)``
    (the keyword is ``g.dout_name``)."""
    g = fn._derived_program(Backward(fn, "vjp"))
    g.dout_name = g._program.dout
    return g
