"""Pass infrastructure: pass classes with a name, a registry, and a pass manager.

A pass is a stateless class with a ``name`` and ``run(module, ctx)``; registering is
decorating it with ``@register_pass``.  A pipeline is a list of names, run in order by
:class:`PassManager`, which verifies the module (after the last pass by default, after
every pass with ``PYASC_VERIFY_IR=each``, which the test suite sets) and, when its context
has dump sinks (``run_pipeline`` makes them from ``PYASC_DUMP_IR`` and
``PYASC_DUMP_PATH``, see ``pyasc.ir.dumps`` and ``pyasc.ir.stage_dumps``), writes the IR
after each pass to each as ``NN-<pass>.ir``.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from pyasc.errors import InternalCompilerError, InvalidEnvironmentWarning, IRVerificationError
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.verifier import verify_module


@dataclass
class PassContext:
    """Options visible to passes (``fastmath``, target, ...) and where to dump the IR
    after each pass: ``dump_sinks``, each ``(file name, text) -> written`` (empty: no
    dumps; see ``pyasc.ir.dumps``)."""

    options: dict[str, object] = field(default_factory=dict)
    dump_sinks: list[Callable[[str, str], bool]] = field(default_factory=list)
    _dumps: int = 0

    def dump(self, module: ModuleOp, label: str) -> None:
        """Write ``NN-<label>.ir`` to every sink; a sink that failed (and warned) is
        dropped."""
        if not self.dump_sinks:
            return
        name, text = f"{self._dumps:02d}-{label}.ir", str(module) + "\n"
        self.dump_sinks = [sink for sink in self.dump_sinks if sink(name, text)]
        self._dumps += 1


class Pass:
    """Base class: subclasses set ``name`` and implement ``run``."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        raise NotImplementedError


PASS_REGISTRY: dict[str, type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator adding a pass to the registry under its ``name``."""
    if not cls.name or cls.name in PASS_REGISTRY:
        raise ValueError(f"pass name {cls.name!r} is empty or taken")
    PASS_REGISTRY[cls.name] = cls
    return cls


def get_pass(name: str) -> Pass:
    """A fresh instance of the registered pass ``name``."""
    try:
        return PASS_REGISTRY[name]()
    except KeyError:
        raise KeyError(f"unknown pass '{name}'; known: {sorted(PASS_REGISTRY)}") from None


VERIFY_VARIABLE = "PYASC_VERIFY_IR"


def verify_each_pass() -> bool:
    """Whether ``PYASC_VERIFY_IR=each`` asks for the verifier after every pass (read at
    every pipeline run).  Verifying every pass took a quarter of the compile time of
    mid-sized kernels (an MLP's backward: 1.9 s against 1.45 s), so by default a
    pipeline's result is verified once; the test suite verifies every pass."""
    return _parse_verify(os.environ.get(VERIFY_VARIABLE, ""))


@functools.lru_cache(maxsize=8)
def _parse_verify(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("", "each", "end"):
        warnings.warn(InvalidEnvironmentWarning(
            f"{VERIFY_VARIABLE}={text!r} is not 'each' or 'end'; ignored",
            hint="each: verify the IR after every pass; end (the default): after the last"),
            stacklevel=4)
    return value == "each"


class PassManager:
    """Runs a pipeline (a list of pass names), verifying the result (``verify``): after
    every pass when ``each`` (default: :func:`verify_each_pass`), else after the last."""

    def __init__(self, pipeline: Sequence[str], verify: bool = True,
                 each: bool | None = None) -> None:
        self.passes = [get_pass(n) for n in pipeline]
        self.verify = verify
        self.each = each

    def run(self, module: ModuleOp, ctx: PassContext | None = None) -> ModuleOp:
        ctx = ctx or PassContext()
        ctx.dump(module, "input")
        each = verify_each_pass() if self.each is None else self.each
        for p in self.passes:
            p.run(module, ctx)
            ctx.dump(module, p.name)
            if self.verify and each:
                self._verify(module, f"after pass '{p.name}'")
        if self.verify and not each and self.passes:
            names = ", ".join(p.name for p in self.passes)
            self._verify(module, f"after the passes {names} (set {VERIFY_VARIABLE}=each to "
                                 f"find the first pass that broke it)")
        return module

    @staticmethod
    def _verify(module: ModuleOp, where: str) -> None:
        try:
            verify_module(module)
        except IRVerificationError as exc:
            raise InternalCompilerError(f"IR invalid {where}: {exc.message}") from exc
