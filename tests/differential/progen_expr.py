"""Random expressions for generated ``@hybrid`` programs: types, scopes and the rules.

An expression is Python source text plus what the generator knows about it: its
symbolic shape (dims ``"n"`` and ``"m"`` of the input ``a``, ``"n-1"``, ``"h"`` for
``ceil(n / 2)``, ``"q"`` for ``n // 2``, ``"m-1"``, ``"mh"``, ``"nm"`` for ``n * m``,
``"1"``) and whether it is *fuzzy* (it may differ from numpy by
rounding: transcendental calls, float sums, non-trivial powers).  Dtypes are not
predicted by hand: every candidate is evaluated with numpy on small sample values of
the names in scope (:meth:`Scope.probe`), which gives its exact type under numpy's own
promotion rules and rejects what numpy rejects.  Shapes are symbolic so that only
combinations valid for *every* size are generated.

Values stay in safe domains by construction: fuzzy values never reach a discontinuous
operation (``//``, ``%``, comparisons, casts to integers); integer powers have small
literal exponents; floats are cast to integers only from the (finite) inputs; Python
scalars are divided only by non-zero literals (Python raises, numpy does not).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from progen_dtypes import CASTS, cast_allowed, weak_conflict
from progen_views import indexed_texts, view_texts

Draw = Callable[[Any], Any]
Rule = Callable[..., Any]  # (ExprGen, depth, within, exact) -> Expr | None


class Choices:
    """Where the generators' random choices come from: ``integer(lo, hi)``.

    ``Choices(draw)`` takes hypothesis draws (``data.draw``: reproducible, shrinkable,
    for tests); :class:`SeededChoices` a seeded PRNG (for campaigns of thousands of
    programs: a hypothesis draw costs ~40 us and a program makes ~1000 of them)."""

    def __init__(self, draw: Draw) -> None:
        from hypothesis import strategies as st

        self._draw, self._st = draw, st

    def integer(self, lo: int, hi: int) -> int:
        """An int in ``[lo, hi]`` (hypothesis shrinks towards ``lo``)."""
        return self._draw(self._st.integers(lo, hi))


class SeededChoices(Choices):
    """Choices from ``random.Random(seed)``: the same seed gives the same program."""

    def __init__(self, seed: int | str) -> None:
        import random

        self._rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self._rng.randint(lo, hi)
SAMPLE_SIZES = ({"n": 5, "m": 3}, {"n": 4, "m": 6})
"""Two size assignments: a shape combination valid for both is valid for all sizes
the symbolic rules allow (sizes differ, and none is 1)."""


def dim_size(dim: str, sizes: dict[str, int]) -> int:
    """The concrete size of a symbolic dim."""
    n, m = sizes["n"], sizes["m"]
    return {"n": n, "m": m, "n-1": max(n - 1, 0), "h": (n + 1) // 2, "q": n // 2,
            "m-1": m - 1, "mh": (m + 1) // 2, "nm": n * m, "1": 1}[dim]


def bshape(x: tuple[str, ...], y: tuple[str, ...]) -> tuple[str, ...] | None:
    """numpy broadcasting of symbolic shapes, or None if some sizes would not match."""
    out = []
    for i in range(1, max(len(x), len(y)) + 1):
        a = x[-i] if i <= len(x) else "1"
        b = y[-i] if i <= len(y) else "1"
        if a != b and "1" not in (a, b):
            return None
        out.append(b if a == "1" else a)
    return tuple(reversed(out))


@dataclass(frozen=True)
class Expr:
    """Source text, symbolic shape, fuzziness and the numpy signature of the samples."""

    text: str
    shape: tuple[str, ...]
    fuzzy: bool = False
    sig: tuple = ()

    @property
    def dtype(self) -> str:
        return self.sig[1] if self.sig else ""

    @property
    def weak(self) -> bool:
        return bool(self.sig) and self.sig[0].startswith("py")


def signature(v: Any) -> tuple:
    """(kind, dtype, ndim) of a value: Python scalars are weak, 0-d arrays differ from
    numpy scalars (results must have the same kind on every path)."""
    if isinstance(v, bool | int | float) and not isinstance(v, np.generic):
        return (f"py-{type(v).__name__}", type(v).__name__, 0)
    if isinstance(v, np.generic):
        return ("np-scalar", v.dtype.name, 0)
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.name, v.ndim)
    return ("other", type(v).__name__, 0)


@dataclass
class Scope:
    """Names in scope with their symbolic shapes and one sample value per size set."""

    shapes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    fuzzy: dict[str, bool] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=lambda: [{} for _ in SAMPLE_SIZES])
    loops: dict[str, str] = field(default_factory=dict)  # loop variable -> dim it indexes
    # probes by text, shared with child scopes: every name is bound once (fresh names),
    # so a text means the same in every scope that can see all of its names
    cache: dict[str, tuple[list[Any], tuple] | None] = field(default_factory=dict)
    recent: list[str] = field(default_factory=list)  # the last names bound (used more)

    def bind(self, name: str, shape: tuple[str, ...], fuzzy: bool,
             values: list[Any]) -> None:
        """Add (or rebind) a name."""
        self.shapes[name], self.fuzzy[name] = shape, fuzzy
        self.recent = [*self.recent[-1:], name]
        for sample, v in zip(self.samples, values, strict=True):
            sample[name] = v

    def child(self) -> Scope:
        """A copy for a nested block (names bound inside are dropped at its end)."""
        return Scope(dict(self.shapes), dict(self.fuzzy),
                     [dict(s) for s in self.samples], dict(self.loops), self.cache,
                     list(self.recent))

    def probe(self, text: str) -> list[Any] | None:
        """The values of ``text`` on every sample, or None if numpy rejects it."""
        found = self._probe(text)
        return None if found is None else found[0]

    def _probe(self, text: str) -> tuple[list[Any], tuple] | None:
        if text not in self.cache:
            self.cache[text] = self._evaluate(text)
        return self.cache[text]

    def _evaluate(self, text: str) -> tuple[list[Any], tuple] | None:
        out = []
        with np.errstate(all="ignore"):
            for sample in self.samples:
                try:
                    out.append(eval(text, {"np": np}, sample))  # noqa: S307
                except Exception:
                    return None
        sigs = {signature(v) for v in out}
        if len(sigs) != 1 or next(iter(sigs))[0] == "other":
            return None
        return out, sigs.pop()

    def expr(self, text: str, shape: tuple[str, ...], fuzzy: bool) -> Expr | None:
        """An :class:`Expr` if numpy accepts ``text`` with one signature everywhere."""
        found = self._probe(text)
        return None if found is None else Expr(text, shape, fuzzy, found[1])


ARITH = ("+", "-", "*", "/", "//", "%", "**")
DISCONTINUOUS = ("//", "%")
MATH = ("np.exp(-np.abs({}))", "np.log(np.abs({}) + 1)", "np.tanh({})")
INT_LITERALS = (2, 3, -1, 1, 5, 0, -4)
FLOAT_LITERALS = (0.5, -1.25, 2.0, 0.75, 3.5)


class ExprGen:
    """Draws random expressions over a scope; ``budget`` collects the error budget
    (transcendental calls and summed terms) of everything drawn."""

    def __init__(self, choices: Choices, scope: Scope, sizes: dict[str, int],
                 rules: tuple[Rule, ...] = ()) -> None:
        self.choices = choices
        self.scope = scope
        self.sizes = sizes
        self.rules = rules  # further expression rules: rule(gen, depth, within, exact)
        self.math = 0
        self.terms = 0
        self.work: set[str] = set()  # float dtypes of the fuzzy computations (their ulps)

    def pick(self, options: Any) -> Any:
        """One of ``options`` (shrinks towards the first)."""
        options = list(options)
        return options[self.choices.integer(0, len(options) - 1)]

    def chance(self, p: float) -> bool:
        """True with probability about ``p``."""
        return self.choices.integer(0, 99) < int(p * 100)

    def integer(self, lo: int, hi: int) -> int:
        """An int in ``[lo, hi]``."""
        return self.choices.integer(lo, hi)

    # -- leaves
    def leaf(self, within: tuple[str, ...] | None = None, exact: bool = False) -> Expr:
        """A name, an element, row, column or view of one, or a literal (broadcastable
        to ``within``)."""
        if self.chance(0.8):
            views = self.chance(0.3)
            cands = [c for c in self._leaf_texts(views)
                     if (within is None or bshape(c[1], within) == within)
                     and not (exact and c[2])]
            recent = [c for c in cands if c[0] in self.scope.recent]
            for _ in range(3 if cands else 0):  # numpy may reject the view drawn
                text, shape, fuzzy = self.pick(recent if recent and self.chance(0.4)
                                               else cands)
                e = self.scope.expr(text, shape, fuzzy)
                if e is not None:
                    return e
        if self.chance(0.6):
            return self.scope.expr(str(self.pick(INT_LITERALS)), (), False)  # type: ignore
        return self.scope.expr(str(self.pick(FLOAT_LITERALS)), (), False)  # type: ignore

    def _leaf_texts(self, views: bool) -> list[tuple[str, tuple[str, ...], bool]]:
        """``(text, shape, fuzzy)`` of views of names, else of names and their elements."""
        out = []
        for name, shape in self.scope.shapes.items():
            texts = view_texts(name, shape) if views else \
                [(name, shape), *indexed_texts(name, shape, self.scope.loops)]
            out += [(t, shp, self.scope.fuzzy[name]) for t, shp in texts]
        return out

    # -- composite expressions
    def expr(self, depth: int, within: tuple[str, ...] | None = None,
             exact: bool = False) -> Expr:
        """A random expression of nesting at most ``depth`` whose shape broadcasts to
        ``within``; ``exact`` forbids fuzzy values."""
        if depth <= 0 or self.chance(0.25):
            return self.leaf(within, exact)
        rules = [self.binary, self.binary, self.unary, self.where, self.cast]
        rules += [lambda *a, rule=rule: rule(self, *a) for rule in self.rules]
        if not exact:
            rules.append(self.math_call)
        for _ in range(3):  # a rule may not fit the operands it drew
            e = self.pick(rules)(depth, within, exact)
            if e is not None:
                return e
        return self.leaf(within, exact)

    def binary(self, depth: int, within, exact: bool) -> Expr | None:
        x = self.expr(depth - 1, within, exact)
        op = self.pick(ARITH + ("max", "min", "np.maximum", "np.minimum"))
        if op == "**":
            return self._power(x)
        y = self.expr(depth - 1, within, exact or op in DISCONTINUOUS)
        if op in DISCONTINUOUS and x.fuzzy:
            return None
        if weak_conflict(x.text, x.sig, y.sig) or weak_conflict(y.text, y.sig, x.sig):
            return None
        if op in ("/", "//", "%") and x.weak and y.weak:
            y = self.scope.expr(str(self.pick((2, 3, -2, 0.5))), (), False)  # type: ignore
        shape = bshape(x.shape, y.shape)
        if shape is None or (within is not None and bshape(shape, within) != within):
            return None
        if op in ("max", "min"):  # Python builtins: they return one of their arguments,
            if shape or x.sig != y.sig:  # so only scalars of one type keep a static type
                return None
            text = f"{op}({x.text}, {y.text})"
        elif op.startswith("np."):
            text = f"{op}({x.text}, {y.text})"
        else:
            text = f"({x.text} {op} {y.text})"
        return self.scope.expr(text, shape, x.fuzzy or y.fuzzy)

    def _power(self, x: Expr) -> Expr | None:
        if x.weak:  # Python ints do not wrap: keep run-time Python ints small
            return None
        k = self.pick((2, 3, 1, 0))
        e = self.scope.expr(f"({x.text} ** {k})", x.shape, x.fuzzy)
        if e is not None and k == 3 and e.dtype.startswith("float"):
            self.math += 1  # numpy calls pow(); a backend may multiply
            self.work.add(e.dtype)
            return Expr(e.text, e.shape, True, e.sig)
        return e

    def unary(self, depth: int, within, exact: bool) -> Expr | None:
        x = self.expr(depth - 1, within, exact)
        form = self.pick(("-{}", "abs({})", "np.abs({})", "np.sqrt(np.abs({}))"))
        return self.scope.expr(form.format(x.text), x.shape, x.fuzzy)

    def math_call(self, depth: int, within, exact: bool) -> Expr | None:
        x = self.expr(depth - 1, within, exact)
        e = self.scope.expr(self.pick(MATH).format(x.text), x.shape, True)
        self.math += e is not None
        if e is not None:  # np.exp of int8 computes in float16, of int16 in float32
            self.work.add(e.dtype)
        return e

    def where(self, depth: int, within, exact: bool) -> Expr | None:
        c = self.condition(depth - 1, within)
        x, y = self.expr(depth - 1, within, exact), self.expr(depth - 1, within, exact)
        shape = bshape(bshape(c.shape, x.shape) or ("?",), y.shape)  # type: ignore[arg-type]
        if shape is None or "?" in shape or (within is not None
                                             and bshape(shape, within) != within):
            return None
        return self.scope.expr(f"np.where({c.text}, {x.text}, {y.text})", shape,
                               x.fuzzy or y.fuzzy)

    def cast(self, depth: int, within, exact: bool) -> Expr | None:
        x = self.expr(depth - 1, within, exact)
        to = self.pick(CASTS)
        runtime_int = x.sig[:1] == ("py-int",) and not re.fullmatch(r"-?\d+", x.text)
        if not cast_allowed(to, x.dtype, self.is_input(x), x.fuzzy, runtime_int):
            return None
        text = f"{x.text}.astype({to})" if x.sig[:1] == ("array",) else f"{to}({x.text})"
        return self.scope.expr(text, x.shape, x.fuzzy)

    @staticmethod
    def is_input(x: Expr) -> bool:
        """An input read as is (finite values), e.g. ``a``, ``a[i0]``, ``b[::2]``, ``s``."""
        return re.fullmatch(r"[abs](\[[^\]]*\]|\.T|\.ravel\(\)|\.reshape\([^()]*\))*",
                            x.text) is not None

    def condition(self, depth: int, within: tuple[str, ...] | None = None) -> Expr:
        """A boolean expression (array or scalar) built from exact values."""
        x = self.expr(max(depth, 0), within, exact=True)
        y = self.expr(0, within, exact=True)
        if y.text == x.text:  # `s >= s` decides nothing
            y = self.scope.expr(str(self.pick(INT_LITERALS)), (), False)  # type: ignore
        op = self.pick((">", "<", "<=", ">=", "==", "!="))
        shape = bshape(x.shape, y.shape)
        if shape is not None and (within is None or bshape(shape, within) == within):
            e = self.scope.expr(f"({x.text} {op} {y.text})", shape, False)
            if e is not None:
                return e
        return self.scope.expr("(0 < 1)", (), False)  # type: ignore[return-value]
