"""Symbolic shapes for the fusion pass: when are two run-time sizes provably equal?

A dimension is a *symbol*: an ``int`` for a static size, else a hashable term that
names how the size is computed at run time:

* ``("dim", v, a)``: dynamic size ``a`` of a value with no better rule (a function
  parameter, a loop result, a group input...);
* ``("val", v)``: an ``index`` SSA value used as a size (``tensor.fill`` dims, slice
  sizes); a ``tensor.dim`` result is replaced by its source's symbol, a constant by
  its value;
* ``("join", frozenset)``: numpy broadcasting of several different dynamic sizes.

Equal symbols mean equal sizes at run time (each is a deterministic function of the
same inputs); different symbols mean "not proven equal".  The rules follow the op
semantics (broadcasting, reductions, slices, transposes...) so that, for example,
``x - max(x, axis=-1, keepdims=True)`` has exactly ``x``'s symbols.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.passes.fusion_rules import ELEMENTWISE
from pyasc.ir.types import DYN, ShapedType

Sym = Any  # int | tuple
Shape = tuple[Sym, ...]


def broadcast_syms(shapes: list[Shape]) -> Shape:
    """numpy broadcasting of symbolic shapes (static 1 broadcasts, equal symbols merge)."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Sym] = []
    for axis in range(rank):
        dims = {s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0}
        dims.discard(1)
        static = [d for d in dims if isinstance(d, int)]
        if static:
            out.append(static[0])
        elif not dims:
            out.append(1)
        elif len(dims) == 1:
            out.append(dims.pop())
        else:
            out.append(("join", frozenset(dims)))
    return tuple(out)


class ShapeSyms:
    """Memoized symbolic shapes of values (see the module docstring)."""

    def __init__(self) -> None:
        self._memo: dict[Value, Shape] = {}

    def of(self, v: Value) -> Shape:
        """The symbolic shape of ``v`` (``()`` for scalars)."""
        shape = self._memo.get(v)
        if shape is None:
            self._fill(v)
            shape = self._memo[v]
        return shape

    def _fill(self, root: Value) -> None:
        """Memoize ``root`` and the values its rule reads, producers first, with an
        explicit stack: a use-def chain is as long as the program, so recursing along
        it would overflow Python's stack."""
        stack: list[tuple[Value, bool]] = [(root, False)]
        while stack:
            v, ready = stack.pop()
            if v in self._memo:
                continue
            if ready:
                self._memo[v] = self._compute(v)
                continue
            stack.append((v, True))
            stack.extend((w, False) for w in _inputs(v) if w not in self._memo)

    def size(self, v: Value) -> Sym:
        """The symbol of an ``index`` value used as a size."""
        if isinstance(v, OpResult):
            if isinstance(v.op, arith.ConstantOp) and isinstance(v.op.value, int):
                return v.op.value
            if isinstance(v.op, tensor.DimOp):
                return self.of(v.op.source)[v.op.attributes["axis"]]
        return ("val", v)

    def _compute(self, v: Value) -> Shape:
        t = v.type
        if not isinstance(t, ShapedType):
            return ()
        rule = _RULES.get(type(v.op)) if isinstance(v, OpResult) else None
        derived = rule(self, v.op) if rule is not None else None
        fallback = tuple(("dim", v, a) for a in range(t.rank))
        derived = derived if derived is not None else fallback
        # A static size in the type always wins (it is checked where it was inferred).
        return tuple(d if d != DYN else s for d, s in zip(t.shape, derived, strict=True))


def _inputs(v: Value) -> list[Value]:
    """The values whose shapes the rule of ``v`` reads (operands, and the sources of
    ``tensor.dim`` operands used as sizes)."""
    if not isinstance(v, OpResult) or not isinstance(v.type, ShapedType) \
            or type(v.op) not in _RULES:
        return []
    found = []
    for w in v.op.operand_values:
        found.append(w)
        if isinstance(w, OpResult) and isinstance(w.op, tensor.DimOp):
            found.append(w.op.source)
    return found


def _elementwise(s: ShapeSyms, op: Operation) -> Shape:
    return broadcast_syms([s.of(v) for v in op.operand_values])


def _from_dims(s: ShapeSyms, op: Operation) -> Shape:
    """Result dims of ops taking one trailing ``index`` operand per ``?``."""
    t = op.result_values[0].type
    n_dyn = sum(d == DYN for d in t.shape)
    dyn = iter(op.operand_values[len(op.operand_values) - n_dyn:])
    return tuple(s.size(next(dyn)) if d == DYN else d for d in t.shape)


def _slice(s: ShapeSyms, op: tensor.SliceOp) -> Shape:
    drop = op.attributes.get("drop", ())
    return tuple(s.size(v) for a, v in enumerate(op.parts()[1]) if a not in drop)


def _transpose(s: ShapeSyms, op: tensor.TransposeOp) -> Shape:
    src = s.of(op.source)
    return tuple(src[p] for p in op.attributes["perm"])


def _reduce(s: ShapeSyms, op: Operation) -> Shape:
    src = s.of(op.operand_values[0])
    axes, keep = op.attributes["axes"], op.attributes["keepdims"]
    if keep:
        return tuple(1 if a in axes else d for a, d in enumerate(src))
    return tuple(d for a, d in enumerate(src) if a not in axes)


def _gather(s: ShapeSyms, op: tensor.GatherOp) -> Shape:
    src, idx = s.of(op.source), s.of(op.indices)
    axis = op.attributes["axis"]
    return src[:axis] + idx + src[axis + 1:]


_RULES: dict[type[Operation], Callable[[ShapeSyms, Any], Shape | None]] = {
    **{cls: _elementwise for cls in ELEMENTWISE},
    tensor.MapOp: _elementwise,
    tensor.FillOp: _from_dims,
    tensor.ArangeOp: _from_dims,
    tensor.BroadcastOp: _from_dims,
    tensor.ReshapeOp: _from_dims,
    tensor.SliceOp: _slice,
    tensor.TransposeOp: _transpose,
    tensor.GatherOp: _gather,
    **{cls: _reduce for cls in (tensor.SumOp, tensor.ProdOp, tensor.ReduceMaxOp,
                                tensor.ReduceMinOp, tensor.AnyOp, tensor.AllOp)},
}


def aligned(shape: Shape, rank: int) -> list[Sym | None]:
    """``shape`` right-aligned to ``rank`` axes; ``None`` where it has no axis."""
    return [None] * (rank - len(shape)) + list(shape)
