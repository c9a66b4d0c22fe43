"""Gradient rules of the ``tensor`` ops: reductions, matmul, shape ops, slices, gathers.

``max``/``min`` reductions route the gradient to the elements equal to the result,
split evenly among ties (torch's ``amax``, JAX).  A slice, an element read or a gather
scatters its adjoint into a zero buffer of the source's shape; a gather *adds* (a loop
over the indices, so repeated indices accumulate).
"""

from __future__ import annotations

from pyasc.ir.autodiff.registry import not_differentiable, vjp_rule
from pyasc.ir.autodiff.sweep import Sweep
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, loop, mem, scatter, sort, tensor
from pyasc.ir.types import DYN, MemRefType, TensorType, element_type, index, shape_of

Douts = list[Value | None]


def _kept(sw: Sweep, op: Operation, g: Value) -> Value:
    """A reduction's adjoint reshaped to keepdims form (size 1 on the reduced axes)."""
    src = op.source.type
    axes = op.attributes["axes"]
    shape = tuple(1 if a in axes else n for a, n in enumerate(src.shape))
    if op.attributes["keepdims"]:
        return g
    dims = [sw.em.op(tensor.DimOp([sw.v(op.source)], [index], {"axis": a}))
            for a, n in enumerate(shape) if n == DYN]
    return sw.em.reshape(g, shape, dims=dims)


@vjp_rule(tensor.SumOp)
def _sum(sw: Sweep, op: Operation, d: Douts) -> list:
    return [_kept(sw, op, d[0])]  # the sweep broadcasts it to the source's shape


@vjp_rule(tensor.ReduceMaxOp, tensor.ReduceMinOp)
def _reduce_extremum(sw: Sweep, op: Operation, d: Douts) -> list:
    em, x = sw.em, sw.v(op.source)
    axes = op.attributes["axes"]
    out = _kept(sw, op, sw.v(op.result))
    hit = em.cast(em.cmp("eq", x, out), element_type(x.type))
    count = em.sum(hit, axes, keepdims=True)
    return [em.mul(hit, em.div(_kept(sw, op, d[0]), count))]


@vjp_rule(tensor.MatmulOp)
def _matmul(sw: Sweep, op: Operation, d: Douts) -> list:
    """``ga = g @ b^T``, ``gb = a^T @ g`` on the 2-D (batched) forms; vectors are
    promoted to matrices first and the sweep sums broadcast batch axes."""
    em = sw.em
    a, b = sw.v(op.lhs), sw.v(op.rhs)
    sa, sb = shape_of(a.type), shape_of(b.type)
    a2 = em.reshape(a, (1, *sa), like=a) if len(sa) == 1 else a
    b2 = em.reshape(b, (*sb, 1), like=b) if len(sb) == 1 else b
    out2 = tensor.matmul_shape(shape_of(a2.type), shape_of(b2.type))
    g2 = em.reshape(d[0], out2, like=d[0])
    ga = _mm(em, g2, _swap(em, b2))
    gb = _mm(em, _swap(em, a2), g2)
    return [_fit_matrix(em, ga, a), _fit_matrix(em, gb, b)]


def _mm(em, a: Value, b: Value) -> Value:
    return em.op(tensor.MatmulOp.new(a, b))


def _swap(em, v: Value) -> Value:
    r = len(shape_of(v.type))
    return em.transpose(v, (*range(r - 2), r - 1, r - 2))


def _fit_matrix(em, g: Value, target: Value) -> Value:
    """Sum broadcast batch axes, then drop a promoted vector's unit axis."""
    shape = shape_of(target.type)
    if len(shape) == 1:
        lead = len(shape_of(g.type)) - 2
        g = em.sum(g, list(range(lead)))
        return em.reshape(g, shape, like=target)
    return em.fit(g, target)


@vjp_rule(tensor.TransposeOp)
def _transpose(sw: Sweep, op: Operation, d: Douts) -> list:
    perm = op.attributes["perm"]
    inverse = [perm.index(i) for i in range(len(perm))]
    return [sw.em.transpose(d[0], inverse)]


@vjp_rule(tensor.ReshapeOp)
def _reshape(sw: Sweep, op: Operation, d: Douts) -> list:
    src = sw.v(op.source)
    return [sw.em.reshape(d[0], shape_of(src.type), like=src)]


@vjp_rule(tensor.BroadcastOp)
def _broadcast(sw: Sweep, op: Operation, d: Douts) -> list:
    return [d[0]]  # the sweep sums it back to the source's shape


@vjp_rule(tensor.FillOp)
def _fill(sw: Sweep, op: Operation, d: Douts) -> list:
    return [d[0]]  # summed to the scalar fill value by the sweep


