"""Python ``int`` arithmetic on index values, folded as far as the facts allow.

Operands are compile-time ``int``s or weak ``index`` :class:`Scalar`\\ s.  Each run-time
result carries bounds (``lo``/``hi``, when known) and an affine form ``base + offset``,
so that window bounds like ``i - 5`` and ``i + 6`` give the static size ``11`` and a
loop index ``i`` in ``range(5, h - 5)`` is known to keep ``i - 5`` non-negative.
Compile-time operands fold to Python ints with Python semantics (floor division and
modulo round toward negative infinity, as ``arith.floordiv``/``arith.rem`` do).
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.frontend.emit import Emitter
from pyasc.frontend.values import Scalar
from pyasc.ir.core import Value
from pyasc.ir.ops import arith
from pyasc.ir.types import index

IndexLike = int | Scalar


def _val(em: Emitter, x: IndexLike) -> Value:
    return x.value if isinstance(x, Scalar) else em.const(x, index).value


def _new(em: Emitter, op_cls: type, a: IndexLike, b: IndexLike) -> Scalar:
    v = em.result(op_cls.new(_val(em, a), _val(em, b)))
    return Scalar(v, weak=True)


def bound(x: IndexLike, which: str) -> int | None:
    """The known lower (``"lo"``) or upper (``"hi"``) bound of ``x``, or ``None``."""
    if isinstance(x, int):
        return x
    return x.lo if which == "lo" else x.hi


def _add_bounds(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def add(em: Emitter, a: IndexLike, b: IndexLike) -> IndexLike:
    """``a + b``."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if isinstance(a, int):
        a, b = b, a
    assert isinstance(a, Scalar)
    if isinstance(b, int):
        if b == 0:
            return a
        base, off = a.affine
        out = _new(em, arith.AddOp, Scalar(base, True), off + b) if off + b else \
            Scalar(base, weak=True)
        out.base, out.offset = (base, off + b) if off + b else (None, 0)
    else:
        out = _new(em, arith.AddOp, a, b)
    out.lo = _add_bounds(bound(a, "lo"), bound(b, "lo"))
    out.hi = _add_bounds(bound(a, "hi"), bound(b, "hi"))
    return out


def neg(em: Emitter, a: IndexLike) -> IndexLike:
    """``-a``."""
    if isinstance(a, int):
        return -a
    out = Scalar(em.result(arith.NegOp.new(a.value)), weak=True)
    out.lo = None if a.hi is None else -a.hi
    out.hi = None if a.lo is None else -a.lo
    return out


def sub(em: Emitter, a: IndexLike, b: IndexLike) -> IndexLike:
    """``a - b``; the difference of two affine forms of one base folds."""
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    if isinstance(b, int):
        return add(em, a, -b)
    if isinstance(a, Scalar) and a.affine[0] is b.affine[0]:
        return a.affine[1] - b.affine[1]
    out = _new(em, arith.SubOp, a, b)
    lo_b, hi_b = bound(b, "lo"), bound(b, "hi")
    out.lo = _add_bounds(bound(a, "lo"), None if hi_b is None else -hi_b)
    out.hi = _add_bounds(bound(a, "hi"), None if lo_b is None else -lo_b)
    return out


def mul(em: Emitter, a: IndexLike, b: IndexLike) -> IndexLike:
    """``a * b``."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int):
        a, b = b, a
    if b == 1:
        return a
    if isinstance(b, int) and b == 0:
        return 0
    out = _new(em, arith.MulOp, a, b)
    bounds = [bound(a, "lo"), bound(a, "hi"), bound(b, "lo"), bound(b, "hi")]
    if None not in bounds:
        prods = [x * y for x in bounds[:2] for y in bounds[2:]]  # type: ignore[operator]
        out.lo, out.hi = min(prods), max(prods)
    return out


def floordiv(em: Emitter, a: IndexLike, b: IndexLike) -> IndexLike:
    """``a // b`` (Python floor division)."""
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    if isinstance(b, int) and b == 1:
        return a
    out = _new(em, arith.FloorDivOp, a, b)
    if isinstance(b, int) and b > 0:
        out.lo = None if bound(a, "lo") is None else bound(a, "lo") // b  # type: ignore
        out.hi = None if bound(a, "hi") is None else bound(a, "hi") // b  # type: ignore
    return out


def mod(em: Emitter, a: IndexLike, b: IndexLike) -> IndexLike:
    """``a % b`` (Python modulo: the sign of ``b``)."""
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    out = _new(em, arith.RemOp, a, b)
    if isinstance(b, int) and b > 0:
        out.lo, out.hi = 0, b - 1
    return out


def minimum(em: Emitter, a: IndexLike, b: IndexLike) -> IndexLike:
    """``min(a, b)``, folded when the bounds decide it."""
    if le(a, b):
        return a
    if le(b, a):
        return b
    out = _new(em, arith.MinOp, a, b)
    out.lo = _min_opt(bound(a, "lo"), bound(b, "lo"))
    his = [h for h in (bound(a, "hi"), bound(b, "hi")) if h is not None]
    out.hi = min(his) if his else None
    return out


def maximum(em: Emitter, a: IndexLike, b: IndexLike) -> IndexLike:
    """``max(a, b)``, folded when the bounds decide it (``a`` on ties, which keeps the
    affine form of ``max(i - 5, 0)`` when ``i - 5`` is known to be 0)."""
    if le(b, a):
        return a
    if le(a, b):
        return b
    out = _new(em, arith.MaxOp, a, b)
    los = [x for x in (bound(a, "lo"), bound(b, "lo")) if x is not None]
    out.lo = max(los) if los else None
    out.hi = _max_opt(bound(a, "hi"), bound(b, "hi"))
    return out


def _min_opt(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else min(a, b)


def _max_opt(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)


def le(a: IndexLike, b: IndexLike) -> bool:
    """True when ``a <= b`` is known at compile time (bounds or a common affine base)."""
    if isinstance(a, Scalar) and isinstance(b, Scalar) and a.affine[0] is b.affine[0]:
        return a.affine[1] <= b.affine[1]
    hi_a, lo_b = bound(a, "hi"), bound(b, "lo")
    return hi_a is not None and lo_b is not None and hi_a <= lo_b


def select(em: Emitter, cond: Value, a: IndexLike, b: IndexLike) -> Scalar:
    """``a if cond else b`` on index values (``cond`` is an ``i1`` value)."""
    out = Scalar(em.result(arith.SelectOp.new(cond, _val(em, a), _val(em, b))), weak=True)
    out.lo = _min_opt(bound(a, "lo"), bound(b, "lo"))
    out.hi = _max_opt(bound(a, "hi"), bound(b, "hi"))
    return out


def cmp(em: Emitter, pred: str, a: IndexLike, b: IndexLike) -> Value:
    """An ``i1`` value for ``a <pred> b``."""
    return em.result(arith.CmpOp.new(pred, _val(em, a), _val(em, b)))


BINARY: dict[str, Callable[[Emitter, IndexLike, IndexLike], IndexLike]] = {
    "add": add, "subtract": sub, "multiply": mul, "floor_divide": floordiv,
    "remainder": mod,
}
"""The index operations the frontend folds, by ufunc name."""
