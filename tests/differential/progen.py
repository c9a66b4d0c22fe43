"""Random ``@hybrid`` programs: statements, control flow and whole functions as source.

:func:`generate` draws (through hypothesis) the inputs and the text of a function
``prog(a, b, s)`` — ``a`` a 1-d or 2-d array, ``b`` an array of ``a``'s shape or of
its rows, ``s`` a Python int or float — made of:

* straight-line temporaries (expressions of ``progen_expr``);
* expressions over names, their elements and their views (``progen_views``),
  reductions with ``axis``/``keepdims`` (``progen_reduce``), matrix products
  (``progen_matmul``) and gathers (``progen_index``), over inputs of mixed dtypes
  (``progen_dtypes``: int8 ... float64 and bool, numpy's NEP 50 promotion);
* a result buffer ``out`` (``np.zeros_like``) written through elements, slices, views,
  index arrays and masks (``progen_writes``);
* returned names rebound to views of other arrays (``progen_views.rebind``), so that
  what a function returns may be one of several arrays chosen by control flow;
* loop-carried values that the function returns: a numpy scalar ``acc``, a row array
  ``row`` (2-d inputs), a Python int ``cnt``; each update keeps their type (numpy and
  the compiler agree on types only for type-stable programs);
* ``for`` loops over ``range`` (forwards, backwards, strided, nested over both axes),
  ``while`` loops with a bounded counter, and loops with data-dependent control
  (``progen_loops``: searches, data-dependent ``break``, loops on a value), with
  ``if``/``elif``/``else`` whose branches may end in ``break``, ``continue`` or an early
  ``return``.

Every construct is a table entry (:data:`SIMPLE`, :data:`NESTED`, :data:`EXPR_RULES`),
so a construct can be drawn, counted and tested on its own.

The source is registered in ``linecache`` and ``exec``'d, as a notebook cell would be,
and the function is decorated with ``@hybrid``.  :attr:`Program.tol` is the error budget
of the fuzzy parts (transcendental calls times loop trips, float sums).
"""

from __future__ import annotations

import hashlib
import linecache
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from diff import EXACT, Tol, in_layout
from progen_accum import PROFILE_LOOPS
from progen_dtypes import ACC_TYPES, OUT_TYPES, WEIGHTED_INPUTS, lowest_float, scalar_range, values
from progen_expr import (
    SAMPLE_SIZES,
    Choices,
    Draw,
    Expr,
    ExprGen,
    Scope,
    SeededChoices,
    bshape,
    dim_size,
)
from progen_index import gather_rule
from progen_loops import converge, find, scan
from progen_matmul import matmul_rule
from progen_reduce import reduce_rule
from progen_stencil import PROFILE_STENCILS
from progen_views import rebind
from progen_writes import scatter, view_write, write

EXPR_RULES = (reduce_rule, reduce_rule, matmul_rule, gather_rule)
"""Expression rules beyond ``ExprGen``'s own (arithmetic, math, where, casts)."""
SIZES_N = (0, 1, 2, 3, 7, 13) * 2 + (300, 2500)
"""Sizes of ``a``'s first dim: small and odd, and (one in seven) large enough for the
device code's tiles, tails and several blocks (no loop runs over a large dim: the IR
interpreter would take minutes)."""
LOOPED_N = 13
SIZES_M = (1, 2, 5, 7)
LOOPS_N, LOOPS_M = SIZES_N + (48, 160), SIZES_M * 2 + (48, 160)
"""Sizes of ``a``'s dims in the ``"loops"`` profile: also axes long enough for windows
the loop passes rewrite (longer than LLVM unrolls whole)."""
LAYOUTS = ("C", "C", "reversed", "step2", "transposed", "reversed-inner")


@dataclass
class Program:
    """A generated function, its inputs and the tolerance its results need."""

    source: str
    fn: Any
    args: tuple
    tol: Tol | float
    layout: str = "C"  # the memory layout of ``a`` (a key of ``diff.LAYOUTS``)


