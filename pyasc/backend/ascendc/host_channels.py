"""Host side of a channel stencil kernel (``channel_kernel``): the whole ``channels``
loop is one launch.

The host computes the extents (the window sizes and the count of output planes are
scalar ops of the loop's body: they are computed here, before the launch), the column
tiles and pitch as for any run-time stencil (``host_stencil``), and then the groups of
output planes: as many planes per unit as the accumulators hold with tiles of at least
``MIN_TILE_HALO`` halos of rows (and the weights' UB holds their taps), the tile rows
from what is left.  It checks what the kernel assumes (every channel's windows inside
``x``, the weights' taps inside ``w``, ``w`` spanning the planes and channels, the
accumulator buffer of the space's shape, a row of taps within ``MAX_TAPS_BYTES``, a
value per plane when the kernel reads the planes' initial values) and
raises otherwise (the nest's accesses were proven in bounds when it has work).  The
kernel writes every element of the accumulator buffer, or with an epilogue the same
elements of the post group's output (the group's extents checked equal to the
accumulators', the output at least as large); it passes the post group's scalars and
arrays (a view of the planes' values computed here, before the launch), each checked
to cover the kernel's space (a value per plane: the planes).
"""

from __future__ import annotations

from pyasc.backend.ascendc.analysis import SCALAR
from pyasc.backend.ascendc.channel_kernel import MAX_TAPS_BYTES
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.host_stencil import column_tiles, stencil_extents
from pyasc.backend.ascendc.stencil_kernel import MAX_ROWS, MIN_TILE_HALO, StencilKernel
from pyasc.ir.core import OpResult, Value
from pyasc.ir.ops import arith, func
from pyasc.ir.passes.channel_post import PLANE, WHOLE
from pyasc.ir.passes.channel_post import SCALAR as POST_SCALAR
from pyasc.ir.passes.channel_stencil import ChannelStencil


def launch_channels(hb: HostBuilder, k: StencilKernel, cs: ChannelStencil,
                    env: dict[Value, Value], cores: int) -> None:
    """Emit the launch of ``k`` for the loop of ``cs`` (it writes ``cs.acc`` whole)."""
    plan, m = k.channels, k.match
    assert plan is not None and m.sizes is not None
    local = dict(env)
    sizes = [_host_value(hb, v, local, cs) for v in m.sizes]
    if m.planes is not None:
        _host_value(hb, m.planes, local, cs)
    images, planes, rows, cols = stencil_extents(hb, k, sizes, local)
    bases = [env[b.value] for b in m.bases]
    dims = [[hb.dim(v, a) for a in range(len(b.shape))] for v, b in zip(bases, m.bases,
                                                                          strict=True)]
    weights = env[cs.weights[0].weights]
    wdims = [hb.dim(weights, a) for a in range(plan.weights_rank)]
    channels = hb.max(env[cs.loop.upper], 0)
    tile_cols, col_tiles, pitch = column_tiles(hb, k, cols, dims)
    taps = hb.product(wdims[2:]) if len(wdims) > 2 else hb.const(1)
    size = plan.weights_type.itemsize
    w_row = hb.binary(arith.FloorDivOp, hb.round_up(hb.mul(taps, size), 32), size)
    group, tile_rows = _groups(hb, k, planes, rows, pitch, w_row, size)
    groups = hb.max(hb.ceil_div(planes, group), 1)
    spread = hb.ceil_div(hb.mul(hb.mul(hb.mul(images, groups), rows), col_tiles), cores)
    halo = max(b.halo for b in m.bases)
    tile_rows = hb.min(tile_rows, hb.max(spread, max(MIN_TILE_HALO * halo, 1)))
    some = hb.max(rows, 1)
    tile_rows = hb.ceil_div(some, hb.ceil_div(some, tile_rows))  # equal tiles per plane
    per_plane = hb.ceil_div(rows, tile_rows)
    units = hb.mul(hb.mul(hb.mul(images, groups), per_plane), col_tiles)
    per_block = hb.max(hb.ceil_div(units, cores), 1)
    blocks = hb.ceil_div(units, per_block)
    args = [planes, rows, cols, pitch, tile_rows, per_plane, units, per_block, tile_cols,
            col_tiles, images, *(x for d in dims for x in d), channels, group, groups,
            hb.mul(tile_rows, pitch), w_row, *wdims]
    _check(hb, k, cs, [images, planes, rows, cols, channels, taps, tile_cols], dims, wdims,
           local)
    scalars = [hb.extract_scalar(local[v]) for i, v in zip(k.inputs, cs.group.inputs,
                                                           strict=True) if i.vv.cls == SCALAR]
    acc = env[cs.acc]
    # the fill value, the planes' values, or nothing (the kernel reads them from ``acc``)
    init = [env[cs.fill.operand_values[0]]] if cs.fill is not None else \
        [env[cs.init_values]] if plan.init == "planes" else []  # type: ignore[index]
    out, post = [], []
    if plan.post_out is not None:  # the epilogue writes ``out``, not the accumulators
        acc, out = _epilogue_output(hb, cs, env, local, [images, planes, rows, cols])
        post, dims = _epilogue_inputs(hb, cs, local, [images, planes, rows, cols])
        out += dims
    hb.launch(k.name, blocks, [*bases, acc, *scalars, weights, *init, *post, *args, *out],
              [len(bases)])


