"""The coded error for constructs the AscendC backend cannot express.

Code the frontend and the CPU backend accept but the device path does not (yet) lower
raises :class:`DeviceUnsupportedError` (E50010, a subclass of
:class:`~pyasc.errors.UnsupportedSyntaxError`) at the user's Python line, never an
internal exception.  Every message ends with :data:`SUFFIX`, so tools (the differential
harness) can tell a documented limitation of ``ascend``/``ascend-sim`` from a bug.
"""

from __future__ import annotations

from pyasc.errors import UnsupportedSyntaxError
from pyasc.ir.core import Location

SUFFIX = "is not supported on ascend-sim/device"


class DeviceUnsupportedError(UnsupportedSyntaxError):
    """A construct the ascendc backend (``ascend``, ``ascend-sim``) cannot lower (E50010)."""

    default_hint = "run this function with target='cpu', or rewrite the construct"


def unsupported(what: str, loc: Location | None = None,
                hint: str | None = None) -> DeviceUnsupportedError:
    """The error for ``what`` (a noun phrase) at ``loc``: "<what> is not supported ..."."""
    known = loc is not None and loc.known and loc.line > 0
    return DeviceUnsupportedError(
        f"{what} {SUFFIX}", filename=loc.file if known else None,  # type: ignore[union-attr]
        lineno=loc.line if known else None,  # type: ignore[union-attr]
        col_offset=(loc.col - 1) if known and loc.col else None,  # type: ignore[union-attr]
        hint=hint)


__all__ = ["SUFFIX", "DeviceUnsupportedError", "unsupported"]
