"""Convolutions written with loops that ``batch-loops`` leaves scalar: the reduction
nest as a matmul, then batched.

``loop_conv`` takes a loop convolution once ``batch-loops`` has made it a sum of window
products; two kinds never get there: a real layer (``C * KH * KW`` taps unrolled pass
``batch_nest.MAX_UNROLLED_OPS``: 64 channels x 3 x 3) and a strided one (``x[c, 2 * i +
a, 2 * j + b]``: not a batched window), which stay scalar kernels.  This step runs
after ``batch-loops`` and recognizes the loop nests it left::

    for [n], o, i, j:                      # lower 0, step 1, static trip counts
        acc = init                         # anything
        for c, a, b:                       # carrying acc, nothing else
            acc += x[[n,] c, sh*i + dh*a + r0, sw*j + dw*b + q0] * w[o, c, a, b]
        ... acc ...                        # the epilogue: untouched

(a loop of one trip is gone by then: an axis of ``w`` of size 1 is a missing loop, its
index 0, as in a 2x1 or 1x1 kernel; each loop walks all of its axis of ``w``; so is an
output axis of 1, one image, one output plane, one output row or column: index 0 of
``x``'s image, of ``w``'s outputs, no ``i`` or ``j`` term in ``x``'s row or column)

with ``x`` and ``w`` C-contiguous, of one float16/float32 dtype, the trip counts those
of ``w``'s shape and of the output (the geometry's ``OH``, ``OW``), and nothing in the
nest writing ``x`` or ``w``.  Against a scalar kernel the cube always pays: the
convolution is computed before the nest (``ConvEmitter``: the im2col copy loop and the
matmul of ``pyasc.ops.conv2d``) into a fresh buffer, and the reduction nest becomes
``init + conv[[n,] o, i, j]``: what remains is an elementwise nest that ``batch-loops``,
run again, batches into a vector kernel (bias, ReLU, the store): ``loop_conv_rewrite``
rewrites what this module recognizes.
"""

from __future__ import annotations

from pyasc.backend.ascendc.conv_plan import ConvGeometry
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.ops.fusion import FusionGroupOp, FusionYieldOp
from pyasc.ir.passes.affine import affine_of
from pyasc.ir.passes.batch_nest import constant_int
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.types import MemRefType, ScalarType


def _counted(op: Operation, carried: int) -> int | None:
    """The trip count of a ``for`` from 0 by 1 carrying ``carried`` values, else None."""
    if not isinstance(op, loop.ForOp) or len(op.inits) != carried or \
            constant_int(op.lower) != 0 or constant_int(op.step) != 1:
        return None
    return constant_int(op.upper)


def _only_loop(op: loop.ForOp) -> Operation | None:
    """The one loop of ``op``'s body when the rest is constants and the yield."""
    ops = op.body.blocks[0].ops
    loops = [o for o in ops if isinstance(o, loop.ForOp)]
    rest = [o for o in ops if not isinstance(o, loop.ForOp | loop.YieldOp | arith.ConstantOp)]
    return loops[0] if len(loops) == 1 and not rest else None


def _reduction(r: Operation) -> tuple[list[loop.ForOp], Value, Value] | None:
    """A perfect nest of 1-3 loops carrying ``acc`` whose innermost body is ``acc +=
    x[...] * w[...]`` (``for c: for a: for b:``, a loop of one trip removed): its loops
    (outermost first) and the two loads."""
    loops: list[loop.ForOp] = []
    op: Operation | None = r
    while op is not None and _counted(op, 1) is not None and len(loops) < 3:
        loops.append(op)  # type: ignore[arg-type]
        body = op.body.blocks[0]  # type: ignore[attr-defined]
        inner = _only_loop(op)  # type: ignore[arg-type]
        if inner is None or inner.operand_values[3] is not body.args[1] or \
                body.terminator.operand_values[0] is not inner.result_values[0]:
            break
        op = inner
    if not loops:
        return None
    body = loops[-1].body.blocks[0]
    y = body.terminator.operand_values[0]
    if not (isinstance(y, OpResult) and type(y.op) is arith.AddOp):
        return None
    acc, prod = y.op.operand_values
    if acc is not body.args[1]:
        acc, prod = prod, acc
    if acc is not body.args[1] or not (isinstance(prod, OpResult) and
                                       type(prod.op) is arith.MulOp):
        return None
    loads = [v for v in prod.op.operand_values
             if isinstance(v, OpResult) and isinstance(v.op, mem.LoadOp)]
    if len(loads) != 2 or any(o.has_trait("writes") or o.region_list for o in body.ops):
        return None
    return loops, loads[0], loads[1]


