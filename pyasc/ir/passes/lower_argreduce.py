"""``lower-to-loops`` rules for ``argmax``/``argmin``.

A search carries (best value, best index) and takes a new element when it compares
strictly greater (less), or when it is NaN and the best is not, which gives numpy's
first occurrence with NaN as the extreme.  Booleans compare as ``ui8``.

Rows of at least ``LANES`` elements are searched in lanes, so that LLVM vectorizes
them (a loop-carried compare-and-select pair is never vectorized): lane ``k`` searches
the elements ``16 i + k`` of the whole 16-element chunks, its best value and index kept
in two small buffers updated by a unit-stride loop; the lanes are then merged, a lane
winning over the current best when its value is better, or equal (or NaN like it) with
a smaller index, so the merged pair is the row's first best element; the last ``n % 16``
elements continue that search in order.  The index is the same as in source order, for
every dtype and with NaN, ``-0.0`` and ``0.0`` (which compare equal: the first wins).
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.passes.bufferize import Lowerer, LowerFn
from pyasc.ir.passes.loopgen import LoopGen, constant_of
from pyasc.ir.passes.lower_reduce import identity
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType, index, u8

LANES = 16


class _ArgStep:
    """One step of argmax/argmin: carried (best value, best index)."""

    def __init__(self, gen: LoopGen, elem: ScalarType, is_max: bool) -> None:
        self.gen, self.is_max = gen, is_max
        self.cmp_t = u8 if elem.is_bool else elem  # i1 compares as ui8 (True > False)

    def init(self) -> Value:
        return identity(self.gen, "lowest" if self.is_max else "highest", self.cmp_t)

    def better(self, x: Value, best: Value) -> Value:
        """``x`` replaces ``best`` when it compares strictly better or is a first NaN."""
        gen = self.gen
        take = gen.cmp("gt" if self.is_max else "lt", x, best)
        if self.cmp_t.is_float:  # the first NaN wins and stays
            fresh_nan = gen.logical(arith.AndOp, self._nan(x),
                                    gen.emit(arith.NotOp.new(self._nan(best))))
            take = gen.logical(arith.OrOp, take, fresh_nan)
        return take

    def tied(self, x: Value, best: Value) -> Value:
        """``x`` is as good as ``best``: equal, or both NaN."""
        gen = self.gen
        same = gen.cmp("eq", x, best)
        if self.cmp_t.is_float:
            same = gen.logical(arith.OrOp, same, gen.logical(
                arith.AndOp, self._nan(x), self._nan(best)))
        return same

    def _nan(self, x: Value) -> Value:
        return self.gen.emit(m.IsNanOp.new(x))

    def __call__(self, best: Value, best_idx: Value, x: Value, k: Value) -> list[Value]:
        gen = self.gen
        x = gen.cast(x, self.cmp_t)
        take = self.better(x, best)
        return [gen.select(take, x, best), gen.select(take, k, best_idx)]

    def merge(self, a: list[Value], b: list[Value]) -> list[Value]:
        """The first best of two lanes' (value, index) pairs."""
        gen = self.gen
        earlier = gen.logical(arith.AndOp, self.tied(b[0], a[0]), gen.cmp("lt", b[1], a[1]))
        take = gen.logical(arith.OrOp, self.better(b[0], a[0]), earlier)
        return [gen.select(take, b[0], a[0]), gen.select(take, b[1], a[1])]


def search(gen: LoopGen, step: _ArgStep, n: Value,
           element: Callable[[Value], Value]) -> Value:
    """The index of the first best of ``element(j)``, ``0 <= j < n`` (``n > 0``):
    in lanes when the row may hold ``LANES`` elements, else in order."""
    zero = gen.const(0)
    start, best = zero, [step.init(), zero]
    size = constant_of(n)
    if not (isinstance(size, int) and size < LANES):
        start = gen.sub(n, gen.rem(n, gen.const(LANES)))
        best = _lanes(gen, step, start, element)
    res = gen.for_(start, n, lambda iv, c: step(c[0], c[1], element(iv[0]), iv[0]),
                   best, name="r", names=["best", "best_idx"])
    return res[1]


