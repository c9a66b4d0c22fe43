"""Reductions of a reshaped array that are pools, as the loops ``pool_loops`` takes.

``x.reshape(h // 2, 2, w // 2, 2).max(axis=(1, 3))`` reduces a ``(..., H, W)`` array
over non-adjacent axes ``(n - 1, n + 1)`` of its reshape into ``(..., H / kh, kh, W /
kw, kw)``: when the reshape keeps the leading axes and splits exactly the last two (the
window sizes ``kh``, ``kw`` constants) and ``x`` is C-contiguous, that is a ``kh x kw``
pool with the window as its stride.  The vector schedules take it as two reductions (two
kernels, 1.8x the minimum GM traffic); :func:`rewrite_reshape_pools` writes it as the
loop nest a user could have written

    out = np.empty((..., H / kh, W / kw))
    for i in range(H / kh):
        for j in range(W / kw):
            out[..., i, j] = reduce(x[..., i*kh:(i+1)*kh, j*kw:(j+1)*kw], axis=(-2, -1))

carrying the fused group's other work per window (a float16 mean's widening, the
division, the narrowing), which ``pool_loops`` recognizes and ``lower_pool`` runs as the
pool kernel, and keeps it only when that kernel takes it (else the group is left as it
was).  The split must be exact: static extents are compared; a run-time extent must be
the reshape's ``dim(x, a) // k`` (the leading ones ``dim(x, a)``), and the reshape's own
run-time size check (``func.assert``, kept) then makes ``(H / kh) * kh == H``.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc.pool_loops import PoolLoop, match_pool_loop
from pyasc.backend.ascendc.pool_match import NotAPoolLoop, is_scalar_op
from pyasc.ir.builder import Builder, discard_ops
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import DYN, MemRefType, TensorType, element_type, index

_REDS = (tensor.SumOp, tensor.ReduceMaxOp, tensor.ReduceMinOp)
_POSTS = (arith.DivOp, arith.MulOp)


def _extent_is(v: Value, x: Value, axis: int, k: int) -> bool:
    """``v`` is ``dim(x, axis) // k`` (``dim(x, axis)`` for ``k == 1``)."""
    if k != 1:
        if not (isinstance(v, OpResult) and isinstance(v.op, arith.FloorDivOp) and
                constant_value(v.op.operand_values[1]) == k):
            return False
        v = v.op.operand_values[0]
    return isinstance(v, OpResult) and isinstance(v.op, mem.DimOp) and \
        v.op.operand_values[0] is x and v.op.attributes["axis"] == axis


def _split(snapshot: Value) -> tuple[Value, Value, int, int] | None:
    """``(x, reshaped, kh, kw)`` when ``snapshot`` is ``to_tensor(x.reshape(..., H / kh,
    kh, W / kw, kw))`` splitting exactly the last two axes of a contiguous ``x``."""
    if not (isinstance(snapshot, OpResult) and isinstance(snapshot.op, mem.ToTensorOp)):
        return None
    r = snapshot.op.operand_values[0]
    if not (isinstance(r, OpResult) and isinstance(r.op, mem.ReshapeOp)):
        return None
    x = r.op.operand_values[0]
    st, rt = x.type, r.type
    if not (isinstance(st, MemRefType) and isinstance(rt, MemRefType) and st.is_contiguous
            and st.rank >= 2 and rt.rank == st.rank + 2):
        return None
    n = st.rank
    kh, kw = rt.shape[n - 1], rt.shape[n + 1]
    if kh == DYN or kw == DYN or kh < 1 or kw < 1:
        return None
    dims = dict(zip([a for a, d in enumerate(rt.shape) if d == DYN],
                    r.op.operand_values[1:], strict=True))
    pairs = [(a, a, 1) for a in range(n - 2)] + [(n - 2, n - 2, kh), (n, n - 1, kw)]
    for ra, sa, k in pairs:
        if rt.shape[ra] == DYN and not _extent_is(dims[ra], x, sa, k) or \
                rt.shape[ra] != DYN and rt.shape[ra] * k != st.shape[sa]:
            return None
    return x, r, kh, kw


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """C-contiguous element strides (``DYN`` past a run-time extent)."""
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc = DYN if DYN in (acc, d) else acc * d
    return tuple(reversed(out))