def _tap_axes(loops: list[loop.ForOp], widx: list[Value], wt: MemRefType
              ) -> list[Value | None] | None:
    """The reduction's variables of w's axes (c, a, b), None for an axis of one the
    nest has no loop for (index 0), when each loop walks all of its own axis."""
    ivs = [f.induction_var for f in loops]
    axes: list[Value | None] = []
    for v, extent in zip(widx, wt.shape[1:], strict=True):
        if v in ivs and _counted(loops[ivs.index(v)], 1) == extent:
            axes.append(v)
        elif constant_int(v) == 0 and extent == 1:
            axes.append(None)
        else:
            return None
    used = sorted(id(v) for v in axes if v is not None)
    return axes if used == sorted(map(id, ivs)) else None


Names = dict[str, Value | None]
"""The output loops' variables by axis ("n", "o", "i", "j"); None: the axis has no loop
(an axis of 1, its loop of one trip gone: index 0)."""


class NestConv:
    """A recognized nest: the reduction loop, the output loops ([n,] o, i, j) outermost
    first, ``x``, ``w``, the geometry, where tap (0, 0)'s window starts, and the output
    loops' variables by axis."""

    def __init__(self, red: Operation, space: list[loop.ForOp], x: Value, w: Value,
                 geo: ConvGeometry, origin: tuple[int, int], names: Names) -> None:
        self.red, self.space, self.x, self.w = red, space, x, w
        self.geo, self.origin, self.names = geo, origin, names


def _names(loops: list[loop.ForOp], plane: Value, image: Value | None, row: Value,
           col: Value) -> Names | None:
    """Which output loop is which: ``plane`` indexes w's outputs, ``image`` x's images
    (None: x has none), the one loop variable of ``row`` / ``col`` x's rows / columns;
    each loop one axis, in the order n, o, i, j; else None."""
    ivs = [f.induction_var for f in loops]

    def only(vs: list) -> Value | None:
        found = [v for v in vs if v in ivs]
        return found[0] if len(found) == 1 else None

    names = {"n": only([image]), "o": only([plane]), "i": only(list(affine_of(row).terms)),
             "j": only(list(affine_of(col).terms))}
    present = [v for v in names.values() if v is not None]
    return names if len(present) == len(ivs) and all(
        a is b for a, b in zip(present, ivs, strict=True)) else None


def _trips(loops: list[loop.ForOp], names: Names) -> list[int | None]:
    """The trip counts of the n, o, i, j axes: a missing loop's is 1."""
    by_iv = {id(f.induction_var): _counted(f, 0) for f in loops}
    return [1 if v is None else by_iv[id(v)] for v in names.values()]


def _enclosing(op: Operation, top: set[int]) -> list[loop.ForOp] | None:
    """The loops around ``op`` up to a top-level block (outermost first), when each
    counts from 0 by 1 carrying nothing, else None."""
    out = []
    block = op.parent
    while block is not None and id(block) not in top:
        parent = block.parent_op
        if parent is None or _counted(parent, 0) is None:
            return None
        out.append(parent)
        block = parent.parent
    return out[::-1] if block is not None else None


def _buffer(v: Value, rank: int) -> MemRefType | None:
    t = v.type
    ok = isinstance(t, MemRefType) and t.rank == rank and t.is_contiguous and t.is_static and \
        t.element.name in ("f16", "f32")
    return t if ok else None  # type: ignore[return-value]


def _writes_to(nest: Operation, bufs: set[Value]) -> bool:
    """Whether an op in ``nest`` writes (any memref operand of a writing op) ``bufs``."""
    return any(o.has_trait("writes") and
               any(isinstance(v.type, MemRefType) and base_buffer(v) in bufs
                   for v in o.operand_values) for o in nest.walk())


def _image(v: Value, names: Names) -> bool:
    """``v`` indexes x's images as the batch loop does: its variable, or 0 when there is
    no batch loop (x of one image, ``_x_type``)."""
    return v is names["n"] if names["n"] is not None else constant_int(v) == 0


def _x_type(x: Value, batch: bool) -> MemRefType | None:
    """x as the nest reads it: (C, H, W), or (N, C, H, W) with a batch loop, or (1, C, H,
    W) without one (the frontend drops a loop of one trip)."""
    t = _buffer(x, 4 if batch else 3)
    if t is None and not batch:
        t = _buffer(x, 4)
        return t if t is not None and t.shape[0] == 1 else None
    return t


