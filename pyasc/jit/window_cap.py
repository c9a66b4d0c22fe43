"""The cap on window-size specializations of one function (``dynamic_shape=True``).

Under ``dynamic_shape=True`` a window loop whose trip count is a run-time array
dimension (``k = wt.shape[1]; for di in range(k)``) makes the jit compile one kernel per
window size (``frontend/window_dims.py``): only a window of a compile-time size becomes
stencil taps on an AI Core.  A function called with many window sizes would compile
without end, so the first :data:`MAX_WINDOW_SIZES` sizes get their own kernels and
every later size runs the *generic* kernel, compiled once with those dimensions
run-time (a scalar kernel on an AI Core, correct for any size), with one
:class:`~pyasc.errors.WindowSizeCapWarning` per function.

A *window size* is the tuple of the dimensions an argument spec keeps by value (the
shape entries that are not ``None``); a new dtype or layout with a size already seen
is not a new size.  The generic kernel's program key has ``window_sizes="generic"`` in
its options: it differs from the first compilation of the same specs, which has not
learned yet which dimensions are windows.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable

from pyasc.errors import WindowSizeCapWarning
from pyasc.frontend.signature import SEQUENCES, Spec

MAX_WINDOW_SIZES = 8
"""Window sizes compiled as their own specializations, per function."""

GENERIC = {"window_sizes": "generic"}
"""The option a generic kernel (window dimensions run-time past the cap) is built with."""


def window_size(specs: dict[str, Spec]) -> tuple:
    """The dimensions ``specs`` keep by value under ``dynamic_shape`` (``()``: none)."""
    out: list[tuple] = []
    for name, spec in specs.items():
        _collect(spec, (name,), out)
    return tuple(out)


def _collect(spec: Spec, path: tuple, out: list[tuple]) -> None:
    kind = spec[0]
    if kind == "array" and spec[4] is not None:
        out.append((path, spec[4]))
    elif kind in SEQUENCES.values():
        for i, item in enumerate(spec[1:]):
            _collect(item, (*path, i), out)


class WindowSizes:
    """Which window sizes of one function are specialized: the first
    :data:`MAX_WINDOW_SIZES`; once they are taken every other size is refused for good,
    so its key stays the generic one."""

    def __init__(self, fn: Callable) -> None:
        self._fn = fn  # (the warning is located at its ``def``)
        self._lock = threading.Lock()
        self._admitted: set[tuple] = set()
        self._warned = False
        self.generic_keys: set[tuple] = set()  # keys compiled as the generic kernel
        # their native entries: never made the first one a call tries (any size fits
        # them, so an admitted size would run the generic kernel)
        self.generic_natives: set[object] = set()

    def admit(self, size: tuple) -> bool:
        """Whether window size ``size`` gets its own specialization (warns once when
        the first size is refused)."""
        if size in self._admitted:
            return True
        with self._lock:
            if size in self._admitted or len(self._admitted) < MAX_WINDOW_SIZES:
                self._admitted.add(size)
                return True
            warn, self._warned = not self._warned, True
        if warn:
            self._warn()
        return False

    def _warn(self) -> None:
        code = getattr(self._fn, "__code__", None)
        where = (code.co_filename, code.co_firstlineno) if code else ("<unknown>", 0)
        warnings.warn_explicit(WindowSizeCapWarning(
            f"{getattr(self._fn, '__name__', 'function')}() has been called with more "
            f"than {MAX_WINDOW_SIZES} window sizes (MAX_WINDOW_SIZES = {MAX_WINDOW_SIZES} "
            "kernels, one per size, under dynamic_shape=True): new sizes run one generic "
            "kernel whose window loops have a run-time size (on an AI Core a scalar "
            "kernel)"), WindowSizeCapWarning, *where)

    def options(self, key: tuple, options: dict) -> dict:
        """The options ``key`` is compiled (and loaded) with: :data:`GENERIC` added for
        a generic key."""
        return {**options, **GENERIC} if key in self.generic_keys else options
