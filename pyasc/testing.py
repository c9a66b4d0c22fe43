"""``pyasc.testing``: one test per operator, on every target this machine has.

::

    import numpy as np
    from pyasc import hybrid, testing

    @hybrid
    def gelu(x):
        return 0.5 * x * (1 + np.tanh(0.79788456 * (x + 0.044715 * x**3)))

    @testing.parametrize_targets()              # cpu, ascend-sim, ascend: skipped
    def test_gelu(target):                      # with the reason where unavailable
        for x in testing.inputs((7, 33), np.float32):   # contiguous, strided, transposed
            testing.assert_matches_reference(gelu, x, targets=(target,))

:func:`assert_matches_reference` runs the function as plain Python (``interpret``, the
reference) and compiled for each target, and compares every output: dtype and shape
exactly, values within a tolerance chosen by dtype unless given.  A mismatch raises
``AssertionError`` with a summary per output (the target, how many elements differ,
the largest absolute and relative errors and where).  When the reference raises, each
target must raise an exception of the same class.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from pyasc.jit import HybridFunction, hybrid
from pyasc.jit.options import OPTION_NAMES

TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1e-5, 1e-6),
    "float64": (1e-9, 1e-12),
}
"""Default ``(rtol, atol)`` per dtype: compiled code may reassociate sums and use its
own ``exp``/``tanh`` (see docs/math-accuracy.md); integers and booleans are exact."""

TARGETS = ("cpu", "ascend-sim", "ascend")
"""The compiled targets a test can cover."""


@functools.cache
def unavailable(target: str) -> str | None:
    """Why ``target`` cannot run on this machine (``None``: it can), as ``pyasc
    doctor`` checks it."""
    from pyasc.tools.doctor import doctor

    missing = doctor().missing(target)
    if not missing:
        return None
    return "; ".join(f"{c.name}: {c.found}" for c in missing)


def available_targets(targets: Sequence[str] = TARGETS) -> list[str]:
    """The targets of ``targets`` that can run here."""
    return [t for t in targets if unavailable(t) is None]


def parametrize_targets(targets: Sequence[str] = TARGETS) -> Any:
    """A ``pytest.mark.parametrize("target", ...)`` over ``targets``; those this
    machine lacks are skipped with the reason ``pyasc doctor`` gives."""
    import pytest

    params = [pytest.param(t, marks=pytest.mark.skip(reason=f"{t}: {why}"))
              if (why := unavailable(t)) else t for t in targets]
    return pytest.mark.parametrize("target", params)


def assert_matches_reference(fn: Callable, *args: Any, targets: Sequence[str] = ("cpu",
                             "ascend-sim"), rtol: float | None = None,
                             atol: float | None = None, **kwargs: Any) -> None:
    """Run ``fn`` (a ``@hybrid`` function, or a plain one) as Python and compiled for
    each of ``targets``; raise ``AssertionError`` describing every mismatch."""
    plain, options = _unwrap(fn)
    try:
        want = plain(*_copies(args), **_copies(kwargs))
    except Exception as exc:  # the compiled code must fail the same way
        _expect_raise(plain, options, type(exc), targets, args, kwargs)
        return
    problems = []
    for target in targets:
        compiled = hybrid(plain, **options, target=target)
        got = compiled(*_copies(args), **_copies(kwargs))
        problems += compare(want, got, target, rtol, atol)
    if problems:
        raise AssertionError(f"{getattr(plain, '__name__', plain)}: compiled results "
                             "differ from the Python reference\n" + "\n".join(problems))


def compare(want: Any, got: Any, target: str, rtol: float | None = None,
            atol: float | None = None, where: str = "result") -> list[str]:
    """The mismatches between a reference result and a compiled one (nested tuples of
    arrays and scalars), one line each."""
    if isinstance(want, tuple | list):
        if not isinstance(got, tuple | list) or len(got) != len(want):
            return [f"[{target}] {where}: expected {len(want)} results, got {got!r:.80}"]
        return [line for i, (w, g) in enumerate(zip(want, got, strict=True))
                for line in compare(w, g, target, rtol, atol, f"{where}[{i}]")]
    w, g = np.asarray(want), np.asarray(got)
    if w.dtype != g.dtype or w.shape != g.shape:
        return [f"[{target}] {where}: expected {w.dtype}{list(w.shape)}, "
                f"got {g.dtype}{list(g.shape)}"]
    r, a = TOLERANCES.get(w.dtype.name, (0.0, 0.0))
    r, a = r if rtol is None else rtol, a if atol is None else atol
    if w.dtype.kind in "fc":
        bad = ~np.isclose(g, w, rtol=r, atol=a, equal_nan=True)
    else:
        bad = g != w
    if not bad.any():
        return []
    return [_summary(w, g, bad, target, where, r, a)]


def _summary(w: np.ndarray, g: np.ndarray, bad: np.ndarray, target: str, where: str,
             rtol: float, atol: float) -> str:
    err = np.abs(g.astype(np.float64) - w.astype(np.float64))
    err = np.where(bad, np.nan_to_num(err, nan=np.inf), 0)
    worst = np.unravel_index(int(np.argmax(err)), w.shape) if w.ndim else ()
    rel = err[worst] / max(abs(float(w[worst])), np.finfo(np.float64).tiny)
    return (f"[{target}] {where}: {int(bad.sum())} of {w.size} elements differ "
            f"(rtol={rtol:g}, atol={atol:g}); largest at {tuple(int(i) for i in worst)}: "
            f"expected {w[worst]!r}, got {g[worst]!r} (abs {err[worst]:.3g}, rel {rel:.3g})")


def inputs(shape: tuple[int, ...], dtype: Any, *, seed: int = 0,
           layouts: Sequence[str] = ("contiguous", "strided", "transposed"),
           low: float = -2.0, high: float = 2.0) -> Iterator[np.ndarray]:
    """Random arrays of ``shape`` and ``dtype`` in each of ``layouts``: C-contiguous,
    a strided view (every other element of a larger array) and a transposed view (the
    same values, Fortran order)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)

    def draw(s: tuple[int, ...]) -> np.ndarray:
        if dt.kind == "b":
            return rng.random(s) < 0.5
        if dt.kind in "iu":
            lo, hi = max(int(low), int(np.iinfo(dt).min)), min(int(high), np.iinfo(dt).max)
            return rng.integers(lo, hi + 1, s).astype(dt)
        return rng.uniform(low, high, s).astype(dt)

    for layout in layouts:
        if layout == "contiguous":
            yield draw(shape)
        elif layout == "strided":
            yield draw(tuple(2 * n for n in shape))[tuple(slice(None, None, 2) for _ in shape)]
        elif layout == "transposed":
            yield draw(shape[::-1]).T
        else:
            raise ValueError(f"unknown layout {layout!r}: contiguous, strided, transposed")