def _taps(xl: mem.LoadOp, axes: list[Value | None], space: Names
          ) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]] | None:
    """(strides, dilations, origin) of the x load's row and column, else None (an axis
    of one, ``None`` in ``axes`` or ``space``: index 0 of x's channels, dilation 1 of a
    tap axis, stride 1 of an output axis)."""
    c, a, b = axes
    idx = list(xl.operand_values[1:])
    if len(idx) == 4 and not _image(idx[0], space) or \
            (idx[-3] is not c if c is not None else constant_int(idx[-3]) != 0):
        return None
    row, col = affine_of(idx[-2]), affine_of(idx[-1])
    if set(row.terms) != {space["i"], a} - {None} or set(col.terms) != {space["j"], b} - {None}:
        return None
    sh, sw = (t.terms[v] if v is not None else 1 for t, v in ((row, space["i"]),
                                                              (col, space["j"])))
    dh = row.terms[a] if a is not None else 1
    dw = col.terms[b] if b is not None else 1
    if min(sh, dh, sw, dw) < 1 or row.const < 0 or col.const < 0:
        return None
    return (sh, sw), (dh, dw), (row.const, col.const)


def match_nest(red: loop.ForOp, top: set[int]) -> NestConv | None:
    """The convolution whose reduction nest is ``red`` (module docstring), else None."""
    found = _reduction(red)
    loops = _enclosing(red, top)
    if found is None or not loops or len(loops) > 4:
        return None
    taps, p, q = found
    for wl, xl in ((p, q), (q, p)):
        w, x = wl.op.operand_values[0], xl.op.operand_values[0]  # type: ignore[attr-defined]
        widx = list(wl.op.operand_values[1:])  # type: ignore[attr-defined]
        xidx = list(xl.op.operand_values[1:])  # type: ignore[attr-defined]
        if len(widx) != 4 or len(xidx) not in (3, 4):
            continue
        names = _names(loops, widx[0], xidx[0] if len(xidx) == 4 else None, *xidx[-2:])
        wt = _buffer(w, 4)
        xt = _x_type(x, names["n"] is not None) if names is not None else None
        if wt is None or xt is None or wt.element != xt.element or \
                red.inits[0].type != wt.element or not _plane(widx[0], names):  # type: ignore[arg-type]
            continue
        axes = _tap_axes(taps, widx[1:], wt)
        if axes is None:
            continue
        geo = _geometry(_taps(xl.op, axes, names), loops, names, wt, xt)  # type: ignore[arg-type]
        if geo is not None and not _writes_to(loops[0], {base_buffer(x), base_buffer(w)}):
            return NestConv(red, loops, x, w, *geo, names)  # type: ignore[arg-type]
    return None


def _plane(v: Value, names: Names) -> bool:
    """``v`` indexes w's outputs as the output loop does: its variable, or 0 (w of one
    output, ``_geometry``) when there is none."""
    return v is names["o"] if names["o"] is not None else constant_int(v) == 0


Taps = tuple[tuple[int, int], tuple[int, int], tuple[int, int]]


def _geometry(taps: Taps | None, loops: list[loop.ForOp], names: Names, wt: MemRefType,
              xt: MemRefType) -> tuple[ConvGeometry, tuple[int, int]] | None:
    """The geometry of (strides, dilations, origin) over the output loops, when the
    trip counts are ``w``'s outputs and the output's size (an output row or column
    without a loop: the window's extent of x's rows or columns, one output)."""
    if taps is None:
        return None
    stride, dilation, (r0, q0) = taps
    n, o_trips, oh, ow = _trips(loops, names)
    o, c, kh, kw = wt.shape
    if o_trips != o or xt.shape[-3] != c or names["n"] is not None and xt.shape[0] != n:
        return None
    h, wd = xt.shape[-2] - r0, xt.shape[-1] - q0
    if names["i"] is None:  # one output row: the rows its window reads
        h = min(h, (kh - 1) * dilation[0] + 1)
    if names["j"] is None:
        wd = min(wd, (kw - 1) * dilation[1] + 1)
    g = ConvGeometry(n, c, h, wd, o, kh, kw, stride, dilation,  # type: ignore[arg-type]
                     dtype=wt.element.name)
    return (g, (r0, q0)) if (g.oh, g.ow) == (oh, ow) and min(g.oh, g.ow) > 0 else None


