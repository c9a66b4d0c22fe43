"""Seeded draws of convolutions written with loops, as users write them
(``test_loop_conv_properties`` runs them on ``ascend-sim`` against the Python function).

A draw is the source of ``prog(x, w, b)`` and its calls: an explicit nest ``for [n], o,
i, j: acc = init; for c, a, b: acc += x[[n,] c, s*i + a, s*j + b] * w[o, c, a, b];
out[[n,] o, i, j] = f(acc)`` or the window-slice form ``np.sum(x[:, rows, cols] *
w[o])``, with a random channel count ``C``, output planes ``O``, image size, kernel size,
stride (1-2), optional batch loop, bias (``acc = b[o]`` or ``+ b[o]`` after the sum),
ReLU (``max(acc, 0.0)``, ``np.maximum``), the channel loop over ``range(C)``,
``range(x.shape[k])`` or ``range(len(x))``, ``acc += t`` or ``acc = acc + t``,
float32/float16, contiguous or strided/Fortran/reversed views, static shapes or
``dynamic_shape`` with 2-3 calls of different sizes
through one compiled function.  These reach ``loop-conv-cube`` (im2col + matmul on the
cube: many taps, or a stride) and ``channel-interchange`` (a run-time channel loop: the
channel stencil kernel), or the stencil/scalar kernels when neither applies.

Values are small integers unless ``exact`` is off: every partial sum is then an integer
below 2048, exact in float16 and float32 in any order, so any mismatch is a wrong
result.  Real-valued draws are judged against the float64 result within the bound of
an ``n``-term sum in either order (``(n + 2) * eps * sum |x * w|``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from progen import load
from window_forms import as_view

DTYPES = (np.float32, np.float16)


@dataclass(frozen=True)
class Geometry:
    """One draw's form: batch loop, kernel size, stride, bias/relu, spelling choices."""

    batch: bool
    kh: int
    kw: int
    stride: int
    bias: str        # "" | "init" | "after"
    relu: str        # "" | "max" | "maximum"
    chan: str        # "literal" | "shape" | "len"
    slices: bool     # np.sum(x[:, window] * w[o]) instead of the tap loops
    plus: bool       # acc = acc + t instead of acc += t
    zero: str = "0.0"  # the initial value without a bias: 0.0, x.dtype.type(0), np.float32(0)


@dataclass
class Case:
    """A draw: the function, its calls, ``dynamic_shape``, whether values are exact."""

    fn: object
    source: str
    calls: list[tuple]
    dynamic: bool
    exact: bool


def _channel_range(g: Geometry, c: int) -> str:
    axis = 1 if g.batch else 0
    if g.chan == "literal":
        return f"range({c})"
    if g.chan == "len" and not g.batch:
        return "range(len(x))"
    return f"range(x.shape[{axis}])"


def _reduction(g: Geometry, c: int, pix: str, s: str) -> list[str]:
    """The lines that compute ``acc`` for output ``(o, i, j)``."""
    init = "b[o]" if g.bias == "init" else g.zero
    if g.slices:
        rows, cols = f"{s}i:{s}i + {g.kh}", f"{s}j:{s}j + {g.kw}"
        lead = "n, :" if g.batch else ":"
        return [f"acc = {init} + np.sum(x[{lead}, {rows}, {cols}] * w[o])"]
    step = "acc = acc + {t}" if g.plus else "acc += {t}"
    term = f"x[{pix}c, {s}i + a, {s}j + q] * w[o, c, a, q]"
    return [f"acc = {init}",
            f"for c in {_channel_range(g, c)}:",
            f"    for a in range({g.kh}):",
            f"        for q in range({g.kw}):",
            "            " + step.format(t=term)]


