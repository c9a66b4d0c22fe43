"""Random ``@hybrid`` programs: statements, control flow and whole functions as source.

:func:`generate` draws (through hypothesis) the inputs and the text of a function
``prog(a, b, s)`` — ``a`` a 1-d or 2-d array, ``b`` an array of ``a``'s shape or of
its rows, ``s`` a Python int or float — made of:

* straight-line temporaries (expressions of ``progen_expr``);
* a result buffer ``out`` (``np.zeros_like``) written through ``out[i] = ...``,
  ``out[1:] = ...`` and ``out[::2] = ...``;
* loop-carried values that the function returns: a numpy scalar ``acc``, a row array
  ``row`` (2-d inputs), a Python int ``cnt``; each update keeps their type (numpy and
  the compiler agree on types only for type-stable programs);
* ``for`` loops over ``range`` (forwards, backwards, strided, nested over both axes) and
  ``while`` loops with a bounded counter, with ``if``/``elif``/``else`` whose branches
  may end in ``break``, ``continue`` or an early ``return``.

The source is registered in ``linecache`` and ``exec``'d, as a notebook cell would be,
and the function is decorated with ``@hybrid``.  :attr:`Program.tol` is the error budget
of the fuzzy parts (transcendental calls times loop trips, float sums).
"""

from __future__ import annotations

import hashlib
import linecache
from dataclasses import dataclass
from typing import Any

import numpy as np
from diff import EXACT, Tol, in_layout
from progen_expr import SAMPLE_SIZES, Draw, Expr, ExprGen, Scope, bshape, dim_size

INPUT_DTYPES = ("int32", "int64", "float32", "float64")
SIZES_N = (0, 1, 2, 3, 7, 13)
SIZES_M = (1, 2, 5, 7)
LAYOUTS = ("C", "C", "reversed", "step2", "transposed", "reversed-inner")


@dataclass
class Program:
    """A generated function, its inputs and the tolerance its results need."""

    source: str
    fn: Any
    args: tuple
    tol: Tol | float