def _window_sum(red: Operation) -> list[mem.SubviewOp] | None:
    """A fused ``np.sum(x[..., window] * w[o])``: the two views it snapshots."""
    if not isinstance(red, FusionGroupOp) or len(red.result_values) != 1 or \
            not isinstance(red.result_values[0].type, ScalarType) or len(red.inputs) != 2:
        return None
    block = red.body.blocks[0]
    ops = [o for o in block.ops if not isinstance(o, FusionYieldOp)]
    if len(ops) != 2 or type(ops[0]) is not arith.MulOp or \
            type(ops[1]) is not tensor.SumOp or \
            ops[1].operand_values[0] is not ops[0].result_values[0] or \
            set(ops[0].operand_values) != set(block.args) or \
            block.terminator.operand_values[0] is not ops[1].result_values[0]:  # type: ignore[union-attr]
        return None
    views = []
    for v in red.inputs:
        src = v.op.operand_values[0] if isinstance(v, OpResult) and \
            isinstance(v.op, mem.ToTensorOp) else None
        if not (isinstance(src, OpResult) and isinstance(src.op, mem.SubviewOp)):
            return None
        views.append(src.op)
    return views


def _ints(vs: list[Value]) -> list[int | None]:
    """The values' constants, folded (``2*j + 3 - 2*j``: a strided window's size)."""
    forms = [affine_of(v) for v in vs]
    return [None if f.terms else f.const for f in forms]


def _slice_taps(xv: mem.SubviewOp, names: Names, window: tuple[int, ...]) -> Taps | None:
    """(strides, dilations, origin) of ``x[[n,] :, r0 + sh*i : ... : dh, q0 + sw*j :
    ... : dw]``, a (C, KH, KW) window, else None."""
    offs, sizes, steps = xv.parts()
    lead = len(offs) - 3
    drop = tuple(xv.attributes.get("drop") or ())
    if drop != ((0,) if lead else ()) or lead and (not _image(offs[0], names) or
                                                   _ints(sizes[:1] + steps[:1]) != [1, 1]):
        return None
    if _ints(sizes[lead:]) != list(window) or constant_int(offs[lead]) != 0 or \
            constant_int(steps[lead]) != 1:
        return None
    row, col = affine_of(offs[-2]), affine_of(offs[-1])
    dh, dw = constant_int(steps[-2]), constant_int(steps[-1])
    if set(row.terms) != {names["i"]} - {None} or set(col.terms) != {names["j"]} - {None} or \
            dh is None or dw is None:
        return None
    sh, sw = (t.terms[v] if v is not None else 1 for t, v in ((row, names["i"]),
                                                              (col, names["j"])))
    if min(sh, sw, dh, dw) < 1 or row.const < 0 or col.const < 0:
        return None
    return (sh, sw), (dh, dw), (row.const, col.const)


def _w_plane(wv: mem.SubviewOp, names: Names, wt: MemRefType) -> bool:
    """``wv`` is ``w[o]``: offsets (o, 0, 0, 0), all of the rest, unit steps."""
    offs, sizes, steps = wv.parts()
    return tuple(wv.attributes.get("drop") or ()) == (0,) and _plane(offs[0], names) and \
        _ints(offs[1:]) == [0, 0, 0] and _ints(sizes) == [1, *wt.shape[1:]] and \
        _ints(steps) == [1, 1, 1, 1]


def match_window_sum(red: Operation, top: set[int]) -> NestConv | None:
    """The convolution ``np.sum(x[:, i:i+KH, j:j+KW] * w[o])`` in an output nest."""
    views, loops = _window_sum(red), _enclosing(red, top)
    if views is None or not loops or len(loops) > 4:
        return None
    for wv, xv in (views, views[::-1]):
        w, x = wv.source, xv.source
        offs = xv.parts()[0]
        names = _names(loops, wv.parts()[0][0], offs[0] if len(offs) == 4 else None,
                       *offs[-2:]) if len(offs) in (3, 4) else None
        wt = _buffer(w, 4)
        xt = _x_type(x, names["n"] is not None) if names is not None else None
        if wt is None or xt is None or wt.element != xt.element or \
                red.result_values[0].type != wt.element or not _w_plane(wv, names, wt):  # type: ignore[arg-type]
            continue
        geo = _geometry(_slice_taps(xv, names, wt.shape[1:]), loops, names, wt, xt)  # type: ignore[arg-type]
        if geo is not None and not _writes_to(loops[0], {base_buffer(x), base_buffer(w)}):
            return NestConv(red, loops, x, w, *geo, names)  # type: ignore[arg-type]
    return None


__all__ = ["NestConv", "match_nest", "match_window_sum"]
