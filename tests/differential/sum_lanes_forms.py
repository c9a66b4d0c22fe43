"""Seeded draws of the loop sums the CPU ``sum-lanes`` pass rewrites (``s += e`` in an
innermost loop, ``ir/passes/sum_lanes.py``), and what their result must be
(``test_sum_lanes_properties`` runs them).

A draw picks the accumulator's dtype (float32/float64), its update (``s += e``,
``s = s + e``, ``s = e + s``, ``s -= e``, ``s = s - e``), its term ``e`` (loads,
products, squared differences, ``abs``/``sqrt``, a conditional expression), its initial
value (``0``, ``-0.0``, an argument), the loop's bounds (``range(x.shape[0])``,
``range(len(x))``, a scalar argument ``n``, ``range(1, ...)``), whether the sum is per
row of a 2-d input (an inner loop, its result stored: ``output-accumulators``), the
inputs' layout (contiguous, every other element, reversed, a column of a C-order
array), special values (``nan``, ``inf``, ``-0.0`` only) and 1-3 calls of sizes drawn
around the pass's thresholds (15-17 lanes, 127-129 a block, 65,536 a thread chunk).

The claim checked: a rewritten loop from ``+0.0`` has the bits of the compiled
``np.sum`` of the same terms (``-e`` for ``s - e``) for any thread count; from another
initial value it is within ``np.sum``'s bound of the exact sum; a loop the pass leaves
alone has the Python loop's bits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TERMS = (
    ("x[{i}]", lambda x, y: x),
    ("x[{i}] * y[{i}]", lambda x, y: x * y),
    ("(x[{i}] - y[{i}]) * (x[{i}] - y[{i}])", lambda x, y: (x - y) * (x - y)),
    ("abs(x[{i}] - y[{i}])", lambda x, y: np.abs(x - y)),
    ("np.sqrt(np.abs(x[{i}]))", lambda x, y: np.sqrt(np.abs(x))),
    ("x[{i}] * x[{i}] + y[{i}]", lambda x, y: x * x + y),
    ("(x[{i}] if x[{i}] > y[{i}] else y[{i}])", lambda x, y: np.where(x > y, x, y)),
)
"""The term ``e`` (Python source of index ``{i}``) and the same terms in numpy."""

UPDATES = (("s += {e}", 1), ("s = s + {e}", 1), ("s = {e} + s", 1),
           ("s -= {e}", -1), ("s = s - {e}", -1))
"""The update of ``s`` and the sign its term enters the sum with."""

HEADER = "import numpy as np\n\n\n"

SIZES = (0, 1, 2, 15, 16, 17, 31, 127, 128, 129, 255, 1000, 4097, 65535, 65536, 65537,
         131_073, 200_003)


@dataclass
class LoopSum:
    """One drawn loop sum: its source (``def prog(x, y, n, s0)``), the term rule, how
    ``s`` starts (``"zero"``, ``"negzero"``, ``"arg"``), whether it is per row (the
    result an array), ``dynamic_shape``, and the argument tuples of its calls."""

    source: str
    term: object
    sign: int
    init: str
    rows: bool
    dynamic: bool
    first: int
    calls: list[tuple] = field(default_factory=list)

    def terms(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The terms the loop adds (``-e`` for ``s - e``), over the loop's range."""
        t = self.term(x[..., self.first:], y[..., self.first:])  # type: ignore[operator]
        return -t if self.sign < 0 else t


def _source(term: str, update: str, init: str, bound: str, rows: bool, dtype: str) -> str:
    start = {"zero": f"np.{dtype}(0.0)", "negzero": f"np.{dtype}(-0.0)", "arg": "s0"}[init]
    if not rows:
        e = term.format(i="i")
        return (f"{HEADER}def prog(x, y, n, s0):\n    s = {start}\n"
                f"    for i in {bound}:\n        {update.format(e=e)}\n    return s\n")
    e = term.format(i="r, i")
    bound = bound.replace("x.shape[0]", "x.shape[1]").replace("len(x)", "x.shape[1]")
    return (f"{HEADER}def prog(x, y, n, s0):\n    out = np.zeros(x.shape[0], x.dtype)\n"
            f"    for r in range(x.shape[0]):\n        s = {start}\n"
            f"        for i in {bound}:\n            {update.format(e=e)}\n"
            f"        out[r] = s\n    return out\n")


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    x = rng.standard_normal(shape).astype(dtype)
    special = rng.integers(8)
    flat = x.reshape(-1)
    if special == 1 and flat.size:
        flat[rng.integers(flat.size)] = rng.choice([np.nan, np.inf, -np.inf])
    elif special == 2:
        flat[:] = -0.0
    elif special == 3:
        flat *= dtype(rng.choice([1e-30, 1e30]) if dtype == np.float64 else 1.0)
    return x


def _layout(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """``x`` itself or the same values as every other element, reversed, or a column."""
    kind = rng.integers(4)
    if kind == 1:
        wide = np.zeros((*x.shape[:-1], 2 * x.shape[-1]), x.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]
    if kind == 2:
        return x[..., ::-1].copy()[..., ::-1]
    if kind == 3 and x.ndim == 1:
        tall = np.zeros((x.shape[0], 3), x.dtype)
        tall[:, 1] = x
        return tall[:, 1]
    return x


def draw(seed: int) -> LoopSum:
    """The loop sum of ``seed`` and 1-3 calls of it."""
    rng = np.random.default_rng(seed)
    dtype = (np.float32, np.float64)[rng.integers(2)]
    term, rule = TERMS[rng.integers(len(TERMS))]
    update, sign = UPDATES[rng.integers(len(UPDATES))]
    init = ("zero", "zero", "negzero", "arg")[rng.integers(4)]
    bound, first = (("range(x.shape[0])", 0), ("range(len(x))", 0), ("range(n)", 0),
                    ("range(1, x.shape[0])", 1))[rng.integers(4)]
    rows = bool(rng.integers(4) == 0)
    case = LoopSum(_source(term, update, init, bound, rows, dtype.__name__), rule, sign,
                   init, rows, bool(rng.integers(2)), first)
    for _ in range(int(rng.integers(1, 4))):
        n = int(rng.choice(SIZES if not rows else SIZES[:12]))
        shape = (int(rng.integers(1, 5)), n) if rows else (n,)
        x, y = (_layout(rng, _values(rng, shape, dtype)) for _ in range(2))
        s0 = dtype(rng.choice([0.0, -0.0, 1.5, -1e3, 1e-3]))
        case.calls.append((x, y, shape[-1], s0))
    return case