@vjp_rule(tensor.SliceOp)
def _slice(sw: Sweep, op: Operation, d: Douts) -> list:
    """The adjoint written into the same slice of a zero buffer of the source's shape."""
    em, src = sw.em, sw.v(op.source)
    buf = em.buffer(src.type, like=src)
    t = op.result.type
    view_t = MemRefType(t.shape, t.element, (DYN,) * t.rank)
    view = em.op(mem.SubviewOp([buf, *[sw.v(o) for o in op.operand_values[1:]]],
                               [view_t], dict(op.attributes)))
    em.write(d[0], view)
    return [em.read(buf)]


@vjp_rule(tensor.ExtractOp)
def _extract(sw: Sweep, op: Operation, d: Douts) -> list:
    em, src = sw.em, sw.v(op.source)
    buf = em.buffer(src.type, like=src)
    em.b.insert(mem.StoreOp([d[0], buf, *[sw.v(i) for i in op.indices]]))
    return [em.read(buf)]


@vjp_rule(tensor.ConcatOp)
def _concat(sw: Sweep, op: Operation, d: Douts) -> list:
    """Each input's part of the adjoint: a slice along ``axis`` (sizes may be dynamic)."""
    em, axis = sw.em, op.attributes["axis"]
    out = shape_of(op.result.type)
    offset = em.index(0)
    grads = []
    for x in op.inputs:
        xv = sw.v(x)
        size = _dim(em, xv, axis)
        offs = [offset if a == axis else em.index(0) for a in range(len(out))]
        sizes = [size if a == axis else _dim(em, d[0], a) for a in range(len(out))]
        steps = [em.index(1)] * len(out)
        grads.append(em.op(tensor.SliceOp([d[0], *offs, *sizes, *steps], [
            TensorType(shape_of(xv.type), element_type(xv.type))])))
        offset = em.op(arith.AddOp.new(offset, size))
    return grads


def _dim(em, v: Value, axis: int) -> Value:
    n = shape_of(v.type)[axis]
    return em.index(n) if n >= 0 else em.op(tensor.DimOp([v], [index], {"axis": axis}))


@vjp_rule(sort.CumSumOp)
def _cumsum(sw: Sweep, op: Operation, d: Douts) -> list:
    """The running sum's adjoint is the running sum of ``dout`` from the other end."""
    em, axis = sw.em, op.attributes["axis"]
    back = em.op(sort.CumSumOp.new(_flip(em, d[0], axis), axis))
    return [_flip(em, back, axis)]


def _flip(em, v: Value, axis: int) -> Value:
    """``v`` reversed along ``axis`` (a slice with step -1)."""
    shape = shape_of(v.type)
    zero, one = em.index(0), em.index(1)
    n = _dim(em, v, axis)
    last = em.op(arith.SubOp.new(n, one))
    offs = [last if a == axis else zero for a in range(len(shape))]
    sizes = [n if a == axis else _dim(em, v, a) for a in range(len(shape))]
    steps = [em.index(-1) if a == axis else one for a in range(len(shape))]
    return em.op(tensor.SliceOp([v, *offs, *sizes, *steps], [v.type]))


@vjp_rule(tensor.GatherOp)
def _gather(sw: Sweep, op: Operation, d: Douts) -> list:
    """``np.take``'s adjoint: a loop adding each gathered row back at its index."""
    _static(op)
    em, src, idx = sw.em, sw.v(op.source), sw.v(op.indices)
    axis = op.attributes["axis"]
    sshape, ishape = shape_of(src.type), shape_of(idx.type)
    rest = sshape[:axis] + sshape[axis + 1:]
    k = len(ishape)
    # the adjoint with the index axes first, then flattened: (n, *rest)
    perm = [*range(axis, axis + k), *range(axis), *range(axis + k, len(sshape) + k - 1)]
    n = 1
    for s in ishape:
        n *= s
    g = em.reshape(em.transpose(d[0], perm), (n, *rest))
    flat = em.reshape(idx, (n,)) if k != 1 else idx
    moved = (sshape[axis], *rest)
    buf = em.buffer(TensorType(moved, element_type(src.type)))
    _scatter_add_loop(em, buf, g, flat, sshape[axis], n)
    back = [*range(1, axis + 1), 0, *range(axis + 1, len(sshape))]
    return [em.transpose(em.read(buf), back), None]