def values(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Input data: small integers, or multiples of 1/4 for floats."""
    rng = np.random.default_rng(seed)
    if dtype.startswith("float"):  # quarters: exact in every dtype, zeros included
        return (rng.integers(-12, 13, shape) / 4).astype(dtype)
    return rng.integers(-9, 10, shape).astype(dtype)


class ProgramGen:
    """Builds the source of one random function, statement by statement."""

    def __init__(self, draw: Draw, ndim: int, sizes: dict[str, int], dtypes: dict) -> None:
        self.scope = Scope()
        self.gen = ExprGen(draw, self.scope, sizes)
        self.lines: list[str] = []
        self.ndim, self.sizes, self.dtypes = ndim, sizes, dtypes
        self.carried: dict[str, Expr] = {}
        self.counter = 0
        self.trips = 1

    def fresh(self, prefix: str) -> str:
        """A new unique name."""
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def bind(self, name: str, e: Expr) -> None:
        """Bind ``name`` to ``e`` (its shape, fuzziness and sample values)."""
        samples = self.scope.probe(e.text)
        assert samples is not None, e.text
        self.scope.bind(name, e.shape, e.fuzzy, samples)

    # -- the function
    def inputs(self, b_rows: bool, s_kind: str) -> None:
        a_shape = ("n", "m")[:self.ndim]
        b_shape = a_shape[1:] if b_rows else a_shape
        for name, shape in (("a", a_shape), ("b", b_shape)):
            vals = [values(tuple(dim_size(d, sz) for d in shape), self.dtypes[name], 1)
                    for sz in SAMPLE_SIZES]
            self.scope.bind(name, shape, False, vals)
        self.scope.bind("s", (), False, [2 if s_kind == "int" else 0.75] * len(SAMPLE_SIZES))

    def prologue(self) -> None:
        """Temporaries and the returned, loop-carried names."""
        for _ in range(self.gen.draw(self.gen.st.integers(0, 2))):
            self.assign_temp(1, returned=True)
        out_dtype = self.gen.pick(("a.dtype", "np.float64"))
        self.init("out", f"np.zeros_like(a, dtype={out_dtype})", ("n", "m")[:self.ndim])
        dt = self.gen.pick(("np.float64", "np.float32", "np.int64", "np.int32"))
        self.init("acc", f"{dt}(0)", ())
        if self.ndim == 2:
            self.init("row", f"np.zeros(a.shape[1:], {dt})", ("m",))
        self.init("cnt", "0", (), fuzzy=False)

    def init(self, name: str, text: str, shape: tuple[str, ...],
             fuzzy: bool | None = None) -> None:
        fz = self.gen.chance(0.5) if fuzzy is None else fuzzy
        e = self.scope.expr(text, shape, fz)
        assert e is not None, text
        self.emit(1, f"{name} = {text}")
        self.bind(name, e)
        self.carried[name] = Expr(name, shape, fz, e.sig)

    def returns(self) -> str:
        return "return " + ", ".join(self.carried)

    # -- statements
    def assign_temp(self, indent: int, returned: bool = False) -> None:
        e = self.gen.expr(3)
        name = self.fresh("t")
        self.emit(indent, f"{name} = {e.text}")
        self.bind(name, e)
        if returned:
            self.carried[name] = Expr(name, e.shape, e.fuzzy, e.sig)

    def update(self, indent: int) -> None:
        """A type-preserving update of a returned name (a no-op if none fits)."""
        name = self.gen.pick([n for n in self.carried if not n.startswith("t")])
        if name == "cnt":
            loops = list(self.scope.loops)
            self.emit(indent, self.gen.pick(["cnt += 1", "cnt = cnt + 2"] +
                                            [f"cnt = cnt + {v}" for v in loops]))
            return
        if name == "out":
            self.write(indent)
            return
        var = self.carried[name]
        for _ in range(4):
            e = self.gen.expr(2, var.shape, exact=not var.fuzzy)
            op = self.gen.pick(("+", "-", "*", "np.maximum"))
            text = f"{op}({name}, {e.text})" if op.startswith("np.") else \
                f"{name} {op} {e.text}"
            got = self.scope.expr(text, var.shape, var.fuzzy)
            if got is not None and got.sig == var.sig and bshape(e.shape, var.shape) \
                    == var.shape:
                in_place = not op.startswith("np.") and self.gen.chance(0.4)
                self.emit(indent, f"{name} {op}= {e.text}" if in_place else
                          f"{name} = {text}")
                return

    def write(self, indent: int) -> None:
        """``out[i] = e``, ``out[1:] = e`` or ``out[::2] = e`` (castable, broadcastable)."""
        out = self.carried["out"]
        loops = self.scope.loops.items()
        elements = [(f"out[{v}]", out.shape[1:]) for v, d in loops if d == "n"]
        if self.ndim == 2:
            elements += [(f"out[{i}, {j}]", ()) for i, di in loops for j, dj in loops
                         if (di, dj) == ("n", "m")]
        targets = elements * 3 + [("out[1:]", ("n-1", *out.shape[1:])),
                                  ("out[::2]", ("h", *out.shape[1:]))]
        target, shape = self.gen.pick(targets)
        op = self.gen.pick(("", "", "+", "*"))  # `out[...] = e` or `out[...] op= e`
        for _ in range(4):
            e = self.gen.expr(2, shape, exact=not out.fuzzy)
            value = self.scope.expr(f"{target} {op} ({e.text})" if op else e.text, shape,
                                    e.fuzzy)
            if value is None or bshape(e.shape, shape) != shape:
                continue
            src = np.dtype({"int": "int64", "float": "float64", "bool": "bool"}.get(
                value.dtype, value.dtype))
            if np.can_cast(src, np.dtype(out.dtype), "same_kind"):
                self.emit(indent, f"{target} {op}= {e.text}")
                return

    # -- control flow
    def block(self, indent: int, depth: int, in_loop: bool, jump: bool = False) -> None:
        """1-3 statements in a nested scope; ``jump``: maybe end with a jump."""
        outer, start = self.scope, len(self.lines)
        self.scope = self.gen.scope = outer.child()
        for _ in range(self.gen.draw(self.gen.st.integers(1, 3))):
            self.statement(indent, depth, in_loop)
        if len(self.lines) == start:  # every update drawn was a no-op
            self.emit(indent, "pass")
        if jump and self.gen.chance(0.6 if in_loop else 0.15):
            jumps = ["break", "continue", "continue", self.returns()]
            self.emit(indent, self.gen.pick(jumps if in_loop else jumps[-1:]))
        self.scope = self.gen.scope = outer

    def statement(self, indent: int, depth: int, in_loop: bool) -> None:
        simple = [self.assign_temp, self.update, self.update, self.write]
        nested = [self.if_, self.if_, self.for_, self.for_, self.while_] + \
            ([self.nest_] if self.ndim == 2 else [])
        rules = simple + (nested if depth > 0 else [])
        rule = self.gen.pick(rules)
        if rule in simple:
            rule(indent)
        else:
            rule(indent, depth, in_loop)

    def if_(self, indent: int, depth: int, in_loop: bool) -> None:
        self.emit(indent, f"if {self.truth()}:")
        self.block(indent + 1, depth - 1, in_loop, jump=True)
        while self.gen.chance(0.3):
            self.emit(indent, f"elif {self.truth()}:")
            self.block(indent + 1, depth - 1, in_loop, jump=True)
        if self.gen.chance(0.5):
            self.emit(indent, "else:")
            self.block(indent + 1, depth - 1, in_loop, jump=True)

    def for_(self, indent: int, depth: int, in_loop: bool,
             axis: int | None = None, body: Any = None) -> None:
        if axis is None:
            axis = 1 if self.ndim == 2 and self.gen.chance(0.2) else 0
        var, dim, size = self.fresh("i"), "nm"[axis], f"a.shape[{axis}]"
        self.emit(indent, f"for {var} in " + self.gen.pick(
            (f"range({size})", f"range(1, {size})", f"range({size} - 1, -1, -1)",
             f"range(0, {size}, 2)")) + ":")
        outer_trips = self.trips
        self.trips *= max(dim_size(dim, self.sizes), 1)
        self.enter_loop(var, dim, body or (lambda: self.block(indent + 1, depth - 1, True)))
        self.trips = outer_trips

    def nest_(self, indent: int, depth: int, in_loop: bool) -> None:
        """A loop over the rows of ``a`` around a loop over its columns."""
        self.for_(indent, depth, in_loop, 0, lambda: self.for_(indent + 1, depth, True, 1))

    def while_(self, indent: int, depth: int, in_loop: bool) -> None:
        k, limit = self.fresh("k"), self.gen.pick((2, 3, 4))
        self.emit(indent, f"{k} = 0")
        self.scope.bind(k, (), False, [1] * len(SAMPLE_SIZES))
        cond = f" and {self.truth()}" if self.gen.chance(0.6) else ""
        self.emit(indent, f"while {k} < {limit}{cond}:")
        self.emit(indent + 1, f"{k} += 1")  # first, so that `continue` cannot spin
        outer_trips = self.trips
        self.trips *= limit
        self.block(indent + 1, depth - 1, True)
        self.trips = outer_trips

    def enter_loop(self, var: str, dim: str, body: Any) -> None:
        outer = self.scope
        self.scope = self.gen.scope = outer.child()
        self.scope.loops[var] = dim
        self.scope.bind(var, (), False, [1] * len(SAMPLE_SIZES))
        body()
        self.scope = self.gen.scope = outer

    def truth(self) -> str:
        """A scalar condition from exact values."""
        form = self.gen.pick(("cmp", "any", "all", "and", "not"))
        if form in ("any", "all"):
            c = self.gen.condition(1)
            if c.sig[0] in ("array", "np-scalar"):
                return f"{c.text}.{form}()"
        c = self.gen.condition(1, ())
        if form == "and":
            return f"{c.text} and {self.gen.condition(0, ()).text}"
        return f"not {c.text}" if form == "not" else c.text


def generate(draw: Draw) -> Program:
    """A random program with its inputs (every choice is a hypothesis draw)."""
    from hypothesis import strategies as st

    ndim = draw(st.sampled_from((1, 2)))
    sizes = {"n": draw(st.sampled_from(SIZES_N)), "m": draw(st.sampled_from(SIZES_M))}
    dtypes = {"a": draw(st.sampled_from(INPUT_DTYPES)), "b": draw(st.sampled_from(INPUT_DTYPES))}
    b_rows, s_kind = draw(st.booleans()), draw(st.sampled_from(("int", "float")))
    dynamic = draw(st.booleans())
    pg = ProgramGen(draw, ndim, sizes, dtypes)
    pg.inputs(b_rows, s_kind)
    pg.prologue()
    for _ in range(draw(st.integers(1, 3))):
        pg.statement(1, 2, False)
    pg.emit(1, pg.returns())
    source = ("import numpy as np\nfrom pyasc import hybrid\n\n\n"
              f"@hybrid(dynamic_shape={dynamic})\ndef prog(a, b, s):\n"
              + "\n".join(pg.lines) + "\n")
    a_shape = tuple(sizes[d] for d in "nm"[:ndim])
    a = in_layout(values(a_shape, dtypes["a"], 2), draw(st.sampled_from(LAYOUTS)))
    b = values(a_shape[1:] if b_rows else a_shape, dtypes["b"], 3)
    s = draw(st.integers(-3, 5)) if s_kind == "int" else draw(st.integers(-8, 8)) / 4
    return Program(source, load(source), (a, b, s), _budget(pg, dtypes, source))


def _budget(pg: ProgramGen, dtypes: dict[str, str], source: str) -> Tol:
    if not (pg.gen.math or pg.gen.terms):
        return EXACT
    low = "float32" if "float32" in dtypes.values() or "float32" in source else None
    return Tol(math=pg.gen.math * pg.trips, terms=pg.gen.terms * pg.trips, dtype=low)


def load(source: str) -> Any:
    """``exec`` the source as a notebook cell (registered in ``linecache``)."""
    filename = f"<pyasc-random-{hashlib.sha1(source.encode()).hexdigest()[:12]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace["prog"]
