"""Host side of a stencil kernel: pass the base arrays themselves, allocate the outputs.

The group's window inputs were snapshots of shifted views (``mem.to_tensor`` of a
``mem.subview``); the stencil kernel reads the arrays they view instead, so the host
passes each base array once and the snapshots become dead (``canonicalize`` drops them).
Static shapes: the block count is a constant of the kernel's plan.  A run-time space
(``dynamic_shape``): the host computes the pitch, the rows per tile, the units and the
block split from the run-time extents and passes them (``launch_stencil_dynamic``), so
one compiled kernel serves every shape; it checks that each window lies inside its base
and that a tile's halo rows fit the halo buffer, and runs the group as the ``flat``
kernel of before otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc.analysis import SCALAR
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.stencil_kernel import (
    MAX_ROWS,
    MIN_TILE_HALO,
    StencilKernel,
    reach,
    widest_pitch,
)
from pyasc.ir.core import OpResult, Value
from pyasc.ir.ops import arith, func, mem
from pyasc.ir.ops.loop import IfOp, YieldOp
from pyasc.ir.types import DYN, TensorType, i1


def launch_stencil(hb: HostBuilder, k: StencilKernel, env: dict[Value, Value],
                   operands: list[Value]) -> list[Value]:
    """Emit the launch of ``k``; ``env`` maps kernel-IR values to host values (the bases
    are kernel-IR buffers), ``operands`` are the group's inputs on the host.  Returns the
    group's results."""
    bases = [env[b.value] for b in k.match.bases]
    bases += [env[k.match.per_plane[p.index]] for p in k.planes_in]  # (planes, 1, 1)
    scalars = [hb.extract_scalar(h) for i, h in zip(k.inputs, operands, strict=True)
               if i.vv.cls == SCALAR]
    outs: list[Value] = []
    for o in k.written:
        t = k.group.result_values[o.index].type
        assert isinstance(t, TensorType)
        outs.append(hb.alloc(t.shape, t.element, [hb.const(d) for d in t.shape]))
    first = len(bases)
    hb.launch(k.name, hb.const(k.blocks), [*bases, *outs, *scalars],
              range(first, first + len(outs)))
    return [hb.to_tensor(buf) for buf in outs]




def _dynamic_arguments(hb: HostBuilder, k: StencilKernel, env: dict[Value, Value],
                       cores: int) -> tuple[list[Value], Value, Value]:
    """The run-time extents and tiling (``emit_stencil.dynamic_names`` order), the block
    count, and whether the kernel applies (every window inside its base, or nothing to
    compute; a column tile at least one element wide)."""
    m = k.match
    assert m.sizes is not None
    sizes = [env[v] for v in m.sizes]
    images, planes, rows, cols = stencil_extents(hb, k, sizes, env)
    bases = [env[b.value] for b in m.bases]
    dims = [[hb.dim(v, a) for a in range(len(b.shape))] for v, b in zip(bases, m.bases,
                                                                          strict=True)]
    halo = max(b.halo for b in m.bases)
    # shared planes: a unit computes every plane of its image (no plane: no unit)
    # collapsed: every channel of every image
    walked = hb.mul(images, hb.min(planes, 1)) if k.shared_planes else \
        hb.mul(images, planes) if m.collapsed else planes
    tile_cols, col_tiles, pitch = column_tiles(hb, k, cols, dims)
    most = hb.max(hb.binary(arith.FloorDivOp, hb.const(k.tile), pitch), 1)
    spread = hb.ceil_div(hb.mul(hb.mul(walked, rows), col_tiles), cores)
    tile_rows = hb.min(hb.min(most, hb.max(spread, max(MIN_TILE_HALO * halo, 1))),
                       hb.max(hb.min(rows, MAX_ROWS - halo - 1), 1))
    some = hb.max(rows, 1)
    tile_rows = hb.ceil_div(some, hb.ceil_div(some, tile_rows))  # equal tiles per plane
    per_plane = hb.ceil_div(rows, tile_rows)
    units = hb.mul(hb.mul(walked, per_plane), col_tiles)
    per_block = hb.max(hb.ceil_div(units, cores), 1)
    blocks = hb.ceil_div(units, per_block)
    args = [planes, rows, cols, pitch, tile_rows, per_plane, units, per_block, tile_cols,
            col_tiles, images]
    ok = hb.binary(arith.AndOp, _inside(hb, k, [images, planes, rows, cols], dims),
                   hb.cmp("ge", tile_cols, hb.const(1)))
    empty = hb.cmp("eq", hb.mul(hb.mul(hb.mul(planes, rows), cols), images), hb.const(0))
    ok = hb.binary(arith.OrOp, ok, empty)  # nothing to compute: launches no block
    return args + [x for d in dims for x in d], blocks, ok