class _Nest:
    """Builds the loop nest of one reshape pool before its group (module docstring)."""

    def __init__(self, b: Builder, x: Value, reshaped: Value, kh: int, kw: int) -> None:
        self.b, self.x, self.reshaped, self.kh, self.kw = b, x, reshaped, kh, kw
        self.n = x.type.rank  # type: ignore[attr-defined]

    def const(self, v: int) -> Value:
        return self.b.insert(arith.ConstantOp.new(v, index)).result

    def extent(self, buf: Value, axis: int) -> Value:
        d = buf.type.shape[axis]  # type: ignore[attr-defined]
        if d != DYN:
            return self.const(d)
        return self.b.insert(mem.DimOp([buf], [index], {"axis": axis})).result

    def bin(self, cls: type[Operation], a: Value, b: Value) -> Value:
        return self.b.insert(cls.new(a, b)).result  # type: ignore[attr-defined]

    def view(self, buf: Value, offs: list[Value], sizes: list[Value], shape: tuple[int, ...],
             drop: tuple[int, ...] = ()) -> Value:
        t = buf.type
        assert isinstance(t, MemRefType)
        strides = _strides(t.shape)
        keep = [a for a in range(t.rank) if a not in drop]
        vt = MemRefType(shape, t.element, tuple(strides[a] for a in keep))
        ones = [self.const(1)] * t.rank
        attrs = {"drop": drop} if drop else {}
        return self.b.insert(mem.SubviewOp([buf, *offs, *sizes, *ones], [vt], attrs)).result

    def build(self, out_type: TensorType, per_window: Callable[[_Nest, Value], Value]
              ) -> tuple[loop.ForOp, Value]:
        """The output buffer and the nest writing ``per_window(window)`` into it."""
        n, b, r = self.n, self.b, self.reshaped
        axes = [*range(n - 2), n - 2, n]  # output axis -> axis of the reshape
        dyn = [self.extent(r, axes[k]) for k, d in enumerate(out_type.shape) if d == DYN]
        out = b.insert(mem.AllocOp(dyn, [MemRefType(out_type.shape, out_type.element)])).result
        lead = [self.extent(self.x, a) for a in range(n - 2)]
        out_lead = [self.extent(out, a) for a in range(n - 2)]
        zero, one = self.const(0), self.const(1)
        oh, ow = self.extent(r, n - 2), self.extent(r, n)
        fi = b.insert(loop.ForOp.empty(zero, oh, one))
        with b.at(fi.body.blocks[0]):
            fj = b.insert(loop.ForOp.empty(zero, ow, one))
            b.insert(loop.YieldOp([]))
        i, j = fi.induction_var, fj.induction_var
        with b.at(fj.body.blocks[0]):
            rows = self.bin(arith.MulOp, i, self.const(self.kh))
            cols = self.bin(arith.MulOp, j, self.const(self.kw))
            xt = self.x.type
            window = self.view(self.x, [zero] * (n - 2) + [rows, cols],
                               lead + [self.const(self.kh), self.const(self.kw)],
                               (*xt.shape[:n - 2], self.kh, self.kw))  # type: ignore[attr-defined]
            snap = b.insert(mem.ToTensorOp([window], [window.type.tensor_type()])).result  # type: ignore[attr-defined]
            value = per_window(self, snap)
            if n == 2:
                b.insert(mem.StoreOp([value, out, i, j], []))
            else:
                dst = self.view(out, [zero] * (n - 2) + [i, j], out_lead + [one, one],
                                out_type.shape[:n - 2], (n - 2, n - 1))
                b.insert(mem.WriteOp([value, dst], []))
            b.insert(loop.YieldOp([]))
        return fi, out


