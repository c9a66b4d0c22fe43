"""Inspecting one call of a ``@hybrid`` function without running it.

A call's arguments and the inspection's options live in different namespaces:
``fn.bind(*args, **kwargs)`` takes exactly what ``fn(*args, **kwargs)`` takes and
returns a :class:`BoundCall`, whose methods take the options::

    call = custom_loss.bind(pred, target=t)   # 'target' is the function's parameter
    call.ir(optimized=False)                  # IR before the default passes
    call.kernel(target="ascend-sim")          # 'target' is the backend
    call.ascendc(soc="Ascend310P")
    call.llvm_ir(), call.asm(), call.dump_ir("out.ir"), call.program

The shortcuts ``fn.ir(...)``, ``fn.kernel(...)``, ``fn.ascendc(...)`` (and
``fn.llvm_ir``, ``fn.asm``, ``fn.dump_ir``, ``fn.specialize``) take the call's arguments
plus their option as a keyword: ``fn.ir(x, optimized=False)``,
``fn.kernel(x, target="cpu")``, ``fn.ascendc(x, soc="Ascend910B1")``.  A keyword that
the function itself accepts always goes to the function (``fn.ir(x, k)`` inspects the
same call as ``fn(x, k)``, however its parameters are named); for a function with a
parameter named like an option, give the option through ``fn.bind(...)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pyasc.backend.base import CompiledKernel, Program
from pyasc.callsite import public_api
from pyasc.frontend.signature import flatten_args
from pyasc.jit.callplan import rebuild
from pyasc.jit.ice import internal_errors

SHORTCUT_OPTIONS = {"ir": "optimized", "kernel": "target", "ascendc": "soc"}
"""The option keyword each shortcut method takes besides the call's arguments."""


def accepts_keyword(signature: inspect.Signature, name: str) -> bool:
    """Whether a call of a function with ``signature`` can pass ``name`` by keyword."""
    params = signature.parameters
    p = params.get(name)
    if p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
        return True
    return any(q.kind == q.VAR_KEYWORD for q in params.values())


def split_option(signature: inspect.Signature, method: str,
                 kwargs: dict[str, Any]) -> dict[str, Any]:
    """Take the option of shortcut ``method`` out of ``kwargs`` (in place) unless the
    function accepts that keyword itself; returns the options for the bound call."""
    name = SHORTCUT_OPTIONS[method]
    if name in kwargs and not accepts_keyword(signature, name):
        return {name: kwargs.pop(name)}
    return {}


class BoundCall:
    """One call of a hybrid function, bound for inspection (``fn.bind(...)``).

    The specialization is built on first use and kept; the arguments were checked
    against the function's signature when binding."""

    def __init__(self, hf: Any, args: tuple, kwargs: dict[str, Any]) -> None:
        self._hf = hf
        self._args = args
        self._kwargs = kwargs
        hf._arguments(args, kwargs)  # an ArgumentError now, at the caller's bind(...)
        self._spec: Any = None

    def __repr__(self) -> str:
        return f"<bound call of {self._hf!r}>"

    def _specialization(self) -> Any:
        if self._spec is None:
            self._spec = self._hf._specialization(self._args, self._kwargs)[0]
        return self._spec

    @property
    @public_api
    def program(self) -> Program:
        """The :class:`Program` (optimized IR module) of this call's specialization."""
        return self._specialization().program

    @public_api
    def ir(self, optimized: bool = True) -> str:
        """IR text after (``optimized=False``: before) the default passes."""
        spec = self._specialization()
        return str(spec.program.module) if optimized else spec.unoptimized

    @public_api
    def dump_ir(self, path: str | Path) -> Path:
        """Write the optimized IR to ``path`` (an ``.ir`` file ``ascend-dump-graph``
        draws); returns the path."""
        out = Path(path)
        out.write_text(self.ir() + "\n")
        return out

    @public_api
    def kernel(self, target: str | None = None) -> CompiledKernel:
        """The compiled kernel for ``target`` (default: the function's target); compiled
        on first use and shared with calls of the same specialization."""
        from pyasc.jit.options import resolve_target

        hf = self._hf
        return hf._kernel_for(self._specialization(), target or resolve_target(hf.options))

    @public_api
    def llvm_ir(self) -> str:
        """Optimized LLVM IR of the CPU kernel."""
        return self.kernel(target="cpu").llvm_ir  # type: ignore[attr-defined]

    @public_api
    def asm(self) -> str:
        """Host assembly of the CPU kernel."""
        return self.kernel(target="cpu").asm  # type: ignore[attr-defined]

    @public_api
    def ascendc(self, soc: str | None = None, device_float64: str | None = None) -> str:
        """AscendC source for ``soc`` (default: the first ``device_type``, else
        Ascend910B1); ``device_float64`` overrides the function's option of that name for
        this source (``"demote"``: see the float32 kernel of a float64 function)."""
        from pyasc.backend.ascendc import generate_ascendc  # noqa: PLC0415 - lazy backend
        from pyasc.jit.options import make_options

        program, devices = self.program, self._hf.options.device_type
        if device_float64 is not None:  # validated as the decorator's option is
            mode = make_options({"device_float64": device_float64}).device_float64
            program = replace(program, options={**program.options, "device_float64": mode})
        with internal_errors("generating AscendC for", self._hf.__name__,
                             lambda: str(program.module)):
            return generate_ascendc(program, soc or (devices[0] if devices else None))


