"""Index arithmetic of a loop body simplified with the loops' ranges.

With run-time shapes, numpy's clamping of a slice stays in the IR: the window
``img[i-5:i+6, j-5:j+6]`` of the bilateral filter, inside ``for i in range(5, h-5)``, is
the view at offset ``min(i - 5, h)`` of size ``max(0, min(i + 6, h) - min(i - 5, h))``.
With static shapes the frontend folds them; with ``dynamic_shape=True`` it cannot, so
the window has run-time sizes and ``batch_windows`` would not take it.  Inside the loop,
though, ``i <= h - 6``: ``min(i + 6, h)`` is ``i + 6`` and the size is 11.

:func:`simplify_with_ranges` proves such facts from the loops' bounds alone (no
assumption about the data): every index value of the body is an affine form over
*atoms* (loop indices and values computed outside the arithmetic it follows: dims,
arguments), with integer coefficients.  A ``min``/``max`` whose operands differ by a
form of known sign over every iteration (each loop index ``i`` of ``range(lo, hi)``
replaced by ``hi - 1`` or ``lo``, whichever maximizes; ``lo`` and ``hi`` are forms over
outer atoms, the nest is a box; an outer atom of negative coefficient by its lower
bound, known when every loop runs: ``y = x[1:, 2:]`` of run-time ``x`` has ``max(D - 1,
0)`` rows, and ``range(y.shape[0] - 2)`` runs only when ``D >= 4``, so ``y[i, j]``'s
``min(1, D) + i`` is ``1 + i``) is replaced by the operand it always picks, and a value
whose form is a constant becomes that constant.  Iterations that do not run make no
claim: the facts hold whenever the body runs.
"""

from __future__ import annotations

from pyasc.ir.core import Block, OpResult, Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.passes.batch_nest import constant_int
from pyasc.ir.types import i1, index

Form = dict[Value | None, int]
"""An affine form: atom -> coefficient, ``None`` -> the constant term."""


def _add(a: Form, b: Form, sign: int = 1) -> Form:
    out = dict(a)
    for k, c in b.items():
        out[k] = out.get(k, 0) + sign * c
    return {k: c for k, c in out.items() if c or k is None}


def _scale(a: Form, s: int) -> Form:
    return {k: c * s for k, c in a.items()}


def _constant(f: Form) -> int | None:
    return f.get(None, 0) if all(k is None or c == 0 for k, c in f.items()) else None