def stencil_extents(hb: HostBuilder, k: StencilKernel, sizes: list[Value],
             env: dict[Value, Value]) -> tuple[Value, Value, Value, Value]:
    """``(images, planes, rows, cols)`` of the space: the windows' sizes, and for fixed
    plane windows the count of planes they are broadcast over (``match.planes``); a
    rank-4 space's windows are ``(images, rows, cols)``."""
    m = k.match
    if m.collapsed:  # x[:, :, a:..., b:...]: (images, channels, rows, cols)
        return sizes[0], sizes[1], sizes[2], sizes[3]
    if m.planes is None:
        return (hb.const(1), *([hb.const(1)] if len(sizes) == 2 else []), *sizes)  # type: ignore[return-value]
    planes = env[m.planes]
    if len(sizes) == 3:  # x[:, c, a:..., b:...]: (images, rows, cols)
        return sizes[0], planes, sizes[1], sizes[2]
    return hb.const(1), planes, sizes[0], sizes[1]


def column_tiles(hb: HostBuilder, k: StencilKernel, cols: Value,
                  dims: list[list[Value]]) -> tuple[Value, Value, Value]:
    """``(tileCols, colTiles, pitch)``: a tile's output columns, tiles per row, and the
    UB row stride.  Whole rows when a tile of them holds enough rows (``widest_pitch``);
    else column tiles of the widest pitch, each copying its columns plus the windows'
    column reach (so rows of any width run)."""
    spread = reach(k)  # columns a tile copies past its own
    need = cols
    for b, d in zip(k.match.bases, dims, strict=True):  # from the windows' first column
        need = hb.max(need, hb.min(hb.add(cols, b.cols[1] - b.cols[0]),
                                   hb.add(d[-1], -b.cols[0])))
    whole = hb.round_up(need, k.unit)
    widest = widest_pitch(k)
    fits = hb.cmp("le", whole, hb.const(widest))
    pitch = hb.insert(arith.SelectOp.new(fits, whole, hb.const(widest))).result
    narrow = hb.const(widest - spread)
    tile_cols = hb.insert(arith.SelectOp.new(fits, cols, narrow)).result
    col_tiles = hb.ceil_div(cols, hb.max(tile_cols, 1))
    return tile_cols, hb.max(col_tiles, 1), pitch


def _inside(hb: HostBuilder, k: StencilKernel, space: list[Value],
            dims: list[list[Value]]) -> Value:
    """Every window lies inside its base (``space``: images, planes, rows, cols)."""
    m = k.match
    images, planes, rows, cols = space
    fits: list[Value] = []
    for w in m.windows:
        b, d = m.bases[w.base], dims[w.base]
        fits += [hb.cmp("le", hb.add(rows, w.row), d[-2]),
                 hb.cmp("le", hb.add(cols, w.col), d[-1])]
        if len(d) >= 3:  # a fixed plane is one plane of the base for every plane
            fits.append(hb.cmp("le", hb.add(hb.const(1) if b.fixed else planes, b.plane),
                             d[-3]))
        if len(d) == 4:  # one channel of every image
            fits.append(hb.cmp("le", images, d[0]))
        if len(d) == 4 and not b.fixed:  # plane n * C + c: all of the base's channels
            fits.append(hb.cmp("eq", planes, d[1]))
    ok = fits[0]
    for c in fits[1:]:
        ok = hb.binary(arith.AndOp, ok, c)
    return ok