def _lanes(gen: LoopGen, step: _ArgStep, stop: Value,
           element: Callable[[Value], Value]) -> list[Value]:
    """The merged lanes over the whole chunks ``0 .. stop`` (module docstring)."""
    width = gen.const(LANES)
    vals = gen.alloc((LANES,), step.cmp_t, [width], name="lane_best")
    idxs = gen.alloc((LANES,), index, [width], name="lane_idx")
    for k in range(LANES):
        gen.store(step.init(), vals, [gen.const(k)])
        gen.store(gen.const(0), idxs, [gen.const(k)])

    def chunk(jv: list[Value], _: list[Value]) -> list[Value]:
        def column(kv: list[Value], __: list[Value]) -> list[Value]:
            k, at = kv[0], gen.add(jv[0], kv[0])
            new = step(gen.load(vals, [k]), gen.load(idxs, [k]), element(at), at)
            gen.store(new[0], vals, [k])
            gen.store(new[1], idxs, [k])
            return []
        gen.for_(gen.const(0), width, column, name="k")
        gen.b.block.ops[gen.b.index - 1].attributes["lanes"] = LANES  # vectorize it
        return []
    gen.for_(gen.const(0), stop, chunk, step=width, name="j")
    best = [gen.load(vals, [gen.const(0)]), gen.load(idxs, [gen.const(0)])]
    for k in range(1, LANES):
        best = step.merge(best, [gen.load(vals, [gen.const(k)]),
                                 gen.load(idxs, [gen.const(k)])])
    for buf in (vals, idxs):
        gen.b.insert(mem.DeallocOp([buf]))
    return best


def _lower_argreduce(cx: Lowerer, op: Operation) -> list[Value]:
    gen = cx.gen
    src = cx.get(op.operand_values[0])
    is_max = isinstance(op, tensor.ArgMaxOp)
    axis = op.attributes.get("axis")
    dims = gen.dims(src)
    extent = gen.product(dims if axis is None else [dims[axis]])
    gen.check(gen.cmp("ne", extent, gen.const(0)),
              f"attempt to get {'argmax' if is_max else 'argmin'} of an empty sequence", "shape")
    step = _ArgStep(gen, src.type.element, is_max)
    if axis is None:
        return [_argreduce_flat(cx, op, src, dims, step)]
    return [_argreduce_axis(cx, op, src, dims, axis, step)]


def _argreduce_flat(cx: Lowerer, op: Operation, src: Value, dims: list[Value],
                    step: _ArgStep) -> Value:
    """Index into the flattened array: a C-order walk counting elements (one row
    searched in lanes when the array is one axis or contiguous)."""
    gen, t = cx.gen, op.result.type
    zero = gen.const(0)
    if len(dims) == 1 or src.type.is_contiguous:
        flat = gen.product(dims)
        row = src if len(dims) == 1 else gen.emit(mem.ReshapeOp(
            [src, *([flat] if constant_of(flat) is None else [])],
            [MemRefType((constant_of(flat) if constant_of(flat) is not None else DYN,),
                        src.type.element)]))
        found = search(gen, step, flat, lambda j: gen.load(row, [j]))
    else:
        found = gen.nest_carried(dims, [step.init(), zero, zero], lambda ivs, c: [
            *step(c[0], c[1], gen.load(src, ivs), c[2]), gen.add(c[2], gen.const(1))],
            names=["best", "best_idx", "flat"])[1]
    if not isinstance(t, TensorType):
        return found
    out = cx.alloc(t, [gen.const(1)] * len(dims), op.result.name_hint)
    gen.store(found, out, [zero] * len(dims))
    return out


def _argreduce_axis(cx: Lowerer, op: Operation, src: Value, dims: list[Value], axis: int,
                    step: _ArgStep) -> Value:
    gen, t, rank = cx.gen, op.result.type, len(dims)
    kept_axes = [a for a in range(rank) if a != axis]

    def at_kept(kept: list[Value]) -> Value:
        def element(j: Value) -> Value:
            ki = iter(kept)
            return gen.load(src, [j if a == axis else next(ki) for a in range(rank)])
        return search(gen, step, dims[axis], element)
    if not isinstance(t, TensorType):
        return at_kept([])
    keep = op.attributes.get("keepdims", False)
    out_dims = [gen.const(1) if a == axis else d for a, d in enumerate(dims)] if keep \
        else [d for a, d in enumerate(dims) if a != axis]
    out = cx.alloc(t, out_dims, op.result.name_hint)

    def store(kept: list[Value]) -> None:
        ki = iter(kept)
        where = [gen.const(0) if a == axis else next(ki) for a in range(rank)] if keep \
            else list(kept)
        gen.store(at_kept(kept), out, where)
    gen.nest([dims[a] for a in kept_axes], store, parallel=True)
    return out


RULES: dict[type[Operation], LowerFn] = {
    tensor.ArgMaxOp: _lower_argreduce,
    tensor.ArgMinOp: _lower_argreduce,
}