class Ranges:
    """Affine forms of the index values of one loop body, with the loops' bounds."""

    def __init__(self, loops: list[loop.ForOp]) -> None:
        self.bounds: dict[Value, tuple[Value, Value]] = {
            lp.induction_var: (lp.lower, lp.upper) for lp in loops}
        self.forms: dict[Value, Form] = {}
        self.chosen: dict[Value, Value] = {}   # a decided min/max -> the operand it picks
        # atoms' lower bounds whenever the body runs: each loop has an iteration
        self.least: dict[Value, int] = {}
        for lp in loops:  # (a loop of a positive step runs when lo < hi)
            if (constant_int(lp.step) or 0) > 0:
                self._learn(_add(self.form(lp.upper), self.form(lp.lower), -1), 1)

    def form(self, v: Value) -> Form:
        """``v`` as an affine form (an atom when its op is not affine arithmetic)."""
        if v in self.forms:
            return self.forms[v]
        f: Form = {v: 1}
        if isinstance(v, OpResult) and v.type == index:
            op = v.op
            xs = op.operand_values
            if isinstance(op, arith.ConstantOp) and isinstance(op.value, int):
                f = {None: int(op.value)}
            elif isinstance(op, arith.AddOp | arith.SubOp):
                f = _add(self.form(xs[0]), self.form(xs[1]), 1 if isinstance(op, arith.AddOp)
                         else -1)
            elif isinstance(op, arith.MulOp):
                f = self._product(v, self.form(xs[0]), self.form(xs[1]))
            elif isinstance(op, arith.MinOp | arith.MaxOp):
                f = self._extreme(v, op)
            elif isinstance(op, arith.SelectOp):
                f = self._select(v, op)
        self.forms[v] = f
        return f

    def _product(self, v: Value, a: Form, b: Form) -> Form:
        ca, cb = _constant(a), _constant(b)
        if ca is not None:
            return _scale(b, ca)
        return _scale(a, cb) if cb is not None else {v: 1}

    def _extreme(self, v: Value, op: arith.MinOp | arith.MaxOp) -> Form:
        a, b = op.operand_values
        d = _add(self.form(a), self.form(b), -1)   # a - b
        high, low = self.upper(d), self.upper(_scale(d, -1))
        a_le_b = high is not None and high <= 0
        b_le_a = low is not None and low <= 0
        if isinstance(op, arith.MinOp):
            pick = a if a_le_b else (b if b_le_a else None)
        else:
            pick = b if a_le_b else (a if b_le_a else None)
        if pick is None:
            return {v: 1}
        self.chosen[v] = pick
        return self.form(pick)

    def _select(self, v: Value, op: arith.SelectOp) -> Form:
        """``select(a < b, x, y)`` on indices whose comparison the ranges decide: a
        Python index of unknown sign (a ``while`` counter) is wrapped by ``select(i <
        0, i + n, i)``, which a loop from 0 never takes."""
        c, x, y = op.operand_values
        holds = self.decide(c)
        if holds is None:
            return {v: 1}
        self.chosen[v] = x if holds else y
        return self.form(self.chosen[v])

    def decide(self, c: Value) -> bool | None:
        """The value of index comparison ``c`` on every iteration, or None."""
        if not isinstance(c, OpResult) or not isinstance(c.op, arith.CmpOp) or \
                c.op.operand_values[0].type != index:
            return None
        pred = c.op.attributes["predicate"]
        a, b = c.op.operand_values
        if pred in ("gt", "ge"):  # a > b is b < a
            a, b, pred = b, a, "lt" if pred == "gt" else "le"
        if pred not in ("lt", "le"):
            return None
        d = _add(self.form(a), self.form(b), -1)   # a - b
        high, low = self.upper(d), self.upper(_scale(d, -1))  # max(a - b), max(b - a)
        strict = 1 if pred == "lt" else 0
        if high is not None and high <= -strict:
            return True
        if low is not None and low <= strict - 1:
            return False
        return None

    def _learn(self, f: Form, least: int, depth: int = 4) -> None:
        """Record what ``f >= least`` says of one atom: ``a + k >= least`` bounds ``a``
        (a loop's ``hi - lo >= 1``: ``h - 2 >= 1`` whenever ``range(h - 2)`` runs), and
        through a ``max`` whose other operand is smaller (``max(D - 1, 0) >= 3``: ``D -
        1 >= 3``) or a ``min`` (both operands) the dims it is computed from."""
        atoms = [k for k, c in f.items() if k is not None and c]
        if len(atoms) != 1 or f[atoms[0]] != 1 or depth == 0:
            return
        a, bound = atoms[0], least - f.get(None, 0)
        self.least[a] = max(bound, self.least.get(a, bound))
        if not isinstance(a, OpResult) or not isinstance(a.op, arith.MinOp | arith.MaxOp):
            return
        x, y = (self.form(v) for v in a.op.operand_values)
        if isinstance(a.op, arith.MinOp):
            self._learn(x, bound, depth - 1)
            self._learn(y, bound, depth - 1)
            return
        for one, other in ((x, y), (y, x)):
            c = _constant(other)
            if c is not None and c < bound:
                self._learn(one, bound, depth - 1)

    def upper(self, f: Form, depth: int = 4) -> int | None:
        """A constant upper bound of ``f`` over every iteration, or None."""
        for _ in range(depth):
            c = _constant(f)
            if c is not None:
                return c
            ivs = [k for k, c in f.items() if k in self.bounds and c]
            if not ivs:
                return self._upper_atoms(f)
            for iv in ivs:
                coeff = f.pop(iv)
                lo, hi = self.bounds[iv]
                at = _add(self.form(hi), {None: -1}) if coeff > 0 else self.form(lo)
                f = _add(f, _scale(at, coeff))
        return _constant(f)

    def _upper_atoms(self, f: Form) -> int | None:
        """An upper bound of ``f`` over outer atoms: each of negative coefficient at its
        lower bound (``1 - D`` is at most ``-3`` when ``D >= 4``), else None."""
        total = f.get(None, 0)
        for k, c in f.items():
            if k is None or not c:
                continue
            if c > 0 or k not in self.least:
                return None
            total += c * self.least[k]
        return total


def simplify_with_ranges(block: Block, loops: list[loop.ForOp]) -> None:
    """Replace the decided ``min``/``max`` index ops of ``block`` by the operand they pick
    and index values of constant form by constants (module docstring)."""
    r = Ranges(loops)
    for op in list(block.ops):
        if len(op.result_values) != 1 or op.result_values[0].type != index or \
                isinstance(op, arith.ConstantOp):
            continue
        v = op.result_values[0]
        f = r.form(v)
        c = _constant(f)
        if c is not None:
            const = arith.ConstantOp.new(c, index, loc=op.loc)
            block.insert(block.index_of(op), const)
            v.replace_all_uses_with(const.result)
        elif v in r.chosen:
            v.replace_all_uses_with(r.chosen[v])
    # a clamp computed before the nest (``min(1, D)``, the start of ``y = x[1:, :]``,
    # folded into ``y[i, j]``'s index) is decided for the body only: its uses there
    for v, pick in list(r.chosen.items()):
        for user, at in list(v.uses):
            if user.parent is block:
                user.set_operand(at, pick)


def drop_dead_index_math(block: Block) -> None:
    """Erase the index ops (and index comparisons) of ``block`` nothing uses any more
    (the clamps of a window that ``batch_windows`` replaced by its elements, a
    negative-index wrap decided by the ranges), which the batch analysis would
    otherwise have to classify."""
    for op in reversed(list(block.ops)):
        if len(op.result_values) == 1 and op.result_values[0].type in (index, i1) and \
                op.has_trait("pure") and not op.result_values[0].uses:
            op.erase()


__all__ = ["Ranges", "drop_dead_index_math", "simplify_with_ranges"]
