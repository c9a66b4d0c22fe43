"""``lower-to-loops`` rules for ``tensor.sort``/``argsort`` and ``cumsum``/``cumprod``.

Sorting: a stable bottom-up merge sort of every lane along the axis (loops over the
other axes outside), ``O(n log n)`` per lane, with one scratch buffer of the lane
length per op (reused by every lane and freed after the op):

1. the result lane is initialized with the source lane (``sort``) or with ``0..n-1``
   (``argsort``, whose lanes hold positions and compare the source elements there);
2. runs of ``RUN`` elements are sorted in place by insertion (``loop.while`` shifting
   while the new element sorts strictly before its left neighbour);
3. merge passes double the run width; each ``loop.while`` iteration merges result ->
   scratch then scratch -> result (a pass whose width covers the lane is a copy), so
   the data ends in the result.  A merge takes from the right run only when its
   element sorts strictly before the left one, which makes the sort stable; it is
   branch-free (clamped loads and ``select``).

"Sorts before" is ``<`` (``>`` when descending) plus "NaN goes after every number";
booleans compare as ``ui8``.

Scans: ``out[..., k, ...] = out[..., k-1, ...] (op) x[..., k, ...]`` (``x`` at ``k = 0``)
in one C-order nest, so each element is combined in index order like numpy's
``accumulate``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, loop, sort
from pyasc.ir.ops import math as m
from pyasc.ir.passes.bufferize import Lowerer, LowerFn
from pyasc.ir.passes.loopgen import LoopGen, constant_of
from pyasc.ir.types import ScalarType, i1, index, u8

RUN = 16  # insertion-sorted run length before merging


class _Lane:
    """Positions ``k`` along one axis of a buffer, the other indices fixed."""

    def __init__(self, gen: LoopGen, buf: Value, at: Callable[[Value], list[Value]]) -> None:
        self.gen, self.buf, self.at = gen, buf, at

    def load(self, k: Value) -> Value:
        return self.gen.load(self.buf, self.at(k))

    def store(self, v: Value, k: Value) -> None:
        self.gen.store(v, self.buf, self.at(k))


class _Order:
    """The sort order: ``before(a, b)`` is "a sorts strictly before b"; ``key`` maps a
    lane element to what is compared (itself, or the source element at a position)."""

    def __init__(self, gen: LoopGen, elem: ScalarType, descending: bool,
                 key: Callable[[Value], Value]) -> None:
        self.gen, self.elem, self.descending, self.key = gen, elem, descending, key

    def before(self, a: Value, b: Value) -> Value:
        gen = self.gen
        if self.elem.is_bool:
            a, b = gen.cast(a, u8), gen.cast(b, u8)
        c = gen.cmp("gt" if self.descending else "lt", a, b)
        if self.elem.is_float:  # NaN sorts after every number
            nan_b = gen.emit(m.IsNanOp.new(b))
            num_a = gen.emit(arith.NotOp.new(gen.emit(m.IsNanOp.new(a))))
            c = gen.logical(arith.OrOp, c, gen.logical(arith.AndOp, nan_b, num_a))
        return c


def _min(gen: LoopGen, a: Value, b: Value) -> Value:
    ca, cb = constant_of(a), constant_of(b)
    if isinstance(ca, int) and isinstance(cb, int):
        return gen.const(min(ca, cb))
    return gen.emit(arith.MinOp.new(a, b))


def _insertion_runs(gen: LoopGen, order: _Order, lane: _Lane, n: Value) -> None:
    """Sort each run ``[lo, lo + RUN)`` of ``lane`` in place, stably."""
    def run(ivs: list[Value], _: list[Value]) -> list[Value]:
        lo = ivs[0]
        end = _min(gen, gen.add(lo, gen.const(RUN)), n)

        def insert(iv: list[Value], __: list[Value]) -> list[Value]:
            v = lane.load(iv[0])
            kv = order.key(v)
            w = gen.b.insert(loop.WhileOp.empty([iv[0]], [index, v.type]))
            with gen.b.at(w.before.blocks[0]):
                j = w.before.blocks[0].args[0]
                inside = gen.cmp("gt", j, lo)
                prev = lane.load(gen.select(inside, gen.sub(j, gen.const(1)), lo))
                go = gen.logical(arith.AndOp, inside, order.before(kv, order.key(prev)))
                gen.b.insert(loop.ConditionOp([go, j, prev]))
            with gen.b.at(w.after.blocks[0]):
                j, prev = w.after.blocks[0].args
                lane.store(prev, j)
                gen.b.insert(loop.YieldOp([gen.sub(j, gen.const(1))]))
            w.before.blocks[0].args[0].name_hint = "j"
            w.attributes["bound"] = RUN - 1  # j only moves down from i to lo: no poll
            lane.store(v, w.result_values[0])
            return []
        gen.for_(gen.add(lo, gen.const(1)), end, insert, name="i")
        return []
    gen.for_(gen.const(0), n, run, step=gen.const(RUN), name="lo")


def _merge_pass(gen: LoopGen, order: _Order, src: _Lane, dst: _Lane, n: Value,
                width: Value) -> None:
    """Merge adjacent runs of ``width`` from ``src`` into ``dst``."""
    def block(ivs: list[Value], _: list[Value]) -> list[Value]:
        lo = ivs[0]
        mid = _min(gen, gen.add(lo, width), n)
        hi = _min(gen, gen.add(mid, width), n)
        last = gen.sub(hi, gen.const(1))

        def step(kv: list[Value], c: list[Value]) -> list[Value]:
            i, j = c
            vi, vj = src.load(_min(gen, i, last)), src.load(_min(gen, j, last))
            left_done = gen.cmp("ge", i, mid)
            take_right = gen.logical(arith.OrOp, left_done,
                                     order.before(order.key(vj), order.key(vi)))
            right = gen.logical(arith.AndOp, gen.cmp("lt", j, hi), take_right)
            dst.store(gen.select(right, vj, vi), kv[0])
            one = gen.const(1)
            return [gen.select(right, i, gen.add(i, one)), gen.select(right, gen.add(j, one), j)]
        gen.for_(lo, hi, step, [lo, mid], name="k", names=["left", "right"])
        return []
    gen.for_(gen.const(0), n, block, step=gen.add(width, width), name="lo")


def _merge_passes(gen: LoopGen, order: _Order, lane: _Lane, tmp: _Lane, n: Value) -> None:
    """Widths RUN, 2 RUN, 4 RUN...: lane -> tmp -> lane per ``loop.while`` iteration."""
    w = gen.b.insert(loop.WhileOp.empty([gen.const(RUN)], [index]))
    with gen.b.at(w.before.blocks[0]):
        width = w.before.blocks[0].args[0]
        width.name_hint = "width"
        gen.b.insert(loop.ConditionOp([gen.cmp("lt", width, n), width]))
    with gen.b.at(w.after.blocks[0]):
        width = w.after.blocks[0].args[0]
        width.name_hint = "width"
        _merge_pass(gen, order, lane, tmp, n, width)
        double = gen.add(width, width)
        _merge_pass(gen, order, tmp, lane, n, double)
        gen.b.insert(loop.YieldOp([gen.add(double, double)]))


def _lower_sort(cx: Lowerer, op: Operation) -> list[Value]:
    gen = cx.gen
    src = cx.get(op.operand_values[0])
    axis, descending = sort.sort_attrs(op)
    dims = gen.dims(src)
    n = dims[axis]
    out = cx.alloc(op.result.type, dims, op.result.name_hint)
    is_arg = isinstance(op, sort.ArgSortOp)
    work_t = index if is_arg else src.type.element
    static_n = constant_of(n)
    merges = not isinstance(static_n, int) or static_n > RUN
    if merges:  # one scratch lane for the whole op
        tmp_buf = gen.alloc((src.type.shape[axis],), work_t, [n], "scratch")
        tmp = _Lane(gen, tmp_buf, lambda k: [k])
    kept = [d for a, d in enumerate(dims) if a != axis]

    def lane_sort(ivs: list[Value]) -> None:
        def at(k: Value) -> list[Value]:
            return [*ivs[:axis], k, *ivs[axis:]]
        source, lane = _Lane(gen, src, at), _Lane(gen, out, at)
        key = source.load if is_arg else (lambda v: v)
        order = _Order(gen, src.type.element, descending, key)
        gen.nest([n], lambda ks: lane.store(ks[0] if is_arg else source.load(ks[0]), ks[0]),
                 prefix="k")
        if not isinstance(static_n, int) or static_n > 1:
            _insertion_runs(gen, order, lane, n)
        if merges:
            _merge_passes(gen, order, lane, tmp, n)
    gen.nest(kept, lane_sort, prefix="r")
    return [out]


_SCANS: dict[type[Operation], tuple[type[Operation], type[Operation]]] = {
    sort.CumSumOp: (arith.AddOp, arith.OrOp),
    sort.CumProdOp: (arith.MulOp, arith.AndOp),
}


def _lower_scan(cx: Lowerer, op: Operation) -> list[Value]:
    gen = cx.gen
    src = cx.get(op.operand_values[0])
    axis = op.attributes["axis"]
    dims = gen.dims(src)
    out = cx.alloc(op.result.type, dims, op.result.name_hint)
    num_cls, bool_cls = _SCANS[type(op)]
    cls = bool_cls if src.type.element == i1 else num_cls

    def body(ivs: list[Value]) -> None:
        k = ivs[axis]
        x = gen.load(src, ivs)
        later = gen.cmp("gt", k, gen.const(0))
        prev_at = gen.select(later, gen.sub(k, gen.const(1)), gen.const(0))
        prev = gen.load(out, _replace(ivs, axis, prev_at))
        gen.store(gen.select(later, gen.emit(cls.new(prev, x)), x), out, ivs)
    # Lanes are independent when the outermost loop does not run along the axis.
    parallel = axis > 0 and constant_of(dims[0]) != 1
    gen.nest(dims, body, parallel=parallel)
    return [out]


def _replace(ivs: Sequence[Value], axis: int, v: Value) -> list[Value]:
    return [v if a == axis else iv for a, iv in enumerate(ivs)]


RULES: dict[type[Operation], LowerFn] = {
    sort.SortOp: _lower_sort,
    sort.ArgSortOp: _lower_sort,
    sort.CumSumOp: _lower_scan,
    sort.CumProdOp: _lower_scan,
}