def _chain(op: Operation) -> tuple[Value, list[Operation], dict[Value, Value]] | None:
    """A group (or a bare reduction) as its reshaped snapshot, its body ops and the map
    of its block arguments to its operands."""
    if isinstance(op, _REDS):
        return op.operand_values[0], [op], {}
    if not isinstance(op, FusionGroupOp) or len(op.result_values) != 1:
        return None
    block = op.body.blocks[0]
    args = dict(zip(block.args, op.inputs, strict=True))
    reds = [o for o in block.ops if isinstance(o, _REDS)]
    if len(reds) != 1:
        return None
    snap = reds[0].operand_values[0]
    while isinstance(snap, OpResult) and isinstance(snap.op, arith.CastOp):
        snap = snap.op.operand_values[0]
    return args.get(snap, snap), [o for o in block.ops if o.name != "fusion.yield"], args


def _per_window(ops: list[Operation], args: dict[Value, Value], snaps: set[Value],
                n: int) -> Callable[[_Nest, Value], Value] | None:
    """The group's work on one window: casts, the reduction over the window's last two
    axes, post-operations by scalars, each rebuilt on the window's types."""
    ok = all(is_scalar_op(o) or isinstance(o, (arith.CastOp, *_REDS, *_POSTS)) for o in ops)
    red = next(o for o in ops if isinstance(o, _REDS))
    if not ok or red.attributes["axes"] != (n - 1, n + 1) or red.attributes["keepdims"]:
        return None

    def build(nest: _Nest, window: Value) -> Value:
        vmap: dict[Value, Value] = dict(args)
        vmap.update({v: window for v in snaps})
        last = window
        for o in ops:
            operands = [vmap.get(v, v) for v in o.operand_values]
            if isinstance(o, _REDS):
                new = type(o).new(operands[0], (n - 2, n - 1), False)
            elif isinstance(o, arith.CastOp) and not is_scalar_op(o):
                new = arith.CastOp.new(operands[0], element_type(o.result.type))
            elif isinstance(o, _POSTS) and not is_scalar_op(o):
                new = type(o).new(*operands)
            else:
                new = o.clone(vmap)
            nest.b.insert(new)
            vmap.update(zip(o.result_values, new.result_values, strict=True))
            last = new.result_values[0]
        return last
    return build


def _writes_between(a: Operation, b: Operation) -> bool:
    """Whether an op between ``a`` and ``b`` (one block) may write memory."""
    block = a.parent
    assert block is not None
    ops = block.ops[block.index_of(a) + 1:block.index_of(b)]
    return not all("pure" in o.traits or isinstance(o, mem.ToTensorOp | mem.DimOp) or
                   o.name == "func.assert" for o in ops)


def _rewrite(op: Operation, fn: FuncOp, takes: Callable[[PoolLoop], bool]) -> bool:
    found = _chain(op)
    if found is None:
        return False
    snap, ops, args = found
    split = _split(snap)
    rt = op.result_values[0].type
    if split is None or not isinstance(rt, TensorType) or _writes_between(snap.op, op):  # type: ignore[attr-defined]
        return False
    x, reshaped, kh, kw = split
    snaps = {snap, *(v for v, outer in args.items() if outer is snap)}
    work = _per_window(ops, args, snaps, x.type.rank)  # type: ignore[attr-defined]
    if work is None:
        return False
    b = Builder.before(op)
    with b.recording() as built:
        nest, out = _Nest(b, x, reshaped, kh, kw).build(rt, work)
        result = b.insert(mem.ToTensorOp([out], [rt])).result
    try:
        kept = takes(match_pool_loop(nest, fn))
    except NotAPoolLoop:
        kept = False
    if not kept:
        discard_ops(built)
        return False
    op.result_values[0].replace_all_uses_with(result)
    op.erase()
    if not snap.uses:
        snap.op.erase()  # type: ignore[attr-defined]
    return True


def rewrite_reshape_pools(fn: FuncOp, takes: Callable[[PoolLoop], bool]) -> int:
    """Rewrite the reshape pools of ``fn``'s top level that ``takes`` accepts (the pool
    kernel plans them on this SoC); returns how many."""
    return sum(_rewrite(op, fn, takes) for op in list(fn.entry.ops)
               if isinstance(op, (FusionGroupOp, *_REDS)))


__all__ = ["rewrite_reshape_pools"]