class ProgramGen:
    """Builds the source of one random function, statement by statement."""

    def __init__(self, choices: Choices, ndim: int, sizes: dict[str, int],
                 dtypes: dict, nested: tuple | None = None) -> None:
        self.scope = Scope()
        self.gen = ExprGen(choices, self.scope, sizes, EXPR_RULES)
        self.lines: list[str] = []
        self.ndim, self.sizes, self.dtypes = ndim, sizes, dtypes
        self.carried: dict[str, Expr] = {}
        self.counter = 0
        self.trips = 1
        self.returned_early = False
        self.nested = nested or NESTED  # the statements with a body (by profile)
        self.b_rows = False

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
        self.b_rows = b_rows
        b_shape = a_shape[1:] if b_rows else a_shape
        for name, shape in (("a", a_shape), ("b", b_shape)):
            vals = [values(tuple(dim_size(d, sz) for d in shape), self.dtypes[name], 1)
                    for sz in SAMPLE_SIZES]
            self.scope.bind(name, shape, False, vals)
        self.scope.bind("s", (), False, [2 if s_kind == "int" else 0.75] * len(SAMPLE_SIZES))

    def prologue(self) -> None:
        """Temporaries and the returned, loop-carried names."""
        for _ in range(self.gen.integer(0, 2)):
            self.assign_temp(1, returned=True)
        out_dtype = self.gen.pick(OUT_TYPES)
        self.init("out", f"np.zeros_like(a, dtype={out_dtype})", ("n", "m")[:self.ndim])
        dt = self.gen.pick(ACC_TYPES)
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

    def function_source(self, dynamic: bool) -> str:
        """The module text: the decorated function ``prog(a, b, s)`` of the lines so far
        and a final ``return`` of the carried names."""
        return ("import numpy as np\nfrom pyasc import hybrid\n\n\n"
                f"@hybrid(dynamic_shape={dynamic})\ndef prog(a, b, s):\n"
                + "\n".join([*self.lines, "    " + self.returns()]) + "\n")

    # -- statements
    def assign_temp(self, indent: int, returned: bool = False) -> None:
        e = self.gen.expr(3)
        name = self.fresh("t")
        self.emit(indent, f"{name} = {e.text}")
        self.bind(name, e)
        # a temporary of the function's body is returned too (so that its value is
        # checked), unless a `return` of fewer values was already emitted
        if returned or (indent == 1 and not self.returned_early):
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
            write(self, indent)
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

    @contextmanager
    def trip_scale(self, trips: int) -> Iterator[None]:
        """Inside the block, statements run ``trips`` times more often (budgets)."""
        outer = self.trips
        self.trips *= max(trips, 1)
        try:
            yield
        finally:
            self.trips = outer

    # -- control flow
    def block(self, indent: int, depth: int, in_loop: bool, jump: bool = False) -> None:
        """1-3 statements in a nested scope; ``jump``: maybe end with a jump."""
        outer, start = self.scope, len(self.lines)
        self.scope = self.gen.scope = outer.child()
        for _ in range(self.gen.integer(1, 3)):
            self.statement(indent, depth, in_loop)
        if len(self.lines) == start:  # every update drawn was a no-op
            self.emit(indent, "pass")
        if jump and self.gen.chance(0.6 if in_loop else 0.15):
            jumps = ["break", "continue", "continue", self.returns()]
            jump_line = self.gen.pick(jumps if in_loop else jumps[-1:])
            self.returned_early |= jump_line.startswith("return")
            self.emit(indent, jump_line)
        self.scope = self.gen.scope = outer

    def statement(self, indent: int, depth: int, in_loop: bool) -> None:
        nested = depth > 0 and self.gen.chance(0.45)
        rules = [r for r in (self.nested if nested else SIMPLE)
                 if self.ndim == 2 or r is not nest and r not in PROFILE_STENCILS]
        rule = self.gen.pick(rules)
        if nested:
            rule(self, indent, depth, in_loop)
        else:
            rule(self, indent)

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
            axes = [i for i, d in enumerate("nm"[:self.ndim]) if d in self.loopable()]
            if not axes:
                self.while_(indent, depth, in_loop)
                return
            axis = axes[-1] if self.gen.chance(0.2) else axes[0]
        var, dim, size = self.fresh("i"), "nm"[axis], f"a.shape[{axis}]"
        self.emit(indent, f"for {var} in " + self.gen.pick(
            (f"range({size})", f"range(1, {size})", f"range({size} - 1, -1, -1)",
             f"range(0, {size}, 2)")) + ":")
        with self.trip_scale(dim_size(dim, self.sizes)):
            self.enter_loop(var, dim,
                            body or (lambda: self.block(indent + 1, depth - 1, True)))

    def nest_(self, indent: int, depth: int, in_loop: bool) -> None:
        """A loop over the rows of ``a`` around a loop over its columns."""
        if "n" not in self.loopable():
            self.for_(indent, depth, in_loop, 1)
            return
        def columns() -> None:
            write(self, indent + 2)  # most often out[i, j] = ...
            self.block(indent + 2, depth - 1, True)

        self.for_(indent, depth, in_loop, 0, lambda: self.for_(indent + 1, depth, True, 1,
                                                                 columns))

    def loopable(self) -> list[str]:
        """The dims of ``a`` a loop may run over (not a large one)."""
        return [d for d in "nm"[:self.ndim] if d == "m" or self.sizes["n"] <= LOOPED_N]

    def while_(self, indent: int, depth: int, in_loop: bool) -> None:
        k, limit = self.fresh("k"), self.gen.pick((2, 3, 4))
        self.emit(indent, f"{k} = 0")
        self.scope.bind(k, (), False, [1] * len(SAMPLE_SIZES))
        cond = f" and {self.truth()}" if self.gen.chance(0.6) else ""
        self.emit(indent, f"while {k} < {limit}{cond}:")
        self.emit(indent + 1, f"{k} += 1")  # first, so that `continue` cannot spin
        with self.trip_scale(limit):
            self.block(indent + 1, depth - 1, True)

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
    """A random program with its inputs, every choice a hypothesis draw."""
    return generate_from(Choices(draw))