@vjp_rule(scatter.GatherNdOp)
def _gather_nd(sw: Sweep, op: Operation, d: Douts) -> list:
    """``source[i0, i1...]``'s adjoint: a loop adding each gathered element (or row)
    back at its indices, so repeated index tuples accumulate."""
    _static(op)
    em, src = sw.em, sw.v(op.source)
    sshape = shape_of(src.type)
    idx = [sw.v(i) for i in op.indices]
    bshape = scatter.index_shape(op.indices)
    n = 1
    for s in bshape:
        n *= s
    rest = sshape[len(idx):]
    flat = [_flat_index(em, i, bshape, n) for i in idx]
    g = em.reshape(d[0], (n, *rest))
    buf = em.buffer(src.type, like=src)
    for_op = loop.ForOp.empty(em.index(0), em.index(n), em.index(1))
    em.b.insert(for_op)
    body = for_op.body.blocks[0]
    j = body.args[0]
    with em.b.at(body):
        at = [_wrapped(em, em.cast(em.op(tensor.ExtractOp([f, j], [element_type(f.type)])),
                                   index), size) for f, size in zip(flat, sshape, strict=False)]
        _add_at(em, buf, g, at, j, rest)
        em.b.insert(loop.YieldOp([]))
    return [em.read(buf)]


def _flat_index(em, i: Value, bshape: tuple[int, ...], n: int) -> Value:
    """Index operand ``i`` broadcast to the index shape and flattened to ``(n,)``."""
    t = TensorType(bshape, element_type(i.type))
    if isinstance(i.type, TensorType):
        i = em.reshape(i, (1,) * (len(bshape) - len(shape_of(i.type))) + shape_of(i.type))
    return em.reshape(em.broadcast(i, t) if i.type != t else i, (n,))


def _wrapped(em, i: Value, size: int) -> Value:
    """A negative index counts from the end (numpy's rule)."""
    return em.select(em.cmp("lt", i, em.index(0)), em.add(i, em.index(size)), i)


def _add_at(em, buf: Value, g: Value, at: list[Value], j: Value,
            rest: tuple[int, ...]) -> None:
    """``buf[at...] += g[j]`` (an element, or a row of shape ``rest``)."""
    t = buf.type
    zero, one = em.index(0), em.index(1)
    if not rest:
        old = em.op(mem.LoadOp([buf, *at], [t.element]))
        new = em.add(old, em.op(tensor.ExtractOp([g, j], [t.element])))
        em.b.insert(mem.StoreOp([new, buf, *at]))
        return
    k = len(at)
    sizes = [one] * k + [em.index(s) for s in rest]
    view = em.op(mem.SubviewOp([buf, *at, *[zero] * len(rest), *sizes, *[one] * t.rank],
                               [MemRefType(rest, t.element)], {"drop": tuple(range(k))}))
    part = em.op(tensor.SliceOp([g, j, *[zero] * len(rest), one,
                                 *[em.index(s) for s in rest], *[one] * (1 + len(rest))],
                                [TensorType(rest, t.element)], {"drop": (0,)}))
    em.add_into(view, part)


def _static(op: Operation) -> None:
    """The scatter-add loops are built for static shapes."""
    if any(DYN in shape_of(v.type) for v in (*op.operand_values, *op.result_values)):
        raise not_differentiable(op.loc, "the gradient of a gather is built for static "
                                 "shapes; this one has sizes known only at run time",
                                 hint="compile without dynamic_shape=True")


def _scatter_add_loop(em, buf: Value, g: Value, flat: Value, size: int, n: int) -> None:
    """``for j in range(n): buf[flat[j]] += g[j]`` (negative indices wrap)."""
    for_op = loop.ForOp.empty(em.index(0), em.index(n), em.index(1))
    em.b.insert(for_op)
    body = for_op.body.blocks[0]
    j = body.args[0]
    with em.b.at(body):
        i = em.cast(em.op(tensor.ExtractOp([flat, j], [element_type(flat.type)])), index)
        wrapped = em.add(i, em.index(size))
        i = em.select(em.cmp("lt", i, em.index(0)), wrapped, i)
        _row_add(em, buf, g, i, j)
        em.b.insert(loop.YieldOp([]))


def _row_add(em, buf: Value, g: Value, i: Value, j: Value) -> None:
    """``buf[i] += g[j]`` (rows of any rank)."""
    t = buf.type
    rank = t.rank
    zero, one = em.index(0), em.index(1)
    rest = t.shape[1:]
    if not rest:
        old = em.op(mem.LoadOp([buf, i], [t.element]))
        new = em.add(old, em.op(tensor.ExtractOp([g, j], [t.element])))
        em.b.insert(mem.StoreOp([new, buf, i]))
        return
    sizes = [one, *[em.index(s) for s in rest]]
    steps = [one] * rank
    row_t = MemRefType(rest, t.element)  # a row of a contiguous buffer is contiguous
    view = em.op(mem.SubviewOp([buf, i, *[zero] * (rank - 1), *sizes, *steps], [row_t],
                               {"drop": (0,)}))
    part = em.op(tensor.SliceOp([g, j, *[zero] * (rank - 1), *sizes, *steps],
                                [TensorType(rest, t.element)], {"drop": (0,)}))
    em.add_into(view, part)
