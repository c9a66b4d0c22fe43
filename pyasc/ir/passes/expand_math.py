"""``expand-math``: transcendental ``math`` ops become branch-free ``arith`` code.

``exp exp2 expm1 log log2 log10 log1p tanh sigmoid erf sin cos atan`` on ``f32`` are
replaced by range reduction + minimax polynomials (``pyasc.ir.passes.mathlib``), so a
loop over them has no calls and no branches and LLVM's loop vectorizer sees plain
arithmetic (a loop calling ``expf`` or ``llvm.exp`` does not vectorize usefully).
``f16``/``bf16`` are computed in ``f32`` and rounded back; ``f64`` ops are left alone
(libm keeps them accurate).  ``pow`` with a constant exponent becomes multiplications
(``x**n``, ``|n| <= 16``) or ``sqrt`` (``x**0.5``, numpy's own fast path); any other
f32/f16/bf16 ``pow`` (run-time or non-integer exponents) becomes float64 arithmetic
(``mathlib/powf.py``), which a target without float64 leaves alone.  Accuracy per
function: ``docs/math-accuracy.md``.

The ops are elementwise over scalars or tensors, so the pass works at tensor level and
at loop level alike; at tensor level each of the ~40-70 ops of an expansion becomes a
loop of its own unless fusion merges them, so the place for it is after
``lower-to-loops`` (or after fusion).  Not in the default pipeline: each backend runs it
where it wants it.  With ``PassContext.options["fastmath"]`` the selects that only
matter for inf/NaN/denormal/negative-zero inputs are left out.  With
``PassContext.options["fma"]`` (the CPU backend sets it when the host has FMA) the
polynomials' multiply-add steps are ``math.fma`` ops; the user's own arithmetic is
never contracted (``docs/math-accuracy.md``).  ``PassContext.options["only"]`` (op
names) limits the pass to those ops: the AscendC backend expands ``math.atan``, which
the vector unit has no instruction for, into arithmetic it has, before grouping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.mathlib import atan, exp, log, power, sigmoidal, trig
from pyasc.ir.passes.mathlib.emit import Emitter, Val
from pyasc.ir.rewrite import Rewriter, rewrite_greedily
from pyasc.ir.types import element_type, f32

Expander = Callable[[Operation, Emitter], "Value | None"]

UNARY: dict[type[Operation], Callable[[Val], Val]] = {
    m.ExpOp: exp.exp, m.Exp2Op: exp.exp2, m.Expm1Op: exp.expm1, m.SigmoidOp: exp.sigmoid,
    m.LogOp: log.log, m.Log2Op: log.log2, m.Log10Op: log.log10, m.Log1pOp: log.log1p,
    m.TanhOp: sigmoidal.tanh, m.ErfOp: sigmoidal.erf,
    m.SinOp: trig.sin, m.CosOp: trig.cos, m.AtanOp: atan.atan,
}
"""``{op class: f32 implementation}`` of the unary functions."""

NARROW = ("f16", "bf16")


def _unary(fn: Callable[[Val], Val]) -> Expander:
    def expand(op: Operation, em: Emitter) -> Value | None:
        elem = element_type(op.result.type)
        if elem != f32 and elem.name not in NARROW:
            return None
        x = em.wrap(op.operand_values[0]).cast(f32)
        return fn(x).cast(elem).value
    return expand


EXPANDERS: dict[type[Operation], Expander] = {
    **{cls: _unary(fn) for cls, fn in UNARY.items()},
    m.PowOp: power.expand_pow,
}


WIDENING: frozenset[type[Operation]] = frozenset({m.SinOp, m.CosOp})
"""Expansions that compute in f64 inside (the f32 range reduction of sin/cos; integer
powers of f32 beyond ``x * x``): left alone with ``PassContext.options["float64"] =
False``, which a target without float64 sets (AscendC scalar kernels: ``float``)."""
_NARROW_POWERS = (0, 0.5, 1, 2, -1)  # expanded without f64


def expand_op(op: Operation, rw: Rewriter, fastmath: bool = False,
              float64: bool = True, fma: bool = False,
              only: frozenset[str] | None = None) -> Sequence[Value] | None:
    """Rewrite function for the driver: the expansion of ``op`` (if its name is in
    ``only``, when given), or ``None``."""
    expander = EXPANDERS.get(type(op))
    if expander is None or not float64 and type(op) in WIDENING or \
            only is not None and op.name not in only:
        return None
    if not float64 and isinstance(op, m.PowOp) and \
            power.constant_exponent(op.operand_values[1]) not in _NARROW_POWERS:
        return None
    value = expander(op, Emitter(rw, fastmath, fma))
    return None if value is None else [value]


@register_pass
class ExpandMath(Pass):
    """Replace transcendental math ops by polynomial arithmetic (see module doc)."""

    name = "expand-math"
    description = "exp/log/tanh/erf/sin/... -> branch-free range reduction + polynomials"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        fastmath = bool(ctx.options.get("fastmath", False))
        float64 = bool(ctx.options.get("float64", True))
        fma = bool(ctx.options.get("fma", False))
        only = ctx.options.get("only")  # op names: a backend expanding a few ops early
        names = frozenset(only) if isinstance(only, tuple | list | frozenset) else None
        rewrite_greedily(module, [lambda op, rw: expand_op(op, rw, fastmath, float64, fma,
                                                           names)])
