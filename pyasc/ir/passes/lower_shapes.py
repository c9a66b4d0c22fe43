"""``lower-to-loops`` rules for views, element access, concatenation, gather, compress.

* ``tensor.slice`` -> ``mem.subview``, ``tensor.transpose`` -> ``mem.transpose`` (views;
  the result memref type carries the strides known statically);
* ``tensor.reshape`` -> ``mem.reshape`` of the source when its type is contiguous, else
  of a contiguous copy; a ``shape`` check compares element counts when any dim is ``?``;
* ``tensor.extract`` -> ``mem.load``; ``tensor.dim`` -> a constant or ``mem.dim``;
* ``tensor.concat``: one copy nest per input into a fresh buffer, offset on the axis;
* ``tensor.gather`` (``np.take``): a nest over the result; each index is loaded once per
  position of the index array, wrapped when negative and checked (kind ``bounds``);
* ``tensor.compress`` (``src[mask]``): a counting pass over the mask, a fresh buffer of
  that length, then a filling pass guarded by ``loop.if``.
"""

from __future__ import annotations

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import loop, mem, tensor
from pyasc.ir.passes.bufferize import Lowerer, LowerFn
from pyasc.ir.passes.loopgen import constant_of, shape_template, static_strides, view_type
from pyasc.ir.passes.lower_elementwise import result_dims
from pyasc.ir.types import DYN, MemRefType, TensorType, index


def _scale(stride: int, step: Value) -> int:
    k = constant_of(step)
    return DYN if stride == DYN or not isinstance(k, int) else stride * k


def _lower_slice(cx: Lowerer, op: tensor.SliceOp) -> list[Value]:
    src = cx.get(op.source)
    offsets, sizes, steps = (cx.getall(p) for p in op.parts())
    drop = op.attributes.get("drop", ())
    st = static_strides(src.type)
    strides = [_scale(st[a], steps[a]) for a in range(len(st)) if a not in drop]
    t = op.result.type
    rt = view_type(t.shape, t.element, strides)
    return [cx.gen.emit(mem.SubviewOp([src, *offsets, *sizes, *steps], [rt],
                                      dict(op.attributes)))]


def _lower_transpose(cx: Lowerer, op: tensor.TransposeOp) -> list[Value]:
    src = cx.get(op.source)
    perm = op.attributes["perm"]
    st = static_strides(src.type)
    t = op.result.type
    rt = view_type(t.shape, t.element, [st[p] for p in perm])
    return [cx.gen.emit(mem.TransposeOp([src], [rt], {"perm": perm}))]


def _lower_reshape(cx: Lowerer, op: tensor.ReshapeOp) -> list[Value]:
    gen = cx.gen
    src = cx.get(op.source)
    if not src.type.is_contiguous:
        src = cx.fresh_copy(src)
    t = op.result.type
    dyn = cx.getall(op.dims)
    if not (src.type.is_static and t.is_static):
        total = gen.product(gen.dims(src))
        dims = result_dims(gen, t, dyn)
        values = [total]
        text = shape_template(dims, values)
        gen.check(gen.cmp("eq", total, gen.product(dims)),
                  f"cannot reshape array of size {{0}} into shape {text}", "shape", values)
    return [gen.emit(mem.ReshapeOp([src, *dyn], [MemRefType(t.shape, t.element)]))]


def _lower_extract(cx: Lowerer, op: tensor.ExtractOp) -> list[Value]:
    return [cx.gen.load(cx.get(op.source), cx.getall(op.indices))]


def _lower_dim(cx: Lowerer, op: tensor.DimOp) -> list[Value]:
    return [cx.gen.dim(cx.get(op.source), op.attributes["axis"])]


