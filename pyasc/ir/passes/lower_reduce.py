"""``lower-to-loops`` rules for reductions (``sum prod max min any all``);
``argmax``/``argmin`` are in ``lower_argreduce``.

Two loop structures, chosen so the innermost loop runs over the last (unit-stride) axis:

* the last axis is reduced (or everything is): loops over the kept axes outside, then
  loops over the reduced axes carrying scalar accumulators, the value stored once per
  output element.  Float sums use ``LANES`` = 8 partial accumulators along the last
  axis: element ``j`` of a row goes to lane ``j % 8`` (``j < n - n % 8``) and the tail
  to lane 0; lanes carry over the outer reduced axes and are combined pairwise at the
  end, ``((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7))``.  Each lane sums about a eighth of the
  elements, so the error bound is that of naive summation over n/8 terms (numpy's
  pairwise sum is better still for long rows); f16/bf16 sums and products
  accumulate in f32, as numpy's half loops do (``accumulator_type``).
* the last axis is kept: the result is filled with the identity and updated in source
  order, ``out[kept] = out[kept] (op) x`` — numpy's own order for these axes.

Identities (numpy's): sum 0 (``+0.0``: numpy sums ``[-0.0]`` to ``+0.0`` too), prod 1, max/min the
type's lowest/highest value (``-inf``/``inf`` for floats), any false, all true; on
``i1`` sum/max are ``or`` and prod/min are ``and``.  ``arith.max``/``min`` propagate
NaN, so max/min do too.  max/min over an empty reduced extent, and argmax/argmin of an
empty sequence, fail a ``shape`` check (numpy's ValueError).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.passes.bufferize import Lowerer, LowerFn
from pyasc.ir.passes.loopgen import LoopGen, constant_of
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType, f32, i1

LANES = 8

# op class -> (combine op, combine op on i1, identity kind, numpy name if empty fails)
REDUCTIONS: dict[type[Operation], tuple[type[Operation], type[Operation], str, str]] = {
    tensor.SumOp: (arith.AddOp, arith.OrOp, "zero", ""),
    tensor.ProdOp: (arith.MulOp, arith.AndOp, "one", ""),
    tensor.ReduceMaxOp: (arith.MaxOp, arith.OrOp, "lowest", "maximum"),
    tensor.ReduceMinOp: (arith.MinOp, arith.AndOp, "highest", "minimum"),
    tensor.AnyOp: (arith.OrOp, arith.OrOp, "zero", ""),
    tensor.AllOp: (arith.AndOp, arith.AndOp, "one", ""),
}


def identity(gen: LoopGen, kind: str, t: ScalarType) -> Value:
    """The identity constant ``kind`` (zero/negzero/one/lowest/highest) of type ``t``
    (``negzero``: ``-0.0``, the exact identity of float addition, ``-0.0 + x`` is ``x``
    for every ``x``)."""
    if t.is_bool:
        return gen.const(kind in ("one", "highest"), t)
    if t.is_float:
        value = {"zero": 0.0, "negzero": -0.0, "one": 1.0, "lowest": float("-inf"),
                 "highest": float("inf")}[kind]
        return gen.const(value, t)
    bits = t.bitwidth
    lo, hi = (0, 2 ** bits - 1) if t.is_unsigned else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return gen.const({"zero": 0, "negzero": 0, "one": 1, "lowest": lo, "highest": hi}[kind], t)


def reduce_space(gen: LoopGen, dims: Sequence[Value], element: Callable[[list[Value]], Value],
                 combine: Callable[[Value, Value], Value], init: Value,
                 lanes: int = 1) -> Value:
    """Combine ``element(ivs)`` over the index space ``dims`` (last axis innermost),
    with ``lanes`` partial accumulators along the last axis (see module docstring)."""
    if not dims:
        return combine(init, element([]))
    n_static = constant_of(dims[-1])
    if isinstance(n_static, int) and n_static < lanes:
        lanes = 1

    def innermost(outer: list[Value], accs: list[Value]) -> list[Value]:
        n = dims[-1]
        start = gen.const(0)
        if lanes > 1:
            start = gen.sub(n, gen.rem(n, gen.const(lanes)))

            def chunk(iv: list[Value], a: list[Value]) -> list[Value]:
                return [combine(a[k], element([*outer, gen.add(iv[0], gen.const(k))]))
                        for k in range(lanes)]
            accs = gen.for_(gen.const(0), start, chunk, accs, gen.const(lanes), "j",
                            [f"acc{k}" for k in range(lanes)])
        if constant_of(start) is None or constant_of(start) != constant_of(n):
            tail = gen.for_(start, n, lambda iv, a: [combine(a[0], element([*outer, *iv]))],
                            accs[:1], name="j", names=["acc0"])
            accs = tail + accs[1:]
        return accs

    names = [f"acc{k}" for k in range(lanes)]
    accs = gen.nest_carried(dims[:-1], [init] * lanes, innermost, prefix="r", names=names)
    while len(accs) > 1:
        accs = [combine(accs[k], accs[k + 1]) for k in range(0, len(accs), 2)]
    return accs[0]


def _merge(kept_axes: Sequence[int], kept: Sequence[Value], red: Sequence[Value],
           rank: int) -> list[Value]:
    """Full source index from kept-axis and reduced-axis indices."""
    ki, ri = iter(kept), iter(red)
    return [next(ki) if a in kept_axes else next(ri) for a in range(rank)]


def _out_index(gen: LoopGen, axes: Sequence[int], kept: Sequence[Value], rank: int,
               keepdims: bool) -> list[Value]:
    if not keepdims:
        return list(kept)
    ki = iter(kept)
    return [gen.const(0) if a in axes else next(ki) for a in range(rank)]


@dataclass
class _Plan:
    """How one reduction op combines: accumulator type, combine op, identity kind."""

    gen: LoopGen
    elem: ScalarType
    acc_t: ScalarType
    cls: type[Operation]
    ident: str
    truth: bool  # any/all reduce ``x != 0``

    def combine(self, a: Value, b: Value) -> Value:
        return self.gen.emit(self.cls.new(a, b))  # type: ignore[attr-defined]

    def element(self, buf: Value, idx: list[Value]) -> Value:
        x = self.gen.load(buf, idx)
        if self.truth and not self.elem.is_bool:
            return self.gen.cmp("ne", x, identity(self.gen, "zero", self.elem))
        return self.gen.cast(x, self.acc_t)

    def init(self) -> Value:
        return identity(self.gen, self.ident, self.acc_t)


def accumulator_type(op: Operation, elem: ScalarType, in_place: bool) -> ScalarType:
    """The type a reduction of ``elem`` values accumulates in, as numpy's: its half
    loops reduce one run of the reduced axis in float and round once (pairwise sums
    and plain products alike), so a float16 product of a row does not overflow to inf
    where a float32 one does not; a reduction over leading axes (``in_place``) updates
    the half-precision result array at each step."""
    if isinstance(op, tensor.SumOp | tensor.ProdOp) and elem.name in ("f16", "bf16") \
            and not in_place:
        return f32
    return elem


def _plan(gen: LoopGen, op: Operation, elem: ScalarType, in_place: bool) -> _Plan:
    combine_cls, bool_cls, ident, _ = REDUCTIONS[type(op)]
    truth = isinstance(op, tensor.AnyOp)  # AllOp derives from AnyOp
    acc_t = i1 if truth else accumulator_type(op, elem, in_place)
    return _Plan(gen, elem, acc_t, bool_cls if acc_t.is_bool else combine_cls, ident, truth)


def _lower_reduce(cx: Lowerer, op: Operation) -> list[Value]:
    gen = cx.gen
    src = cx.get(op.operand_values[0])
    axes = op.attributes["axes"]
    rank, dims = src.type.rank, gen.dims(src)
    kept_axes = [a for a in range(rank) if a not in axes]
    in_place = bool(kept_axes) and (rank - 1) not in axes
    plan = _plan(gen, op, src.type.element, in_place)
    numpy_name = REDUCTIONS[type(op)][3]
    if numpy_name:
        gen.check(gen.cmp("ne", gen.product([dims[a] for a in axes]), gen.const(0)),
                  f"zero-size array to reduction operation {numpy_name} which has no "
                  "identity", "shape")
    if in_place:
        return [_accumulate_in_place(cx, op, src, dims, kept_axes, plan)]
    return [_reduce_rows(cx, op, src, dims, kept_axes, plan)]


def _reduce_rows(cx: Lowerer, op: Operation, src: Value, dims: list[Value],
                 kept_axes: list[int], plan: _Plan) -> Value:
    """Reduction over the last axis (and maybe others): one scalar per output element."""
    gen = cx.gen
    axes, keep = op.attributes["axes"], op.attributes["keepdims"]
    rank, t = len(dims), op.result.type
    lanes = LANES if (plan.cls is arith.AddOp and plan.acc_t.is_float) else 1
    view, red_dims = _collapse_trailing(gen, src, dims, axes)

    def value_at(kept: list[Value]) -> Value:
        def at(red: list[Value]) -> Value:
            if view is not None:  # kept axes lead, the reduced ones are one flat axis
                return plan.element(view, [*kept, *red])
            return plan.element(src, _merge(kept_axes, kept, red, rank))
        v = reduce_space(gen, red_dims, at, plan.combine, plan.init(), lanes)
        return gen.cast(v, t.element if isinstance(t, TensorType) else t)
    if not isinstance(t, TensorType):
        return value_at([])
    out = cx.alloc(t, _out_dims(gen, dims, axes, keep), op.result.name_hint)
    gen.nest([dims[a] for a in kept_axes], lambda kept: gen.store(
        value_at(kept), out, _out_index(gen, axes, kept, rank, keep)), parallel=True)
    return out


def _collapse_trailing(gen: LoopGen, src: Value, dims: list[Value],
                       axes: Sequence[int]) -> tuple[Value | None, list[Value]]:
    """A view of a contiguous ``src`` whose reduced trailing axes are flattened into one
    (longer rows: more work per lane loop), and the reduced sizes to loop over."""
    rank, r0 = len(dims), len(dims) - len(axes)
    if len(axes) < 2 or tuple(axes) != tuple(range(r0, rank)) or \
            not src.type.is_contiguous:
        return None, [dims[a] for a in axes]
    flat = gen.product(dims[r0:])
    shape = (*src.type.shape[:r0], constant_of(flat) if constant_of(flat) is not None else DYN)
    dyn = [d for d, s in zip([*dims[:r0], flat], shape, strict=True) if s == DYN]
    view = gen.emit(mem.ReshapeOp([src, *dyn], [MemRefType(shape, src.type.element)]))
    return view, [flat]


def _out_dims(gen: LoopGen, dims: Sequence[Value], axes: Sequence[int],
              keep: bool) -> list[Value]:
    if keep:
        return [gen.const(1) if a in axes else d for a, d in enumerate(dims)]
    return [d for a, d in enumerate(dims) if a not in axes]


def _accumulate_in_place(cx: Lowerer, op: Operation, src: Value, dims: list[Value],
                         kept_axes: list[int], plan: _Plan) -> Value:
    """Reduction keeping the last axis: ``out[kept] = out[kept] (op) x`` in source order."""
    gen = cx.gen
    axes, keep = op.attributes["axes"], op.attributes["keepdims"]
    out = cx.alloc(op.result.type, _out_dims(gen, dims, axes, keep), op.result.name_hint)
    gen.copy(plan.init(), out, parallel=True)

    def body(ivs: list[Value]) -> None:
        where = _out_index(gen, axes, [ivs[a] for a in kept_axes], len(dims), keep)
        gen.store(plan.combine(gen.load(out, where), plan.element(src, ivs)), out, where)
    gen.nest(dims, body)
    return out


RULES: dict[type[Operation], LowerFn] = {
    **{cls: _lower_reduce for cls in REDUCTIONS},
}