def _epilogue_inputs(hb: HostBuilder, cs: ChannelStencil, local: dict[Value, Value],
                     space: list[Value]) -> tuple[list[Value], list[Value]]:
    """The epilogue's inputs in the kernel's order (``ChannelPlan.post_params`` and
    ``post_inputs``: its scalars, then its arrays) and each whole array's last three
    extents, raising unless each array covers the kernel's space (a value per plane:
    at least the planes)."""
    planes = space[1]
    # (a scalar or per-plane view computed after the loop: computed here)
    scalars = [hb.extract_scalar(_host_value(hb, pv.value, local, cs))
               for pv in cs.post_inputs if pv.kind == POST_SCALAR]
    arrays, dims, ok = [], [], []
    for pv in cs.post_inputs:
        if pv.kind not in (PLANE, WHOLE):
            continue
        a = _host_value(hb, pv.value, local, cs)
        arrays.append(a)
        if pv.kind == PLANE:
            ok.append(hb.cmp("le", planes, hb.dim(a, 0)))
            continue
        rank = pv.value.type.rank  # type: ignore[attr-defined]
        extents = [hb.dim(a, d) for d in range(rank)]
        shifts = pv.offsets or (0,) * rank  # (a window of the array: s + offset <= d)
        ok += [hb.cmp("le", hb.add(s, o) if o else s, d)
               for s, o, d in zip(space[4 - rank:], shifts, extents, strict=True)]
        dims += extents[-3:]
    if ok:
        cond = ok[0]
        for c in ok[1:]:
            cond = hb.binary(arith.AndOp, cond, c)
        hb.insert(func.AssertOp([cond], [], {
            "message": "the channel kernel's epilogue reads past its inputs", "kind": "bounds"},
            loc=cs.post.loc if cs.post is not None else cs.loop.loc))
    return [*scalars, *arrays], dims


def _epilogue_output(hb: HostBuilder, cs: ChannelStencil, env: dict[Value, Value],
                     local: dict[Value, Value], space: list[Value]
                     ) -> tuple[Value, list[Value]]:
    """``(out, its last three extents)`` for a kernel with the epilogue, raising unless
    the post group's extents are the accumulators' (the kernel's space) and ``out``
    holds them."""
    assert cs.post_out is not None and cs.post_write is not None
    out, rank = env[cs.post_out], cs.post_out.type.rank  # type: ignore[attr-defined]
    dims = [hb.dim(out, a) for a in range(rank)]
    view = cs.post_write.operand_values[1].op  # type: ignore[attr-defined]
    sizes = [_host_value(hb, v, local, cs) for v in view.parts()[1]]
    space = space[4 - rank:]
    ok = [hb.cmp("eq", n, s) for n, s in zip(sizes, space, strict=True)]
    ok += [hb.cmp("le", s, d) for s, d in zip(space, dims, strict=True)]
    cond = ok[0]
    for c in ok[1:]:
        cond = hb.binary(arith.AndOp, cond, c)
    hb.insert(func.AssertOp([cond], [], {
        "message": "the channel kernel's epilogue writes past its output", "kind": "bounds"},
        loc=cs.post.loc if cs.post is not None else cs.loop.loc))
    return out, dims[-3:]