def _lower_concat(cx: Lowerer, op: tensor.ConcatOp) -> list[Value]:
    gen = cx.gen
    ins = cx.getall(op.inputs)
    axis = op.attributes["axis"]
    t = op.result.type
    in_dims = [gen.dims(v) for v in ins]
    out_dims: list[Value] = []
    oks: list[Value] = []
    for a, static in enumerate(t.shape):
        if a == axis:
            total = gen.const(0)
            for dims in in_dims:
                total = gen.add(total, dims[a])
            d = total if static == DYN else gen.const(static)
            oks.append(gen.cmp("eq", total, d))
        else:
            d = in_dims[0][a] if static == DYN else gen.const(static)
            oks += [gen.cmp("eq", dims[a], d) for dims in in_dims]
        out_dims.append(d)
    gen.check(gen.all_of(oks), "all the input array dimensions except for the "
              "concatenation axis must match exactly", "shape")
    out = cx.alloc(t, out_dims, op.result.name_hint)
    offset = gen.const(0)
    for v, dims in zip(ins, in_dims, strict=True):
        def body(ivs: list[Value], v: Value = v, off: Value = offset) -> None:
            dst = [gen.add(iv, off) if a == axis else iv for a, iv in enumerate(ivs)]
            gen.store(gen.load(v, ivs), out, dst)
        gen.nest(dims, body, parallel=True)
        offset = gen.add(offset, dims[axis])
    return [out]


def labels(op: Operation, k: int) -> tuple[int, str | None]:
    """The user's axis of index operand ``k`` of a gather/scatter and the array's name."""
    axes = op.attributes.get("axes")
    default = op.attributes.get("axis", k)
    axis = axes[k] if isinstance(axes, tuple) and k < len(axes) else default
    return axis, op.attributes.get("array")


def _lower_gather(cx: Lowerer, op: tensor.GatherOp) -> list[Value]:
    gen = cx.gen
    src, idx = cx.get(op.source), cx.get(op.indices)
    axis = op.attributes["axis"]
    sd, xd = gen.dims(src), gen.dims(idx)
    t = op.result.type
    if not isinstance(t, TensorType):
        k = gen.checked_index(gen.load(idx, []), sd[axis], *labels(op, 0))
        return [gen.load(src, [k])]
    split = axis + len(xd)
    out_dims = sd[:axis] + xd + sd[axis + 1:]
    out = cx.alloc(t, out_dims, op.result.name_hint)

    def outer(ovs: list[Value]) -> None:
        k = gen.checked_index(gen.load(idx, ovs[axis:]), sd[axis], *labels(op, 0))
        gen.nest(out_dims[split:], lambda ivs: gen.store(
            gen.load(src, [*ovs[:axis], k, *ivs]), out, [*ovs, *ivs]), prefix="j")
    gen.nest(out_dims[:split], outer, parallel=True)
    return [out]


def _lower_compress(cx: Lowerer, op: tensor.CompressOp) -> list[Value]:
    gen = cx.gen
    src, mask = cx.get(op.source), cx.get(op.mask)
    sd, md = gen.dims(src), gen.dims(mask)
    gen.check(gen.all_of([gen.cmp("eq", m, s) for m, s in zip(md, sd, strict=False)]),
              "boolean index did not match indexed array", "bounds")
    zero = gen.const(0)

    def count(ivs: list[Value], c: list[Value]) -> list[Value]:
        return [gen.add(c[0], gen.cast(gen.load(mask, ivs), index))]
    n = gen.nest_carried(md, [zero], count, names=["count"])[0]
    rest = sd[len(md):]
    out = cx.alloc(op.result.type, [n, *rest], op.result.name_hint)

    def fill(ivs: list[Value], c: list[Value]) -> list[Value]:
        m = gen.load(mask, ivs)
        guard = gen.b.insert(loop.IfOp.empty(m))
        with gen.b.at(guard.then_region.blocks[0]):
            gen.nest(rest, lambda js: gen.store(gen.load(src, [*ivs, *js]), out,
                                                [c[0], *js]), prefix="j")
            gen.b.insert(loop.YieldOp([]))
        with gen.b.at(guard.else_region.blocks[0]):
            gen.b.insert(loop.YieldOp([]))
        return [gen.add(c[0], gen.cast(m, index))]
    gen.nest_carried(md, [zero], fill, names=["pos"])
    return [out]


RULES: dict[type[Operation], LowerFn] = {
    tensor.SliceOp: _lower_slice,  # type: ignore[dict-item]
    tensor.TransposeOp: _lower_transpose,  # type: ignore[dict-item]
    tensor.ReshapeOp: _lower_reshape,  # type: ignore[dict-item]
    tensor.ExtractOp: _lower_extract,  # type: ignore[dict-item]
    tensor.DimOp: _lower_dim,  # type: ignore[dict-item]
    tensor.ConcatOp: _lower_concat,  # type: ignore[dict-item]
    tensor.GatherOp: _lower_gather,  # type: ignore[dict-item]
    tensor.CompressOp: _lower_compress,  # type: ignore[dict-item]
}