def launch_stencil_dynamic(hb: HostBuilder, k: StencilKernel, env: dict[Value, Value],
                           operands: list[Value], cores: int,
                           flat: Callable[[HostBuilder, list[Value]], list[Value]] | None
                           ) -> list[Value]:
    """``if fits: the stencil kernel else: flat(hb, operands)`` (the group as a ``flat``
    vector kernel, for windows past their base or a window reach wider than the halo
    buffer).  The window snapshots the flat kernel reads are taken inside its branch
    only.  Without a ``flat`` kernel (one that does not plan: more windows than its
    TPipe's buffers) the other branch raises what it cannot do (:func:`_refuse`)."""
    args, blocks, ok = _dynamic_arguments(hb, k, env, cores)
    types = [k.group.result_values[o.index].type for o in k.written]
    branch = hb.insert(IfOp.empty(ok, types, k.group.loc))
    then = HostBuilder(branch.then_region.blocks[0], k.group.loc)
    bases = [env[b.value] for b in k.match.bases]
    bases += [_planes_of(then, env[k.match.per_plane[p.index]], args[0]) for p in k.planes_in]
    scalars = [then.extract_scalar(h) for i, h in zip(k.inputs, operands, strict=True)
               if i.vv.cls == SCALAR]
    rank = types[0].rank  # type: ignore[union-attr]
    space = [args[10], *args[:3]] if rank == 4 else args[:3] if rank == 3 else args[1:3]
    outs = []
    for t in types:
        assert isinstance(t, TensorType)
        outs.append(then.alloc(t.shape, t.element, space))
    first = len(bases)
    then.launch(k.name, blocks, [*bases, *outs, *scalars, *args], range(first, first + len(outs)))
    then.insert(YieldOp([then.to_tensor(buf) for buf in outs]))
    other = HostBuilder(branch.else_region.blocks[0], k.group.loc)
    if flat is None:
        _refuse(other, k)
        other.insert(YieldOp([other.to_tensor(other.alloc(t.shape, t.element, space))
                              for t in types if isinstance(t, TensorType)]))
        return list(branch.result_values)
    local = [_snapshot_here(other, hb, v) for v in operands]
    other.insert(YieldOp(flat(other, local)))
    return list(branch.result_values)


def _refuse(hb: HostBuilder, k: StencilKernel) -> None:
    """The error of a stencil without a twin for windows past their base (a batched
    loop's windows never are when it has work: its accesses were proven in bounds)."""
    hb.insert(func.AssertOp([hb.insert(arith.ConstantOp.new(False, i1)).result], [], {
        "message": f"the windows of stencil kernel '{k.name}' reach past their arrays",
        "kind": "bounds"}, loc=k.group.loc))


def _planes_of(hb: HostBuilder, v: Value, planes: Value) -> Value:
    """Per-plane values ``v`` (``(?, 1, 1)``) broadcast to the space's planes (a no-op view
    when they agree; numpy's ValueError when they do not broadcast)."""
    t = v.type
    assert isinstance(t, TensorType)
    if t.rank == 4 and t.shape[1] == DYN:  # (1, ?, 1, 1): per channel (collapsed)
        return hb.broadcast(v, t.shape, t.element, [hb.const(1), planes, hb.const(1),
                                                    hb.const(1)])
    if t.shape[0] != DYN:
        return v
    return hb.broadcast(v, (DYN, *t.shape[1:]), t.element,
                        [planes, *(hb.const(d) for d in t.shape[1:])])


def _snapshot_here(other: HostBuilder, hb: HostBuilder, v: Value) -> Value:
    """``v``, re-taken in ``other`` when it is a snapshot taken in ``hb``'s block (the
    one there becomes dead: the stencil branch reads the base arrays)."""
    if isinstance(v, OpResult) and isinstance(v.op, mem.ToTensorOp) and \
            v.op.parent is hb.b.block:
        return other.insert(v.op.clone({})).result_values[0]
    return v


__all__ = ["launch_stencil", "launch_stencil_dynamic"]