def source_of(g: Geometry, c: int) -> str:
    """The source of ``prog(x, w, b)`` for geometry ``g`` (``c``: a literal channel
    count, used when ``g.chan == "literal"``)."""
    s = "" if g.stride == 1 else f"{g.stride} * "
    pix = "n, " if g.batch else ""
    epi = {"": "acc", "max": "max(acc, 0.0)", "maximum": "np.maximum(acc, 0)"}[g.relu]
    if g.bias == "after":
        epi = f"({epi.replace('acc', 'acc + b[o]', 1)})" if g.relu else "acc + b[o]"
    oh, ow = (f"(x.shape[{ax}] - {k}) // {g.stride} + 1" if g.stride > 1
              else f"x.shape[{ax}] - {k - 1}" for ax, k in ((-2, g.kh), (-1, g.kw)))
    lead = "x.shape[0], " if g.batch else ""
    body = [f"out = np.zeros(({lead}w.shape[0], {oh}, {ow}), dtype=x.dtype)"]
    loops = (["for n in range(x.shape[0]):"] if g.batch else []) + [
        "for o in range(w.shape[0]):", "for i in range(out.shape[-2]):",
        "for j in range(out.shape[-1]):"]
    inner = [*_reduction(g, c, pix, s), f"out[{pix}o, i, j] = {epi}"]
    for depth, line in enumerate(loops):
        body.append("    " * depth + line)
    body += ["    " * len(loops) + line for line in inner]
    text = "".join(f"    {line}\n" for line in [*body, "return out"])
    return f"import numpy as np\n\n\ndef prog(x, w, b):\n{text}"


def _geometry(rng: np.random.Generator) -> Geometry:
    pick = lambda xs: xs[int(rng.integers(len(xs)))]  # noqa: E731
    slices = bool(rng.integers(4) == 0)
    return Geometry(
        batch=bool(rng.integers(3) == 0), kh=int(rng.integers(1, 4)),
        kw=int(rng.integers(1, 4)), stride=int(pick((1, 1, 2))),
        bias=pick(("", "init", "after")), relu=pick(("", "", "max", "maximum")),
        chan="shape" if slices else pick(("literal", "shape", "len")), slices=slices,
        plus=bool(rng.integers(2)),
        zero=pick(("0.0", "0.0", "x.dtype.type(0)", "np.float32(0)")))


def _array(rng: np.random.Generator, shape: tuple, dtype: type, exact: bool,
           taps: int = 1) -> np.ndarray:
    if exact:  # partial sums below 2048 (exact in float16): |x * w| <= 4, or 1
        top = 2 if 4 * taps + 2 < 2048 else 1
        return rng.integers(-top, top + 1, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _args(rng: np.random.Generator, g: Geometry, c: int, o: int, dtype: type,
          exact: bool) -> tuple:
    h = int(rng.integers(g.kh, g.kh + 12))
    wd = int(rng.integers(g.kw, g.kw + 12))
    lead = (int(rng.integers(1, 3)),) if g.batch else ()
    taps = c * g.kh * g.kw
    x = _array(rng, (*lead, c, h, wd), dtype, exact, taps)
    w = _array(rng, (o, c, g.kh, g.kw), dtype, exact, taps)
    b = _array(rng, (o,), dtype, exact, taps)
    if rng.integers(3) == 0:  # strided, Fortran-ordered or reversed views
        x, w = as_view(rng, x), as_view(rng, w)
    return x, w, b


def draw(seed: int) -> Case:
    """Seed ``seed``'s conv form and calls: static shapes (one call) or
    ``dynamic_shape`` (2-3 calls of different ``C`` and image sizes)."""
    rng = np.random.default_rng(seed + 70_000)
    g = _geometry(rng)
    # cube-sized draws (static shapes: the loop-conv-cube route) 2 in 5 times: C * KH *
    # KW taps past batch-loops' unroll limit (loop_conv_nest) or enough outputs that
    # the cube pays for the stencil's chain (loop_conv)
    big = rng.integers(5) < 2  # (a kernel axis of 1, a tap loop of one trip, too)
    dynamic = g.chan != "literal" and not big and bool(rng.integers(2))
    taps = g.kh * g.kw
    c = int(rng.integers(560, 1000)) // taps if big else int(rng.integers(1, 9))
    o = int(rng.integers(8, 25)) if big else int(rng.integers(1, 9))
    dtype = DTYPES[int(rng.integers(2))]
    exact = bool(rng.integers(3) != 0)
    counts = [c] if not dynamic else [c, *(int(rng.integers(0, c + 3))
                                           for _ in range(int(rng.integers(1, 3))))]
    if g.chan == "literal":
        counts = [c]
    calls = [_args(rng, g, k, o, dtype, exact) for k in counts]
    source = source_of(g, c)
    return Case(load(source), source, calls, dynamic, exact)


def tap_count(case: Case, args: tuple) -> int:
    """Terms of one output's sum (channels times taps; the bias adds one)."""
    w = args[1]
    return int(np.prod(w.shape[1:])) + 1