class Inspection:
    """The inspection methods of ``HybridFunction`` (a mixin: it provides
    ``__signature__``, ``options``, ``_arguments``, ``_specialization`` and
    ``_kernel_for``), and ``run_with``."""

    __signature__: inspect.Signature

    @public_api
    def bind(self, /, *args: Any, **kwargs: Any) -> BoundCall:
        """This call, bound for inspection: ``.ir()``, ``.kernel(target=...)``,
        ``.ascendc(soc=...)``, ``.llvm_ir()``, ``.asm()``, ``.dump_ir(path)``,
        ``.program``.  Takes exactly the arguments a call takes."""
        return BoundCall(self, args, kwargs)

    @public_api
    def specialize(self, /, *args: Any, **kwargs: Any) -> Program:
        """The :class:`Program` (optimized IR module) for this call signature."""
        return self._specialization(args, kwargs)[0].program  # type: ignore[attr-defined]

    @public_api
    def ir(self, /, *args: Any, **kwargs: Any) -> str:
        """IR text of this call's specialization after the default passes (before them
        with ``optimized=False``, unless the function has a parameter of that name)."""
        options = split_option(self.__signature__, "ir", kwargs)
        return self.bind(*args, **kwargs).ir(**options)

    @public_api
    def dump_ir(self, path: str | Path, /, *args: Any, **kwargs: Any) -> Path:
        """Write the optimized IR of this call's specialization to ``path``."""
        return self.bind(*args, **kwargs).dump_ir(path)

    @public_api
    def kernel(self, /, *args: Any, **kwargs: Any) -> CompiledKernel:
        """The compiled kernel of this call's specialization for ``target=`` (unless the
        function has a parameter of that name; default: the function's target)."""
        options = split_option(self.__signature__, "kernel", kwargs)
        return self.bind(*args, **kwargs).kernel(**options)

    @public_api
    def llvm_ir(self, /, *args: Any, **kwargs: Any) -> str:
        """Optimized LLVM IR of this call's specialization (CPU backend)."""
        return self.bind(*args, **kwargs).llvm_ir()

    @public_api
    def asm(self, /, *args: Any, **kwargs: Any) -> str:
        """Host assembly of this call's specialization (CPU backend)."""
        return self.bind(*args, **kwargs).asm()

    @public_api
    def ascendc(self, /, *args: Any, **kwargs: Any) -> str:
        """AscendC source of this call's specialization for ``soc=`` (unless the
        function has a parameter of that name; default: the first ``device_type``,
        else Ascend910B1)."""
        options = split_option(self.__signature__, "ascendc", kwargs)
        return self.bind(*args, **kwargs).ascendc(**options)

    @public_api
    def run_with(self, compile_fn: Callable[[Program], CompiledKernel], /, *args: Any,
                 **kwargs: Any) -> Any:
        """Call through ``compile_fn(program)`` instead of a target's backend (tests,
        the IR interpreter, experimental backends); nothing is cached."""
        spec, arguments = self._specialization(args, kwargs)  # type: ignore[attr-defined]
        flat = flatten_args(spec.specs, arguments)
        with internal_errors("compiling", self.__name__,  # type: ignore[attr-defined]
                             lambda: str(spec.program.module)):
            kernel = compile_fn(spec.program)
        template = spec.template
        return rebuild(template.shape, list(kernel(flat)), flat, template.params)
