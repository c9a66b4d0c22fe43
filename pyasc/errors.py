"""Errors a pyasc user can cause, each with a stable code and a pointer into user source.

Every error is a :class:`PyascError` subclass.  The message renders like a compiler
diagnostic::

    E50001: type mismatch: cannot combine float32 and bool
      --> /home/me/ops.py:12:9
       |
    12 |     y = x + mask
       |         ^^^^^^^^
       = hint: cast one operand with .astype(...)

The table of codes lives in ``docs/errors.md``; ``tests/test_error_codes.py`` checks
that the table and the classes below agree.
"""

from __future__ import annotations

import linecache
from typing import ClassVar


class PyascError(Exception):
    """Base class of every error pyasc reports to users.

    Attributes mirror Python's ``SyntaxError``: ``filename``, ``lineno`` (1-based),
    ``col_offset`` (0-based), plus the stable ``code`` and a one-line ``hint``.
    """

    code: ClassVar[str] = "E50000"
    title: ClassVar[str] = "pyasc error"
    default_hint: ClassVar[str] = ""

    def __init__(
        self,
        message: str,
        *,
        filename: str | None = None,
        lineno: int | None = None,
        col_offset: int | None = None,
        end_col_offset: int | None = None,
        hint: str | None = None,
        source_line: str | None = None,
    ) -> None:
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col_offset = col_offset
        self.end_col_offset = end_col_offset
        self.hint = hint if hint is not None else self.default_hint
        self.source_line = source_line
        self.context: list[str] = []  # the calls that led there, innermost first
        super().__init__(self.render())

    def add_context(self, note: str) -> PyascError:
        """Add a ``= note:`` line (the call of the helper where the error is); returns
        ``self``."""
        self.context.append(note)
        self.args = (self.render(),)
        return self

    def with_location(
        self,
        filename: str | None,
        lineno: int | None,
        col_offset: int | None,
        end_col_offset: int | None = None,
        source_line: str | None = None,
    ) -> PyascError:
        """Attach a location if the error has none yet; returns ``self``."""
        if self.lineno is None and lineno is not None:
            self.filename, self.lineno, self.col_offset = filename, lineno, col_offset
            self.end_col_offset = end_col_offset
            self.source_line = source_line
            self.args = (self.render(),)
        return self

    def _line_text(self) -> str | None:
        if self.source_line is not None:
            return self.source_line
        if self.filename and self.lineno:
            text = linecache.getline(self.filename, self.lineno)
            return text.rstrip("\n") if text else None
        return None

    def render(self) -> str:
        """The full multi-line diagnostic text."""
        out = [f"{self.code}: {self.title}: {self.message}"]
        if self.filename is not None or self.lineno is not None:
            col = (self.col_offset or 0) + 1
            out.append(f"  --> {self.filename or '<unknown>'}:{self.lineno or 0}:{col}")
            text = self._line_text()
            if text is not None and self.lineno is not None:
                gutter = " " * len(str(self.lineno))
                start = self.col_offset or 0
                end = self.end_col_offset
                width = max(1, (end - start) if end is not None and end > start else 1)
                out.append(f"{gutter} |")
                out.append(f"{self.lineno} | {text}")
                out.append(f"{gutter} | {' ' * start}{'^' * width}")
        out += [f"   = note: {note}" for note in getattr(self, "context", ())]
        if self.hint:
            out.append(f"   = hint: {self.hint}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


class TypeMismatchError(PyascError):
    """Operand dtypes or kinds that cannot be combined (E50001)."""

    code = "E50001"
    title = "type mismatch"
    default_hint = "check the dtypes of the inputs; cast explicitly with .astype(...)"


class ShapeInferenceError(PyascError, ValueError):
    """Shapes that cannot be broadcast, multiplied, reshaped or assigned (E50002); also
    a ``ValueError``, as numpy raises for the same shapes.

    Raised at compile time when the static shapes conflict, and at run time (every
    target) when the sizes a kernel was called with do (``dynamic_shape=True``).
    """

    code = "E50002"
    title = "shape inference failed"
    default_hint = "check the dimensions used inside the operator"


class OutOfMemoryError(PyascError):
    """A kernel does not fit the memory available: UB, host or device (E50003)."""

    code = "E50003"
    title = "out of memory"
    default_hint = "reduce the problem size or split the operator"


class UnsupportedSyntaxError(PyascError):
    """A Python construct the compiler does not support (E50010)."""

    code = "E50010"
    title = "unsupported syntax"
    default_hint = "rewrite this construct with loops, slices and numpy calls"


class NotDifferentiableError(UnsupportedSyntaxError):
    """An operation automatic differentiation cannot go through (E50013): a loop whose
    trip count is known only at run time, a ``while``, an op without a gradient rule."""

    code = "E50013"
    title = "not differentiable"
    default_hint = "register a gradient with @fn.def_grad, or rewrite this line"


class UnsupportedNumpyError(PyascError):
    """A numpy function, method or argument the compiler does not support (E50011)."""

    code = "E50011"
    title = "unsupported numpy call"
    default_hint = "see pyasc.supported_numpy() for the supported functions and arguments"


class UndefinedNameError(PyascError):
    """A name that is neither local, a parameter, nor a supported global (E50012)."""

    code = "E50012"
    title = "undefined name"
    default_hint = "define the name before use, or make it a module-level constant"


class IRParseError(PyascError):
    """IR text that does not parse (E50020)."""

    code = "E50020"
    title = "IR parse error"
    default_hint = "the IR text must follow the generic format printed by str(module)"


class IRVerificationError(PyascError):
    """IR that violates an op's or the module's invariants (E50021)."""

    code = "E50021"
    title = "IR verification failed"
    default_hint = "if this IR came from pyasc itself, please report it as a bug"


class ToolchainMissingError(PyascError):
    """A compiler, library or SDK that a target needs is not installed (E50030)."""

    code = "E50030"
    title = "toolchain missing"
    default_hint = ("source <ascend-toolkit>/set_env.sh, or use target='cpu' or 'ascend-sim'; "
                    "run `pyasc doctor` to see what is missing")


class DeviceError(PyascError):
    """The device runtime (AscendCL) reported an error (E50031)."""

    code = "E50031"
    title = "device runtime error"
    default_hint = ("check the NPU driver and CANN (`pyasc doctor`, npu-smi info, source "
                    "<ascend-toolkit>/set_env.sh), or use target='ascend-sim'")


class AclCallError(DeviceError):
    """An AscendCL call returned a non-zero ``aclError`` (E50032).

    ``acl_code``, ``acl_name``, ``call`` and ``recent`` (``aclGetRecentErrMsg()``) say
    which call failed and how; also a :class:`DeviceError`."""

    code = "E50032"
    title = "AscendCL call failed"
    default_hint = ("see the ACL message above; `npu-smi info` shows the device state "
                    "(under the test stand-in: an injected failure, see "
                    "docs/ascend-runtime.md)")

    def __init__(self, message: str, *, acl_code: int = 0, acl_name: str = "",
                 call: str = "", recent: str = "", **kw: object) -> None:
        self.acl_code, self.acl_name, self.call, self.recent = acl_code, acl_name, call, recent
        super().__init__(message, **kw)  # type: ignore[arg-type]


class ArgumentError(PyascError):
    """A call whose arguments do not fit the operator (E50040)."""

    code = "E50040"
    title = "invalid arguments"
    default_hint = "check the number, kinds, dtypes and shapes of the arguments"


class InvalidOptionError(PyascError):
    """An unknown or conflicting decorator option (E50041)."""

    code = "E50041"
    title = "invalid option"
    default_hint = ("valid options: target, dynamic_shape, device_type, fastmath, boundscheck, "
                    "cache, device_float64, matmul_fma, sum_lanes")


class InternalCompilerError(PyascError):
    """A failure inside pyasc or LLVM that the user did not cause (E50050).

    ``ir_path`` names the file :meth:`save_ir` wrote (the reproducer of a report)."""

    code = "E50050"
    title = "internal compiler error"
    default_hint = ("this is a pyasc bug: please report it with the code that triggers it "
                    "and the IR file the message names (PYASC_TRACEBACK=full prints "
                    "pyasc's own traceback)")
    ir_path: str | None = None

    def save_ir(self, text: str, name: str, suffix: str = ".ir",
                what: str = "IR") -> InternalCompilerError:
        """Write ``text`` to a file in the temporary directory (named after ``name`` and
        the text's hash) and name it in the message; returns ``self``."""
        import hashlib
        import os
        import tempfile

        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60]
        path = os.path.join(tempfile.gettempdir(), f"pyasc-ice-{safe}-{digest}{suffix}")
        try:
            with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path),
                                             delete=False, suffix=".tmp") as f:
                f.write(text)
            os.replace(f.name, path)  # atomic: a concurrent reader sees all or nothing
            self.ir_path = path
            self.message += f"; {what} saved to {path}"
        except OSError as exc:  # pragma: no cover - unwritable temp dir
            self.message += f"; could not save the {what} ({exc})"
        self.args = (self.render(),)
        return self