ODD_SIZES = (1, 7, 33, 130)
"""Sizes that are not multiples of a vector width or a 32-byte block."""


def _unwrap(fn: Callable) -> tuple[Callable, dict[str, Any]]:
    if isinstance(fn, HybridFunction):
        options = {n: getattr(fn.options, n) for n in OPTION_NAMES if n != "target"}
        return fn.__wrapped__, options  # type: ignore[attr-defined]
    return fn, {}


def _copies(values: Any) -> Any:
    """Fresh copies of array arguments (a function may write into them)."""
    if isinstance(values, dict):
        return {k: _copies(v) for k, v in values.items()}
    if isinstance(values, tuple | list):
        return type(values)(_copies(v) for v in values)
    return values.copy() if isinstance(values, np.ndarray) else values


def _expect_raise(plain: Callable, options: dict[str, Any], cls: type[BaseException],
                  targets: Sequence[str], args: tuple, kwargs: dict) -> None:
    for target in targets:
        try:
            hybrid(plain, **options, target=target)(*_copies(args), **_copies(kwargs))
        except cls:
            continue
        except Exception as exc:
            raise AssertionError(f"[{target}] raised {type(exc).__name__} where the "
                                 f"reference raised {cls.__name__}: {exc}") from exc
        raise AssertionError(f"[{target}] returned where the reference raised "
                             f"{cls.__name__}")


__all__ = ["ODD_SIZES", "TARGETS", "TOLERANCES", "assert_matches_reference",
           "available_targets", "compare", "inputs", "parametrize_targets", "unavailable"]
