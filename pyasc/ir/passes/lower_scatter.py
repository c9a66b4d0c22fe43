"""``lower-to-loops`` rules for ``tensor.gather_nd`` and ``mem.scatter``.

Both emit a nest over the broadcast index shape ``B`` (outer) and the trailing axes of
the indexed array (inner).  At each position of ``B`` every index operand is loaded
once (through numpy broadcasting maps, with one ``shape`` check that the index
operands broadcast, kind ``bounds``: numpy's IndexError), wrapped when negative and
checked (kind ``bounds``) like ``tensor.gather``.

* ``gather_nd`` fills a fresh buffer ``out[b, rest] = src[i0[b], ..., rest]``; the
  outermost loop is parallel.
* ``scatter`` first checks every index (a nest of its own, as numpy validates the
  indices before it writes), then stores ``updates[b, rest]`` (broadcast to
  ``B + rest``, one more ``shape`` check) at ``dest[i0[b], ..., rest]`` sequentially in
  C order, so the last write to a repeated position wins; the store nest is not
  parallel.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import scatter
from pyasc.ir.passes.bufferize import Lowerer, LowerFn
from pyasc.ir.passes.loopgen import Broadcast, LoopGen
from pyasc.ir.passes.lower_shapes import labels
from pyasc.ir.types import TensorType


class _Indices:
    """The index operands of one op: broadcast over ``B`` and wrapped per position."""

    def __init__(self, gen: LoopGen, op: Operation, values: Sequence[Value],
                 sizes: Sequence[Value]) -> None:
        self.gen, self.op, self.values, self.sizes = gen, op, list(values), list(sizes)
        self.shape = scatter.index_shape(op.indices)  # type: ignore[attr-defined]
        self.bc: Broadcast = gen.broadcast([gen.dims(v) for v in values], self.shape,
                                           message="shape mismatch: indexing arrays "
                                           "could not be broadcast together", kind="bounds")

    @property
    def dims(self) -> list[Value]:
        return self.bc.out_dims

    def at(self, ovs: Sequence[Value], check: bool = True) -> list[Value]:
        """Wrapped source indices for the position ``ovs`` of ``B`` (checked unless
        ``check`` is false)."""
        gen = self.gen
        return [gen.checked_index(gen.load(v, self.bc.index(gen, k, ovs)), self.sizes[k],
                                  *labels(self.op, k), check=check)
                for k, v in enumerate(self.values)]

    def check_all(self) -> None:
        """Check every index first, as numpy does before it writes anything."""
        if self.gen.boundscheck:
            self.gen.nest(self.dims, self.at, parallel=True, prefix="c")


def _lower_gather_nd(cx: Lowerer, op: scatter.GatherNdOp) -> list[Value]:
    gen = cx.gen
    src = cx.get(op.source)
    sd = gen.dims(src)
    idx = _Indices(gen, op, cx.getall(op.indices), sd)
    rest = sd[len(idx.values):]
    t = op.result.type
    if not isinstance(t, TensorType):
        return [gen.load(src, idx.at([]))]
    out = cx.alloc(t, [*idx.dims, *rest], op.result.name_hint)

    def outer(ovs: list[Value]) -> None:
        ks = idx.at(ovs)
        gen.nest(rest, lambda ivs: gen.store(gen.load(src, [*ks, *ivs]), out, [*ovs, *ivs]),
                 prefix="j")
    gen.nest(idx.dims, outer, parallel=True)
    return [out]


def _lower_scatter(cx: Lowerer, op: scatter.ScatterOp) -> list[Value]:
    gen = cx.gen
    dest, upd = cx.get(op.dest), cx.get(op.updates)
    dd = gen.dims(dest)
    idx = _Indices(gen, op, cx.getall(op.indices), dd)
    rest = dd[len(idx.values):]
    out_dims = [*idx.dims, *rest]
    shape = (*idx.shape, *dest.type.shape[len(idx.values):])
    ubc = gen.broadcast([gen.dims(upd)], shape, out_dims,
                        "shape mismatch: value array could not be broadcast to indexing "
                        "result")

    idx.check_all()

    def outer(ovs: list[Value]) -> None:
        ks = idx.at(ovs, check=False)
        gen.nest(rest, lambda ivs: gen.store(
            gen.load(upd, ubc.index(gen, 0, [*ovs, *ivs])), dest, [*ks, *ivs]), prefix="j")
    gen.nest(idx.dims, outer)
    return []


RULES: dict[type[Operation], LowerFn] = {
    scatter.GatherNdOp: _lower_gather_nd,  # type: ignore[dict-item]
    scatter.ScatterOp: _lower_scatter,  # type: ignore[dict-item]
}
