"""``@hybrid``: the decorator and the :class:`HybridFunction` it returns.

A ``HybridFunction`` keeps the wrapped function's ``__name__``, ``__doc__``,
``__wrapped__`` and signature.  Calling it with ``target="interpret"`` runs the Python
function itself (the reference); any other target specializes on the call signature
(see ``specialize``), compiles the :class:`~pyasc.backend.base.Program` once per
specialization and target with ``get_backend(target).compile``, and calls the kernel
with the flat arguments.  ``fn.ir(*args)``, ``fn.dump_ir(path, *args)`` and
``fn.specialize(*args)`` expose the IR and the program.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyasc.backend.base import CompiledKernel, Program, get_backend
from pyasc.errors import ArgumentError, InternalCompilerError, InvalidOptionError, PyascError
from pyasc.frontend.callsite import at_caller
from pyasc.frontend.compiler import ResultTemplate, build_module, result_params
from pyasc.frontend.lowering import NeedsConstant
from pyasc.frontend.options import Options, make_options, resolve_target
from pyasc.frontend.source import SourceInfo, load_source
from pyasc.frontend.specialize import Param, Spec, flatten_args, params_of, spec_of


@dataclass
class Specialization:
    """One compiled-to-IR call signature of a hybrid function."""

    key: tuple
    specs: dict[str, Spec]
    params: list[Param]
    program: Program
    unoptimized: str
    template: ResultTemplate


class HybridFunction:
    """A function compiled by pyasc on first call for each call signature."""

    def __init__(self, fn: Callable, options: Options, given: Iterable[str] = ()) -> None:
        if not isinstance(fn, types.FunctionType):
            raise at_caller(InvalidOptionError(
                f"@hybrid decorates plain functions, not {type(fn).__name__}"))
        functools.update_wrapper(self, fn)
        self.__signature__ = inspect.signature(fn)
        clash = sorted(set(given) & set(self.__signature__.parameters))
        if clash:
            raise at_caller(InvalidOptionError(
                f"option {clash[0]!r} has the name of a parameter of '{fn.__name__}'",
                hint="rename the parameter"))
        self.options = options
        self._source: SourceInfo | None = None
        self._specs: dict[tuple, Specialization] = {}
        self._kernels: dict[tuple, CompiledKernel] = {}
        self._by_value: set[tuple] = set()
        self._grad: HybridFunction | None = None

    def __repr__(self) -> str:
        return f"<hybrid function {self.__qualname__}>"  # type: ignore[attr-defined]

    def source_info(self) -> SourceInfo:
        """The parsed source of the wrapped function (read once)."""
        if self._source is None:
            self._source = load_source(self.__wrapped__)  # type: ignore[attr-defined]
        return self._source

    # -- specialization
    def _arguments(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            bound = self.__signature__.bind(*args, **kwargs)
        except TypeError as exc:
            raise at_caller(ArgumentError(f"{self.__name__}(): {exc}")) from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def _specialization(self, args: tuple, kwargs: dict[str, Any]
                        ) -> tuple[Specialization, dict[str, Any]]:
        arguments = self._arguments(args, kwargs)
        while True:
            try:
                specs = {name: spec_of(v, (name,), self.options.dynamic_shape, self._by_value)
                         for name, v in arguments.items()}
            except ArgumentError as exc:
                raise at_caller(exc) from None
            key = tuple(specs.items())
            spec = self._specs.get(key)
            if spec is not None:
                return spec, arguments
            try:
                spec = self._compile(key, specs)
            except NeedsConstant as nc:
                if nc.params <= self._by_value:
                    raise InternalCompilerError("value specialization did not converge") \
                        from nc
                self._by_value |= nc.params
                continue
            self._specs[key] = spec
            return spec, arguments

    def _compile(self, key: tuple, specs: dict[str, Spec]) -> Specialization:
        params = params_of(specs)
        options = self.options.as_dict()
        built = build_module(self, specs, params, options)
        unoptimized = str(built.module)
        module = built.module.clone()
        _optimize(module, options)
        n_results = len(module.get(self.__name__).function_type.results)  # type: ignore
        program = Program(module=module, entry=self.__name__,  # type: ignore[arg-type]
                          cache_key=self._cache_key(key, built.callees), options=options,
                          result_params=result_params(built.template, n_results),
                          source_file=self.source_info().filename)
        return Specialization(key, specs, params, program, unoptimized, built.template)

    def _cache_key(self, key: tuple, callees: dict[object, str]) -> str:
        from pyasc import __version__

        h = hashlib.sha256()
        for fn, text in sorted(callees.items(), key=lambda kv: kv[0].__qualname__):  # type: ignore
            h.update(f"{fn.__module__}.{fn.__qualname__}\n{text}\n".encode())  # type: ignore
        h.update(repr(key).encode())
        h.update(repr(sorted(self.options.as_dict().items())).encode())
        h.update(__version__.encode())
        return h.hexdigest()

    # -- public inspection
    def specialize(self, *args: Any, **kwargs: Any) -> Program:
        """The :class:`Program` (optimized IR module) for this call signature."""
        return self._specialization(args, kwargs)[0].program

    def ir(self, *args: Any, optimized: bool = True, **kwargs: Any) -> str:
        """IR text of this call's specialization, after (or before) the default passes."""
        spec = self._specialization(args, kwargs)[0]
        return str(spec.program.module) if optimized else spec.unoptimized

    def dump_ir(self, path: str | Path, *args: Any, **kwargs: Any) -> Path:
        """Write the optimized IR of this call's specialization to ``path``."""
        out = Path(path)
        out.write_text(self.ir(*args, **kwargs) + "\n")
        return out

    def kernel(self, *args: Any, target: str | None = None, **kwargs: Any) -> CompiledKernel:
        """The compiled kernel of this call's specialization for ``target`` (default:
        the function's target); compiles it on first use."""
        spec, _ = self._specialization(args, kwargs)
        return self._kernel_for(spec, target or resolve_target(self.options))

    def llvm_ir(self, *args: Any, **kwargs: Any) -> str:
        """Optimized LLVM IR of this call's specialization (CPU backend)."""
        return self.kernel(*args, target="cpu", **kwargs).llvm_ir  # type: ignore[attr-defined]

    def asm(self, *args: Any, **kwargs: Any) -> str:
        """Host assembly of this call's specialization (CPU backend)."""
        return self.kernel(*args, target="cpu", **kwargs).asm  # type: ignore[attr-defined]

    def _kernel_for(self, spec: Specialization, target: str) -> CompiledKernel:
        if target == "interpret":
            raise ArgumentError("the interpret target has no compiled kernel",
                                hint="pass target='cpu' or 'ascend-sim'")
        kernel = self._kernels.get((spec.key, target))
        if kernel is None:
            kernel = get_backend(target).compile(spec.program)
            self._kernels[(spec.key, target)] = kernel
        return kernel

    # -- calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = resolve_target(self.options)
        if target == "interpret":
            return self.__wrapped__(*args, **kwargs)  # type: ignore[attr-defined]
        spec, arguments = self._specialization(args, kwargs)
        return _invoke(self._kernel_for(spec, target), spec, arguments)

    def run_with(self, compile_fn: Callable[[Program], CompiledKernel], *args: Any,
                 **kwargs: Any) -> Any:
        """Call through ``compile_fn(program)`` instead of a target's backend (tests,
        the IR interpreter, experimental backends); nothing is cached."""
        spec, arguments = self._specialization(args, kwargs)
        return _invoke(compile_fn(spec.program), spec, arguments)

    # -- gradients
    def def_grad(self, grad_fn: Callable) -> HybridFunction:
        """Decorator: register the gradient of this function (compiled like it)."""
        g = grad_fn if isinstance(grad_fn, HybridFunction) else \
            HybridFunction(grad_fn, self.options)
        self._grad = g
        return g

    def grad(self, *args: Any, **kwargs: Any) -> Any:
        """Call the registered gradient function."""
        if self._grad is None:
            raise at_caller(ArgumentError(f"'{self.__name__}' has no gradient",
                                          hint="define one with @fn.def_grad"))
        return self._grad(*args, **kwargs)


def _invoke(kernel: CompiledKernel, spec: Specialization, arguments: dict[str, Any]) -> Any:
    flat = flatten_args(spec.specs, arguments)
    return spec.template.rebuild(list(kernel(flat)), flat)


def _optimize(module: Any, options: dict[str, Any]) -> None:
    from pyasc.ir.passes import DEFAULT_PIPELINE, run_pipeline

    run_pipeline(module, DEFAULT_PIPELINE, options)


def hybrid(fn: Callable | None = None, /, **options: Any) -> Any:
    """Compile ``fn`` with pyasc: ``@hybrid`` or ``@hybrid(target=..., ...)``."""
    try:
        opts = make_options(options)
    except PyascError as exc:
        raise at_caller(exc) from None
    if fn is None:
        return lambda f: HybridFunction(f, opts, options)
    return HybridFunction(fn, opts, options)
