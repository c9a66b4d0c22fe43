"""From a ``@hybrid`` function and a call signature to a verified IR module.

:func:`build_module` creates ``builtin.module { func.func @name(params) }``, binds the
parameters (arrays as buffers, with ``mem.dim`` for dynamic dims; scalars as weak or
strong scalars; compile-time arguments as Python values), lowers the body and returns
the flat results plus a :class:`ResultTemplate` that rebuilds the Python return value
(tuples, compile-time leaves, Python vs numpy scalars, parameters returned as-is).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyasc.errors import InternalCompilerError, IRVerificationError, UnsupportedSyntaxError
from pyasc.frontend import calls, rules  # noqa: F401 - rules: fills the dispatch tables
from pyasc.frontend.emit import Emitter
from pyasc.frontend.lowering import RET, CompileUnit, Lowering, NeedsConstant
from pyasc.frontend.signature import Param, Spec, const_value
from pyasc.frontend.values import Buffer, Scalar, Tensor
from pyasc.frontend.window_dims import window_dims
from pyasc.ir.builder import Builder
from pyasc.ir.core import Value
from pyasc.ir.ops import func, mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.types import DYN, MemRefType, ScalarType, index
from pyasc.ir.verifier import verify_module


@dataclass
class ResultTemplate:
    """How to rebuild the Python return value from the kernel's flat results (the
    ``shape`` is ``pyasc.jit.callplan``'s format: ``callplan.rebuild`` applies it)."""

    shape: Any = None
    params: tuple[int | None, ...] = ()


@dataclass
class Built:
    """The unoptimized module of one specialization and how to call it."""

    module: ModuleOp
    template: ResultTemplate
    callees: dict[object, str] = field(default_factory=dict)


def build_module(hf: Any, specs: dict[str, Spec], params: list[Param],
                 options: dict[str, Any]) -> Built:
    """Lower ``hf`` for the argument specs; raises located ``PyascError``\\ s."""
    src = hf.source_info()
    loc = src.location(src.tree)
    module = ModuleOp.empty()
    fn = FuncOp.empty(hf.__name__, [p.type for p in params], [],
                      [p.name for p in params], loc=loc)
    module.append(fn)
    unit = CompileUnit(Emitter(Builder.at_end(fn.entry, loc), options), options)
    for arg, p in zip(fn.entry.args, params, strict=True):
        unit.param_index[arg] = p.path
    scope: dict[str, object] = {RET: False}
    for name, spec in specs.items():
        scope[name] = _bind(unit.em, spec, (name,), fn.entry.args, params)
    scope.update(hf.bindings())
    lw = Lowering(unit, hf.__wrapped__, src, scope)
    unit.stack.append(hf)
    unit.callees[hf] = src.text
    value = calls.run_body(lw)
    dims = window_dims(fn, unit.param_index)
    if dims and options.get("window_sizes") != "generic":
        # one kernel per window size: the trip counts' dimensions by value (but past
        # the cap, ``jit/window_cap.py``, the generic kernel keeps them run-time)
        raise NeedsConstant(dims)
    with unit.em.b.location(loc):
        results, template = _flatten_result(value, lw)
        unit.em.op(func.ReturnOp(results))
    fn.set_result_types([v.type for v in results])
    _verify(module)
    return Built(module, template, dict(unit.callees))


def _verify(module: ModuleOp) -> None:
    """Invalid IR from the frontend is a pyasc bug, reported as such."""
    try:
        verify_module(module)
    except IRVerificationError as exc:
        raise InternalCompilerError(f"the frontend produced invalid IR: {exc.message}",
                                    filename=exc.filename, lineno=exc.lineno,
                                    col_offset=exc.col_offset) from exc


def _bind(em: Emitter, spec: Spec, path: tuple, args: list[Value],
          params: list[Param]) -> object:
    kind = spec[0]
    if kind in ("tuple", "list"):
        items = [_bind(em, s, (*path, i), args, params) for i, s in enumerate(spec[1:])]
        return tuple(items) if kind == "tuple" else items
    if kind == "const":
        return const_value(spec)
    idx = next(i for i, p in enumerate(params) if p.path == path)
    arg, p = args[idx], params[idx]
    if isinstance(p.type, MemRefType):
        dims = tuple(d if d != DYN else Scalar(em.result(
            mem.DimOp([arg], [index], {"axis": a})), weak=True, lo=0)
            for a, d in enumerate(p.type.shape))
        return Buffer(arg, dims, param=idx)
    return Scalar(arg, weak=p.weak)


def _flatten_result(value: object, lw: Lowering) -> tuple[list[Value], ResultTemplate]:
    """The flat results and their template.  A frontend array object stands for one
    numpy array: returned twice (``return r, r``), it is one result whose template
    leaf appears twice, so the caller gets one object, as from numpy."""
    results: list[Value] = []
    params: list[int | None] = []
    seen: dict[int, tuple] = {}  # id of a returned Tensor/Buffer -> its template leaf

    def walk(v: object) -> Any:
        if isinstance(v, tuple | list):
            return ("tuple" if isinstance(v, tuple) else "list", [walk(x) for x in v])
        if isinstance(v, Tensor | Buffer) and id(v) in seen:
            return seen[id(v)]
        if isinstance(v, Scalar | Tensor | Buffer):
            results.append(v.value)
            params.append(v.param if isinstance(v, Buffer) else None)
            leaf = ("result", len(results) - 1, _conversion(v))
            if not isinstance(v, Scalar):
                seen[id(v)] = leaf
            return leaf
        if isinstance(v, bool | int | float | str | type(None) | np.generic | np.dtype):
            return ("const", v)
        raise lw.error(UnsupportedSyntaxError, f"cannot return a {type(v).__name__}",
                       lw.src.tree)

    shape = walk(value)
    return results, ResultTemplate(shape, tuple(params) if any(
        p is not None for p in params) else ())


def _conversion(v: Scalar | Tensor | Buffer) -> str:
    """``"array"``, ``"py:<int|float|bool>"`` (weak scalars) or ``"np:<dtype>"``."""
    if not isinstance(v, Scalar):
        return "array"
    t: ScalarType = v.type
    weak = {"index": "int", "f64": "float", "i1": "bool"}
    if v.weak and t.name in weak:
        return "py:" + weak[t.name]
    return "np:" + t.to_numpy().name


def result_params(template: ResultTemplate, n_results: int) -> tuple[int | None, ...]:
    """``Program.result_params`` of a template (one entry per flat result)."""
    return template.params if template.params else (None,) * n_results