def _groups(hb: HostBuilder, k: StencilKernel, planes: Value, rows: Value, pitch: Value,
            w_row: Value, size: int) -> tuple[Value, Value]:
    """``(planes per unit, the most tile rows)``: as many planes as the accumulators hold
    at tiles of ``MIN_TILE_HALO`` halos of rows (or of all the rows, or of what one tile
    buffer holds), within the weights' UB; the rows the accumulators then hold."""
    plan = k.channels
    assert plan is not None
    halo = max(b.halo for b in k.match.bases)
    cap = hb.max(hb.binary(arith.FloorDivOp, hb.const(k.tile), pitch), 1)
    cap = hb.min(cap, hb.max(hb.min(rows, MAX_ROWS - halo - 1), 1))
    want = hb.min(cap, hb.max(hb.min(rows, max(MIN_TILE_HALO * halo, 1)), 1))
    room = hb.const(plan.acc_tiles * k.tile)
    group = hb.binary(arith.FloorDivOp, room, hb.mul(pitch, want))
    group = hb.min(group, hb.binary(arith.FloorDivOp, hb.const(plan.weight_bytes),
                                    hb.mul(w_row, size)))
    group = hb.max(hb.min(group, planes), 1)
    most = hb.binary(arith.FloorDivOp, room, hb.mul(group, pitch))
    return group, hb.max(hb.min(cap, most), 1)


def _host_value(hb: HostBuilder, v: Value, env: dict[Value, Value],
                cs: ChannelStencil) -> Value:
    """``v`` on the host: a value of before the loop, or a scalar op of the loop's body
    (the window sizes, the count of planes) computed here from such values."""
    if v in env:
        return env[v]
    assert isinstance(v, OpResult) and not v.op.region_list, v
    mapping = {u: _host_value(hb, u, env, cs) for u in v.op.operand_values}
    op = hb.insert(v.op.clone(mapping))
    env.update(zip(v.op.result_values, op.result_values, strict=True))
    return env[v]


def _check(hb: HostBuilder, k: StencilKernel, cs: ChannelStencil, ext: list[Value],
           dims: list[list[Value]], wdims: list[Value], env: dict[Value, Value]) -> None:
    """Raise unless the kernel's assumptions hold (the module docstring)."""
    images, planes, rows, cols, channels, taps, tile_cols = ext
    plan = k.channels
    assert plan is not None
    ok = [hb.cmp("ge", tile_cols, hb.const(1)),
          hb.cmp("le", hb.mul(taps, plan.weights_type.itemsize), hb.const(MAX_TAPS_BYTES)),
          hb.cmp("le", planes, wdims[0]), hb.cmp("le", channels, wdims[1])]
    for b, d in zip(k.match.bases, dims, strict=True):  # every channel's plane
        ok.append(hb.cmp("le", hb.add(channels, b.plane), d[1 if b.images else 0]))
        if b.images:
            ok.append(hb.cmp("le", images, d[0]))
    for w in k.match.windows:  # (with no channel the planes are not read: C may be 0)
        d = dims[w.base]
        ok += [hb.cmp("le", hb.add(rows, w.row), d[-2]),
               hb.cmp("le", hb.add(cols, w.col), d[-1])]
    for wt in cs.weights:
        ok += [hb.cmp("lt", hb.const(t), wdims[a + 2]) for a, t in enumerate(wt.taps)]
    if plan.init == "planes":  # one initial value per plane
        ok.append(hb.cmp("le", planes, hb.dim(env[cs.init_values], 0)))  # type: ignore[index]
    acc = env[cs.acc]
    space = [images, planes, rows, cols][4 - len(cs.acc.type.shape):]  # type: ignore[attr-defined]
    ok += [hb.cmp("eq", hb.dim(acc, a), n) for a, n in enumerate(space)]
    cond = ok[0]
    for c in ok[1:]:
        cond = hb.binary(arith.AndOp, cond, c)
    empty = hb.cmp("eq", hb.mul(hb.mul(hb.mul(planes, rows), cols), images), hb.const(0))
    hb.insert(func.AssertOp([hb.binary(arith.OrOp, cond, empty)], [], {
        "message": f"the windows or weights of channel kernel '{k.name}' reach past "
                   "their arrays", "kind": "bounds"}, loc=k.group.loc))


__all__ = ["launch_channels"]
