"""Seeded draws of reductions over random axes and of NCHW batch-norm, as users write
them (``test_norm_properties`` runs them on ``ascend-sim`` against the Python function).

Reductions: ``sum``/``mean``/``max``/``min``/``var``/``std`` (method or function) of a
rank 2-4 array over a random axis, a random tuple of axes (negative axes too) or all
axes, with or without ``keepdims``, of a contiguous, strided, Fortran-ordered or
reversed view; some followed by elementwise work (``* 2 + 1``, ``x - m`` with the
kept dims broadcast back).  These reach the ``cols`` schedule (leading axes),
``split_reduce`` (leading and trailing axes at once), ``split_rows`` (narrow-tall
columns) and the row schedules.  Batch-norm: per-channel statistics over
``(0, 2, 3)`` of NCHW (or ``(1, 2)`` of CHW), ``gamma`` and ``beta`` broadcast as
``(1, C, 1, 1)``, ``(C, 1, 1)``, ``g[:, None, None]`` or ``g.reshape(1, -1, 1, 1)``
(``vec_collapse``'s channel operands), the variance by ``var`` or by hand.  Sums of
small integers are exact in the device's float32 accumulation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from progen import load
from window_forms import as_view

REDUCTIONS = ("sum", "mean", "max", "min", "var", "std")
EXACT_REDUCTIONS = ("sum", "max", "min")
SIZES = (1, 2, 3, 5, 8, 16, 17, 31, 64, 129)


@dataclass
class Case:
    """A draw: the function, its source, the calls, ``dynamic_shape``, rtol."""

    fn: object
    source: str
    calls: list[tuple]
    dynamic: bool
    rtol: float


def _axes(rng: np.random.Generator, rank: int) -> object:
    """None, one axis or a tuple of distinct axes (some negative)."""
    kind = int(rng.integers(4))
    if kind == 0:
        return None
    count = 1 if kind == 1 else int(rng.integers(1, rank + 1))
    axes = sorted(int(a) for a in rng.choice(rank, size=count, replace=False))
    axes = [a - rank if rng.integers(3) == 0 else a for a in axes]
    return axes[0] if count == 1 and rng.integers(2) else tuple(axes)


def reduction_source(rng: np.random.Generator, rank: int, how: str) -> str:
    """``prog(x)``: one reduction over random axes, then maybe elementwise work."""
    axis, keep = _axes(rng, rank), bool(rng.integers(2))
    call = (f"x.{how}(axis={axis!r}, keepdims={keep})" if rng.integers(2)
            else f"np.{how}(x, axis={axis!r}, keepdims={keep})")
    tail = ("m", "m * 2 + 1", "x - m" if keep else "m - 1")[int(rng.integers(3))]
    return f"import numpy as np\n\n\ndef prog(x):\n    m = {call}\n    return {tail}\n"


AFFINE = {
    "keep4": ("gamma", "beta", lambda c: (1, c, 1, 1)),
    "chw": ("gamma", "beta", lambda c: (c, 1, 1)),
    "index": ("gamma[:, None, None]", "beta[:, None, None]", lambda c: (c,)),
    "reshape": ("gamma.reshape(1, -1, 1, 1)", "beta.reshape(1, -1, 1, 1)", lambda c: (c,)),
}


def batchnorm_source(rng: np.random.Generator, nchw: bool, affine: str) -> str:
    """``prog(x, gamma, beta)``: batch-norm with statistics over all axes but the channel."""
    axes = ("(0, 2, 3)", "(-4, -2, -1)")[int(rng.integers(2))] if nchw else "(1, 2)"
    g, b, _ = AFFINE[affine]
    var = ("x.var(axis={a}, keepdims=True)", "np.var(x, axis={a}, keepdims=True)",
           "((x - mu) ** 2).mean(axis={a}, keepdims=True)",
           "np.mean(np.square(x - mu), axis={a}, keepdims=True)")[int(rng.integers(4))]
    lines = [f"mu = x.mean(axis={axes}, keepdims=True)", "var = " + var.format(a=axes)]
    if rng.integers(2):
        lines.append(f"y = (x - mu) / np.sqrt(var + 1e-5) * {g} + {b}")
    else:
        lines += ["inv = 1.0 / np.sqrt(var + 1e-5)", f"y = (x - mu) * inv * {g} + {b}"]
    if rng.integers(3) == 0:
        lines.append("y = np.maximum(y, 0)")
    body = "".join(f"    {line}\n" for line in [*lines, "return y"])
    return f"import numpy as np\n\n\ndef prog(x, gamma, beta):\n{body}"


def _values(rng: np.random.Generator, shape: tuple, dtype: type, exact: bool) -> np.ndarray:
    if exact:
        return rng.integers(-3, 4, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _shape(rng: np.random.Generator, rank: int) -> tuple[int, ...]:
    shape = [int(rng.choice(SIZES)) for _ in range(rank)]
    while int(np.prod(shape)) > 40_000:
        shape[int(np.argmax(shape))] //= 2
    if rng.integers(4) == 0:  # narrow and tall: split_rows' columns
        shape[0], shape[-1] = int(rng.choice((300, 1025, 4097))), int(rng.integers(1, 4))
    return tuple(shape)


def draw_reduction(seed: int) -> Case:
    """A reduction over random axes of a random view, 1-3 calls."""
    rng = np.random.default_rng(seed + 80_000)
    rank = int(rng.integers(2, 5))
    how = REDUCTIONS[int(rng.integers(len(REDUCTIONS)))]
    source = reduction_source(rng, rank, how)
    dtype = (np.float32, np.float16)[int(rng.integers(2))]
    exact = how in EXACT_REDUCTIONS or bool(rng.integers(2))
    dynamic = bool(rng.integers(2))
    calls = [(as_view(rng, _values(rng, _shape(rng, rank), dtype, exact)),)
             for _ in range(int(rng.integers(1, 4)) if dynamic else 1)]
    rtol = 4e-3 if dtype == np.float16 else (0.0 if exact and how == "sum" else 2e-5)
    return Case(load(source), source, calls, dynamic, rtol)


def draw_batchnorm(seed: int) -> Case:
    """NCHW (or CHW) batch-norm with random affine broadcasts, sizes and views."""
    rng = np.random.default_rng(seed + 90_000)
    nchw = bool(rng.integers(4) != 0)
    affine = list(AFFINE)[int(rng.integers(len(AFFINE)))] if nchw else "chw"
    source = batchnorm_source(rng, nchw, affine)
    dtype = (np.float32, np.float16)[int(rng.integers(2))]
    dynamic = bool(rng.integers(2))
    calls = []
    for _ in range(int(rng.integers(1, 4)) if dynamic else 1):
        c = int(rng.integers(1, 18))
        lead = (int(rng.integers(1, 4)),) if nchw else ()
        x = _values(rng, (*lead, c, int(rng.choice(SIZES[:8])), int(rng.choice(SIZES))),
                    dtype, False)
        pshape = AFFINE[affine][2](c)
        calls.append((as_view(rng, x), _values(rng, pshape, dtype, False),
                      _values(rng, pshape, dtype, False)))
    return Case(load(source), source, calls, dynamic, 4e-3 if dtype == np.float16 else 5e-5)
