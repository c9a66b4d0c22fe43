"""``@hybrid``: the decorator and the :class:`HybridFunction` it returns.

A ``HybridFunction`` keeps the wrapped function's ``__name__``, ``__doc__``,
``__wrapped__`` and signature.  Calling it with ``target="interpret"`` runs the Python
function itself (the reference); any other target specializes on the call signature
(see ``specialize``) and calls the compiled kernel of that specialization.

Calls are dispatched in three steps (``dispatch``): the native entries of the last few
specializations called, then a table from a cheap signature of the arguments to the
specialization's entry, then the full path: bind the arguments, compute the
specialization key, then the program key (``fingerprint``: source, captured values,
key, options, versions; no IR needed), ask the backend to ``load`` a kernel stored under
it (a fresh process then runs no frontend at all), and only if there is none build the
IR (``compiler``), run the default passes and ``compile``.

``fn.bind(*args, **kwargs)`` binds a call for inspection (``inspection.BoundCall``:
``.ir()``, ``.kernel(target=...)``, ``.ascendc(soc=...)``...); the shortcuts ``fn.ir``,
``fn.dump_ir``, ``fn.specialize``, ``fn.kernel``, ``fn.llvm_ir``, ``fn.asm`` and
``fn.ascendc`` build the IR on demand.  Decorator options, inspection options and the
function's parameters never clash: a parameter may be called ``target`` or ``soc``.

Arguments that must be known at compile time (an ``axis=``...) are discovered while
compiling (``NeedsConstant``) and then specialized by value; the disk cache remembers
which they are for the key that asked, so a fresh process finds the kernel directly.

Threads: calls from any number of threads are safe, first calls included; the design
(one build per key, by-value snapshots, immutable fast-path state) is described in
``dispatch``'s docstring.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyasc.backend.base import CompiledKernel, Program, get_backend
from pyasc.callsite import at_caller, for_user, public_api, user_error
from pyasc.errors import ArgumentError, InternalCompilerError, UnsupportedSyntaxError
from pyasc.frontend.callee import Callee
from pyasc.frontend.signature import Param, Spec, params_of
from pyasc.jit.arguments import prepare_bound, prepare_call, refuse_device_arrays
from pyasc.jit.callplan import native_request, template_to_json
from pyasc.jit.decoratable import called_as_classmethod, method_error, refusal
from pyasc.jit.dispatch import CallTable
from pyasc.jit.entries import ByValue, EntryMaker
from pyasc.jit.facts import store_by_value
from pyasc.jit.fingerprint import parse_source, program_key, source_text
from pyasc.jit.gradients import Differentiable
from pyasc.jit.ice import internal_errors, source_reproducer
from pyasc.jit.inspection import Inspection
from pyasc.jit.options import Options, make_options, resolve_target, target_env
from pyasc.jit.specializations import (
    Specialization,
    SpecializationsView,
    describe_arguments,
    signature_text,
)
from pyasc.jit.specialize import is_shape_path, spec_of
from pyasc.jit.tensors import TensorOps, unwrap
from pyasc.jit.window_cap import WindowSizes, window_size
from pyasc.runtime import MISS
from pyasc.runtime.flight import SingleFlight
from pyasc.runtime.profiler import profiled_call, watch

if TYPE_CHECKING:  # pragma: no cover - the compiler is imported when something compiles
    from pyasc.frontend.source import SourceInfo

RECENT_NATIVES = 4
"""Native entries a call tries before computing its signature (each refuses a call of
another specialization in ~50 ns)."""
_PROFILING = False  # a profiler.Profile is recording (kept by ``watch``)


def _profiling(recording: bool) -> None:
    global _PROFILING
    _PROFILING = recording


watch(_profiling)


class HybridFunction(EntryMaker, Inspection, Differentiable, TensorOps, Callee):
    """A function compiled by pyasc on first call for each call signature."""

    def __init__(self, fn: Callable, options: Options,
                 signature: inspect.Signature | None = None, program: Any = None) -> None:
        refused = refusal(fn) if not isinstance(fn, HybridFunction) else \
            UnsupportedSyntaxError(
                f"'{fn.__name__}' is already a @hybrid function",
                hint=f"to compile it with other options, decorate the plain function: "
                f"hybrid({fn.__name__}.__wrapped__, ...)")
        if refused is not None:
            raise at_caller(refused)
        functools.update_wrapper(self, fn)
        # (a compiled operator's compute takes its state first: ``operator``)
        self.__signature__ = signature or inspect.signature(fn)
        self.options = options
        self._source: SourceInfo | None = None
        self._key_text: str | None = None
        self._flights = SingleFlight()
        self._specs: dict[tuple, Specialization] = {}
        self._kernels: dict[tuple, CompiledKernel] = {}
        self._calls = CallTable(self.__signature__, options.dynamic_shape)
        # (PYASC_TARGET value, last call's native entry, recent ones): replaced whole,
        # so a reader never sees a mix of two updates
        self._hot: tuple[Any, Any, tuple] = (None, None, ())
        self._pinned = options.target is not None  # the environment cannot change it
        self._method_of: type | None = None  # the class whose body holds it (a method)
        # another program built from fn's IR (a ``backward.Backward``: its gradient)
        self._program = program
        # window sizes specialized (the first MAX_WINDOW_SIZES), the generic keys past it
        self._windows = WindowSizes(fn)

    def __set_name__(self, owner: type, name: str) -> None:
        self._method_of = owner  # stored in a class body: calls would pass `self`

    def __repr__(self) -> str:
        return f"<hybrid function {self.__qualname__}>"  # type: ignore[attr-defined]

    # for tests and diagnostics: the by-value paths, the native entries tried first
    _by_value = property(lambda self: self._calls.by_value)
    _fast = property(lambda self: self._hot[1])
    _recent = property(lambda self: self._hot[2])

    def source_info(self) -> SourceInfo:
        """The parsed source of the wrapped function (read once)."""
        if self._source is None:
            from pyasc.frontend.source import load_source

            fn = self.__wrapped__  # type: ignore[attr-defined]
            self._source = parse_source(fn) or load_source(fn)
        return self._source

    def key_source(self) -> str:
        """The source text cache keys cover (``fingerprint.source_text``, read once)."""
        if self._key_text is None:
            self._key_text = source_text(self.__wrapped__)  # type: ignore[attr-defined]
            if self._program is not None:
                self._key_text = self._program.key_prefix + self._key_text
        return self._key_text

    # -- specialization
    def _arguments(self, args: tuple, kwargs: dict[str, Any],
                   devices: bool = False) -> dict[str, Any]:
        if self._method_of is not None:
            raise method_error(self.__wrapped__)  # type: ignore[attr-defined]
        try:
            bound = self.__signature__.bind(*args, **kwargs)
        except TypeError as exc:
            raise at_caller(ArgumentError(f"{self.__name__}(): {exc}")) from None
        bound.apply_defaults()
        return prepare_bound(bound.arguments, devices)  # what the kernel takes (``arguments``)

    def _key_of(self, arguments: dict[str, Any], by_value: ByValue | None = None
                ) -> tuple[dict[str, Spec], tuple]:
        """(specs, key) of a call, with the by-value paths ``by_value`` (else current)."""
        by_value = self._calls.by_value if by_value is None else by_value
        dynamic = self.options.dynamic_shape
        try:
            specs = {name: spec_of(v, (name,), dynamic, by_value)
                     for name, v in arguments.items()}
            if dynamic and by_value:
                size = window_size(specs)
                if size and not self._windows.admit(size):  # past the cap: the generic key
                    generic = frozenset(p for p in by_value if not is_shape_path(p))
                    specs = {name: spec_of(v, (name,), dynamic, generic)
                             for name, v in arguments.items()}
                    self._windows.generic_keys.add(tuple(specs.items()))
        except ArgumentError as exc:
            if called_as_classmethod(self.__wrapped__, arguments):  # type: ignore[attr-defined]
                raise method_error(self.__wrapped__, classmethod_=True) from None  # type: ignore
            raise at_caller(exc) from None
        return specs, tuple(specs.items())

    def _specialization(self, args: tuple, kwargs: dict[str, Any]
                        ) -> tuple[Specialization, dict[str, Any]]:
        arguments = self._arguments(args, kwargs)
        while True:
            by_value = self._calls.by_value
            specs, key = self._key_of(arguments, by_value)
            spec = self._built(key, specs, by_value)
            if spec is not None:
                return spec, arguments

    def _built(self, key: tuple, specs: dict[str, Spec], by_value: ByValue
               ) -> Specialization | None:
        """The IR of ``key`` (computed with the by-value paths ``by_value``), built on
        first use, or ``None`` when compiling found more arguments to specialize by
        value (the key must be computed again)."""
        spec = self._specs.get(key)
        if spec is None:
            spec = self._flights.run(("ir", key), lambda: self._build_ir(key, specs, by_value))
        return spec

    def _build_ir(self, key: tuple, specs: dict[str, Spec], by_value: ByValue
                  ) -> Specialization | None:
        from pyasc.frontend.lowering import NeedsConstant

        spec = self._specs.get(key)  # stored by a flight that ended since the caller looked
        if spec is not None or self._calls.by_value != by_value:
            return spec  # (None: another thread learned by-value paths, the key is stale)
        try:
            spec = self._compile(key, specs)
        except NeedsConstant as nc:
            if nc.params <= by_value:  # the key already had them by value: a compiler bug
                raise InternalCompilerError("value specialization did not converge") from nc
            self._learn(nc.params, key)
            return None
        self._specs[key] = spec
        return spec

    def _learn(self, params: set[tuple] | frozenset[tuple], key: tuple) -> None:
        """Specialize ``params`` by value from now on (learned compiling ``key``)."""
        self._calls.learn(params)
        if self.options.cache:  # a fresh process computing ``key`` learns them from disk
            store_by_value(program_key(self, key, self.options.as_dict()),
                           self._calls.by_value)

    def _compile(self, key: tuple, specs: dict[str, Spec]) -> Specialization:
        from pyasc.frontend.compiler import result_params
        from pyasc.frontend.lowering import NeedsConstant
        from pyasc.ir.passes.effects import written_arguments
        from pyasc.ir.stage_dumps import DumpSite

        params = params_of(specs)
        options = self._windows.options(key, self.options.as_dict())
        source = lambda: source_reproducer(self.__name__, key, self.key_source())  # noqa: E731
        with internal_errors("building the IR of", self.__name__, source, (NeedsConstant,)):
            built = self._build(specs, params, options)
        unoptimized = str(built.module)
        module = built.module.clone()
        if any(hf.key_source() != text for hf, text in built.callees.items()):
            # the key would not cover the text compiled: never store under it
            options = dict(options, cache=False)
        pkey = program_key(self, key, options)
        site = DumpSite(self.__name__, pkey, signature_text(key))
        with internal_errors("optimizing", self.__name__, lambda: unoptimized):
            _optimize(module, options, (self.__name__, pkey, "tensor"), site)
        n_results = len(module.get(self.__name__).function_type.results)  # type: ignore
        shape = built.template.shape
        call_data = {"template": template_to_json(shape, built.template.params),
                     "native": native_request(self.__signature__, specs, shape),
                     "writes": sorted(written_arguments(built.module.get(self.__name__)))}
        program = Program(module=module, entry=self.__name__,  # type: ignore[arg-type]
                          cache_key=pkey, options=options,
                          result_params=result_params(built.template, n_results),
                          source_file=self.source_info().filename, call_data=call_data,
                          signature=site.signature)
        return Specialization(key, specs, params, program, unoptimized, built.template)

    def _build(self, specs: dict[str, Spec], params: list[Param],
               options: dict[str, Any]) -> Any:
        """The unoptimized module of a specialization (``compiler.Built``); a derived
        function (``autodiff.GradientFunction``) builds another program."""
        from pyasc.frontend.compiler import build_module

        if self._program is not None:
            return self._program.build(specs, params, options)
        return build_module(self, specs, params, options)

    def _kernel_for(self, spec: Specialization, target: str) -> CompiledKernel:
        if target == "interpret":
            raise ArgumentError("the interpret target has no compiled kernel",
                                hint="pass target='cpu' or 'ascend-sim'")
        kernel = self._kernels.get((spec.key, target))
        if kernel is None:
            return self._flights.run(("kernel", spec.key, target),
                                     lambda: self._compile_kernel(spec, target))
        if hasattr(kernel, "attach"):  # loaded by key: give it its program
            kernel.attach(spec.program)
        return kernel

    def _compile_kernel(self, spec: Specialization, target: str) -> CompiledKernel:
        kernel = self._kernels.get((spec.key, target))
        if kernel is None:
            with internal_errors(f"compiling for {target}", self.__name__,
                                 lambda: str(spec.program.module)):
                kernel = get_backend(target).compile(spec.program)
            self._kernels[(spec.key, target)] = kernel
        return kernel

    # -- calling
    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        try:  # free unless raised (3.11+); errors leave as public_api's do
            if _PROFILING:  # a profiler.Profile is recording: the measured path
                return self._profiled(args, kwargs)
            env, fast, recent = self._hot
            if fast is not None and not kwargs and (self._pinned or target_env() is env):
                out = fast(*args)
                if out is not MISS:
                    return out
                for native in recent:  # a miss costs ~50 ns, a signature ~1 us
                    out = native(*args)
                    if out is not MISS:
                        self._hot = (env, native, recent)
                        return out
            return self._dispatch(args, kwargs)
        except Exception as exc:
            if not for_user(exc):
                raise
            user_error(exc)
            raise exc  # pyasc's frames are hidden: PYASC_TRACEBACK=full shows them

    def _dispatch(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        env = target_env()
        target = resolve_target(self.options, env)
        if target == "interpret":
            bridged = unwrap(self._positional_names, args, kwargs)  # torch tensors: as arrays
            if bridged is not None:
                return bridged.wrap(self.__wrapped__(*bridged.args, **bridged.kwargs))
            refuse_device_arrays(self.__signature__, args, kwargs)  # numpy cannot read one
            if self._program is not None:  # no Python to run: interpret its IR
                return self._program.interpret(*self._specialization(args, kwargs))
            return self.__wrapped__(*args, **kwargs)  # type: ignore[attr-defined]
        gen = self._calls.current
        sig = gen.signature(args, kwargs)
        entry = gen.find(target, sig)
        if entry is None:
            bridged = None if sig is not None else unwrap(self._positional_names, args, kwargs)
            if bridged is not None:  # (tensors have no signature: they miss the table)
                return self._bridged(target, bridged)
            args, kwargs, converted = prepare_call(self.__signature__, args, kwargs,
                                                   devices=target == "ascend")
            entry, gen = self._entry(target, args, kwargs)
            if converted:  # never remembered: every such call converts again
                entry.refuse_writes(converted)
            else:  # signed after the miss, by the generation the key was computed with
                gen.remember(target, gen.signature(args, kwargs), entry)
        native = entry.native
        if native is not None:
            call: tuple | None = args
            if kwargs:  # the native entry takes positions: keywords go in their places
                sigs = gen.signatures
                call = sigs.positional(args, kwargs) if sigs is not None else None
            if call is not None:
                out = native(*call)
                if out is not MISS:
                    if native not in self._windows.generic_natives:  # (it takes any size)
                        self._use_native(native, env)
                    return out
        return entry.call(args, kwargs)

    def _profiled(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        """A call recorded by the active profiles (see ``pyasc.runtime.profiler``)."""
        target = resolve_target(self.options, target_env())

        def kernel_of_call() -> tuple[Any, str]:
            gen = self._calls.current
            entry = None if target == "interpret" else \
                gen.find(target, gen.signature(args, kwargs))
            return getattr(entry, "kernel", None), describe_arguments(args, kwargs)

        return profiled_call(self.__name__, target, self._dispatch,
                             args, kwargs, kernel_of_call)

    def _use_native(self, native: Callable[..., Any], env: object) -> None:
        """Make ``native`` the first tried, keeping a few recent ones (same target)."""
        old_env, _, recent = self._hot
        recent = tuple(n for n in recent if n is not native) if env is old_env else ()
        self._hot = (env, native, (native, *recent)[:RECENT_NATIVES])

    # -- gradients (``gradients.Differentiable``), specializations
    def _derived(self, fn: Callable) -> HybridFunction:
        """``fn`` compiled with this function's options (a registered gradient)."""
        return HybridFunction(fn, self.options)

    def _derived_program(self, program: Any) -> HybridFunction:
        """The function compiling ``program`` (a ``backward.Backward`` of this one)
        with this function's options, named ``program.name``."""
        hf = HybridFunction(self.__wrapped__, self.options, program.signature, program)
        hf.__name__ = program.name
        hf.__qualname__ = f"{self.__qualname__}.{program.name}"  # type: ignore
        return hf

    @property
    def specializations(self) -> SpecializationsView:
        """A read-only mapping: specialization key -> :class:`SpecializationInfo`."""
        return SpecializationsView(self)


def _optimize(module: Any, options: dict[str, Any], dump: tuple[str, str, str],
              site: Any) -> None:
    from pyasc.ir.passes import DEFAULT_PIPELINE, run_pipeline

    run_pipeline(module, DEFAULT_PIPELINE, options, dump, site.stage_dir("tensor"))


@public_api
def hybrid(fn: Callable | None = None, /, **options: Any) -> Any:
    """Compile ``fn`` with pyasc: ``@hybrid`` or ``@hybrid(target=..., ...)``."""
    opts = make_options(options)
    if fn is None:
        return public_api(lambda f: HybridFunction(f, opts))
    return HybridFunction(fn, opts)