def generate_seeded(seed: int | str, profile: str = "default") -> Program:
    """The random program of ``seed`` (a seeded PRNG: fast, and the seed and the
    profile alone reproduce it)."""
    return generate_from(SeededChoices(seed), profile)


def generate_from(choices: Choices, profile: str = "default") -> Program:
    """A random program with its inputs, every choice taken from ``choices``; the
    ``profile`` (a key of :data:`PROFILES`) selects the statements drawn."""
    def pick(options: tuple) -> Any:
        return options[choices.integer(0, len(options) - 1)]

    ndim = pick((1, 2))
    long = profile != "default"
    sizes = {"n": pick(LOOPS_N if long else SIZES_N), "m": pick(LOOPS_M if long else SIZES_M)}
    dtypes = {"a": pick(WEIGHTED_INPUTS), "b": pick(WEIGHTED_INPUTS)}
    b_rows, s_kind, dynamic = pick((False, True)), pick(("int", "float")), pick((False, True))
    pg = ProgramGen(choices, ndim, sizes, dtypes, PROFILES[profile])
    pg.inputs(b_rows, s_kind)
    pg.prologue()
    for _ in range(choices.integer(1, 3)):
        pg.statement(1, 2, False)
    source = pg.function_source(dynamic)
    a_shape = tuple(sizes[d] for d in "nm"[:ndim])
    layout = pick(LAYOUTS)
    a = in_layout(values(a_shape, dtypes["a"], 2), layout)
    b = values(a_shape[1:] if b_rows else a_shape, dtypes["b"], 3)
    s = choices.integer(*scalar_range(dtypes)) if s_kind == "int" else \
        choices.integer(-8, 8) / 4
    return Program(source, load(source), (a, b, s), _budget(pg, dtypes, source), layout)


def _budget(pg: ProgramGen, dtypes: dict[str, str], source: str) -> Tol:
    if not (pg.gen.math or pg.gen.terms):
        return EXACT
    return Tol(math=pg.gen.math * pg.trips, terms=pg.gen.terms * pg.trips,
               dtype=lowest_float(dtypes, source, pg.gen.work))


def load(source: str) -> Any:
    """``exec`` the source as a notebook cell (registered in ``linecache``)."""
    filename = f"<pyasc-random-{hashlib.sha1(source.encode()).hexdigest()[:12]}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    return namespace["prog"]


def _statement(method: str) -> Any:
    return lambda pg, *args: getattr(pg, method)(*args)


assign_temp, update = _statement("assign_temp"), _statement("update")
if_, for_, while_, nest = (_statement(m) for m in ("if_", "for_", "while_", "nest_"))
SIMPLE = (assign_temp, update, update, write, write, view_write, scatter, rebind)
"""Straight-line statements: ``rule(pg, indent)``."""
NESTED = (if_, if_, for_, for_, while_, nest, nest, scan, find, converge)
"""Statements with a body: ``rule(pg, indent, depth, in_loop)``."""
PROFILES = {"default": NESTED, "loops": NESTED + PROFILE_LOOPS + PROFILE_STENCILS}
"""Statement tables by generator profile.  ``"default"`` is what every campaign so far
ran (a seed's programs must not change); ``"loops"`` adds ``progen_accum``'s scalar
accumulators per output, shifted slice updates and ``np.empty`` fills, and
``progen_stencil``'s pixel nests (2-d windows, window slices) and row reductions."""
