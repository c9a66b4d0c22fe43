"""Internal compiler errors at the entry points of compilation: never a bare exception.

Compiling a specialization is entered through a few methods of ``HybridFunction``:
building and optimizing its IR (a first call, ``fn.ir``, ``fn.specialize``), a
backend's ``compile`` (a first call on a target, ``fn.kernel``, ``fn.llvm_ir``) and
AscendC generation (``fn.ascendc``).  :func:`internal_errors` guards each.  An
exception that is not a :class:`PyascError` (an ``AssertionError``, ``KeyError``...
raised inside pyasc) is a pyasc bug: it becomes :class:`InternalCompilerError` (E50050)
at the user's call site, naming the pyasc line that failed and a file holding the IR
being compiled (the reproducer a bug report needs).  An internal error raised
deliberately without such a file gets one too; every other PyascError passes through
unchanged, and so do the exceptions a stage uses for control flow (``passthrough``).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from pyasc.callsite import at_caller
from pyasc.errors import InternalCompilerError, PyascError

_PACKAGE = Path(__file__).resolve().parents[1]


class internal_errors:  # noqa: N801 - used like a function: ``with internal_errors(...)``
    """Inside the block, failures of pyasc are E50050 errors whose message names a file
    holding ``ir_text()``; ``what`` says what was being done to function ``name``.

    A class, not a ``contextlib`` generator: the user's call site is the first frame
    outside pyasc, and contextlib's frames would come first."""

    def __init__(self, what: str, name: str, ir_text: Callable[[], str],
                 passthrough: tuple[type[BaseException], ...] = ()) -> None:
        self.what, self.name, self.ir_text, self.passthrough = what, name, ir_text, passthrough

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if exc is None or isinstance(exc, self.passthrough) or not isinstance(exc, Exception):
            return False
        if isinstance(exc, InternalCompilerError):
            if exc.ir_path is None:
                at_caller(exc.save_ir(_text(self.ir_text), self.name))
            return False
        if isinstance(exc, PyascError):
            return False
        detail = f": {exc}" if str(exc) else ""
        err = InternalCompilerError(f"{self.what} '{self.name}': unexpected "
                                    f"{type(exc).__name__}{detail} (raised at {_origin(exc)})")
        raise at_caller(err.save_ir(_text(self.ir_text), self.name)) from exc


def _text(ir_text: Callable[[], str]) -> str:
    try:
        return ir_text()
    except Exception as exc:  # noqa: BLE001 - the report must still be written
        return f"// pyasc could not print the IR: {type(exc).__name__}: {exc}\n"


def _origin(exc: BaseException) -> str:
    """``file:line in function`` of the innermost frame inside pyasc (else the last)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "an unknown place"
    inside = [f for f in frames if _in_package(f.filename)]
    f = (inside or frames)[-1]
    where = Path(f.filename)
    if _in_package(f.filename):
        where = where.resolve().relative_to(_PACKAGE.parent)
    return f"{where}:{f.lineno} in {f.name}"


def _in_package(filename: str) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(_PACKAGE)
    except (OSError, ValueError):
        return False


def source_reproducer(fn_name: str, key: object, source: str) -> str:
    """What the frontend stage saves: it fails before any IR exists, so the function's
    source and the call signature it was specialized for."""
    return (f"// pyasc failed to build the IR of '{fn_name}' for the signature\n"
            f"// {key!r}\n// from this source:\n{source}\n")