class IndexOutOfBoundsError(PyascError, IndexError):
    """An array index outside its axis (E50004); also an ``IndexError``, as in numpy.

    Raised at run time by a failed bounds check (every target; ``boundscheck=False``
    turns the checks off) and at compile time for a constant index on a static axis.
    """

    code = "E50004"
    title = "index out of bounds"
    default_hint = ("valid indices on an axis of size n are -n..n-1; check the loop "
                    "bounds and the index arithmetic")


ALL_ERRORS: tuple[type[PyascError], ...] = (
    TypeMismatchError,
    ShapeInferenceError,
    OutOfMemoryError,
    UnsupportedSyntaxError,
    UnsupportedNumpyError,
    UndefinedNameError,
    NotDifferentiableError,
    IRParseError,
    IRVerificationError,
    ToolchainMissingError,
    DeviceError,
    AclCallError,
    ArgumentError,
    InvalidOptionError,
    InternalCompilerError,
    IndexOutOfBoundsError,
)


class PyascWarning(UserWarning):
    """Base class of pyasc's warnings: something pyasc was asked for could not be done or
    was ignored, and the call still runs.  ``code`` is stable (``W5xxxx``, table in
    ``docs/errors.md``); the text ends with a one-line hint."""

    code: ClassVar[str] = "W50000"
    default_hint: ClassVar[str] = ""

    def __init__(self, message: str, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint if hint is not None else self.default_hint
        text = f"{self.code}: {message}" + (f"\n   = hint: {self.hint}" if self.hint else "")
        super().__init__(text)


class InvalidEnvironmentWarning(PyascWarning):
    """A ``PYASC_*`` environment variable has a value pyasc cannot use; it is ignored
    (W50041)."""

    code = "W50041"


class IRDumpWarning(PyascWarning):
    """``PYASC_DUMP_IR`` or ``PYASC_DUMP_PATH`` names a place where the dumps cannot be
    written (W50060)."""

    code = "W50060"
    default_hint = "set PYASC_DUMP_IR to a writable directory"


class DeviceStateLostWarning(PyascWarning):
    """An ``AscendOperator``'s device-resident state was lost with its device context
    before ``sync_state()`` brought it to the host; the call restarts from the
    instance's arrays (W50033)."""

    code = "W50033"
    default_hint = ("call op.sync_state() before pyasc.runtime.acl.shutdown() to keep the "
                    "device state")


class DeviceFloat64Warning(PyascWarning):
    """float64 device code computed in float32 on an AI Core, as
    ``device_float64="demote"`` asks (W50070)."""

    code = "W50070"
    default_hint = "cast the float64 data to float32 yourself, or run it on target='cpu'"


class PyascPerformanceWarning(UserWarning):
    """Code that runs slower than it could: on the AI Core's scalar unit instead of its
    vector unit (``backend/ascendc``), or a generic kernel past a specialization cap."""


class WindowSizeCapWarning(PyascWarning, PyascPerformanceWarning):
    """A function with window loops of a run-time size was called with more window sizes
    than the jit specializes (``jit/window_cap.py``); new sizes run the generic kernel
    (W50080)."""

    code = "W50080"
    default_hint = ("make the window size a constant (or pyasc.static of a scalar "
                    "argument), or call the function with fewer window sizes")


class PathErrorWarning(PyascWarning):
    """Code under a run-time condition raises a shape or index error (E50002/E50004)
    whenever it runs; it is compiled to raise it then, as numpy would (W50002)."""

    code = "W50002"
    default_hint = ("fix the shapes or the index if that path can run; if it cannot, "
                    "make its condition known at compile time")


ALL_WARNINGS: tuple[type[PyascWarning], ...] = (InvalidEnvironmentWarning, IRDumpWarning,
                                              DeviceStateLostWarning, DeviceFloat64Warning,
                                              PathErrorWarning, WindowSizeCapWarning)
