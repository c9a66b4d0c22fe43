"""Convolutions written with loops, on the cube unit: the stencil's sum as an im2col matmul.

A multi-channel convolution written with loops (``acc += x[c, i + a, j + b] * w[o, c, a,
b]`` in a nest over ``(o, i, j)``, or ``np.sum(x[:, i:i+3, j:j+3] * w[o])``, with a batch
loop ``for n`` around it) reaches the AscendC backend, after ``batch-loops``, as a chain
of tensor ``add``s whose terms are products of a *window* (a snapshot of one channel of
``x``, shifted by the tap, broadcast over the output planes: what ``stencil-windows``
calls a fixed plane) and a *per-plane weight* (``w[:, c, a, b]`` broadcast over each
plane).  As a stencil kernel every tap is a ``Gather``, a multiply and an add on the
vector unit; with ``C * KH * KW`` in the hundreds the cube does the same sum 10-100x
faster.  :func:`rewrite_loop_convs` (run before ``rewrite_cube_matmuls``) recognizes the
chain by what its terms read, checks that they are exactly one convolution (every
``(c, a, b)`` of ``w``'s shape once, each window ``x``'s channel ``c`` at row ``r0 + a *
dh`` and column ``q0 + b * dw`` with one step ``(sh, sw)``), and, when the estimate says
the cube pays (:func:`cube_pays`), replaces the chain by what ``pyasc.ops.conv2d``
builds: a loop of window copies filling a column matrix ``(N, 1, C, KH, KW, OH, OW)``
and a ``tensor.matmul`` of ``w`` reshaped ``(1, O, C*KH*KW)`` with it, reshaped back to
the space.  The chain's other leaves (the initial value: ``0.0`` is dropped, a bias
``acc = b[o]``, any array of the space) are added to the product, and the chain's users
(``max(acc, 0)``, a cast, the store) are untouched: so the existing cube routes take it
(``conv_match`` sees the im2col in L1, ``mix_plan`` the bias/ReLU epilogue).

The cube sums the taps in its own order, in float32 (float16 operands: float32
accumulation, one rounding at the end; float32 operands: the cube's float path), not
in the loop's order: the result equals ``interpret`` within the tolerances of
``pyasc.ops.conv2d`` (docs/ascendc-backend.md).  ``sum_lanes=False`` (the option that
keeps a loop's summation order) keeps the stencil, as does
``PYASC_DISABLE_PASSES=loop-conv-cube``.  Static shapes only; ``x`` and ``w`` one
float16 or float32 dtype, C-contiguous buffers nothing writes between the snapshots and
the sum.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.backend.ascendc.conv_plan import ConvGeometry
from pyasc.backend.ascendc.loop_conv_cost import cube_pays
from pyasc.backend.ascendc.soc import SoC
from pyasc.ir.builder import Builder
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.loopgen import view_type
from pyasc.ir.passes.window_values import static_int
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType, contiguous_strides, index

PASS_NAME = "loop-conv-cube"
OPTION = "sum_lanes"          # False: a loop's sum keeps its order (the stencil kernel)
MIN_TERMS = 4                 # fewer taps: not a convolution worth a matmul


@dataclass(frozen=True)
class Tap:
    """One product term: the window of channel ``c`` at (``row``, ``col``) with steps
    ``steps`` times ``w[:, c, a, b]``."""

    c: int
    a: int
    b: int
    row: int
    col: int
    steps: tuple[int, int]


@dataclass
class LoopConv:
    """A recognized chain: ``x`` (C, H, W) or (N, C, H, W), ``w`` (O, C, KH, KW), the
    geometry, the chain's root op, its product ops and its other leaves."""

    x: Value
    w: Value
    geo: ConvGeometry
    origin: tuple[int, int]     # (r0, q0): where tap (0, 0)'s window starts
    root: Operation
    rest: list[Value]
    first: Operation            # the earliest snapshot the chain reads


def _chain(root: Operation) -> tuple[list[Value], list[Operation]]:
    """The leaves of the add tree at ``root`` (adds of its type used once, inside)."""
    leaves, adds, todo = [], [root], list(root.operand_values)
    t = root.result_values[0].type
    while todo:
        v = todo.pop()
        if isinstance(v, OpResult) and type(v.op) is arith.AddOp and v.type == t and \
                len(v.uses) == 1 and v.op.parent is root.parent:
            adds.append(v.op)
            todo.extend(v.op.operand_values)
        else:
            leaves.append(v)
    return leaves, adds


def _snapshot_of(v: Value, kinds: tuple[type, ...]) -> tuple[Operation, mem.SubviewOp] | None:
    """``(to_tensor, subview)`` when ``v`` is ``broadcast(reshape(to_tensor(subview)))``."""
    for kind in kinds:
        if not (isinstance(v, OpResult) and isinstance(v.op, kind)):
            return None
        v = v.op.operand_values[0]
    if not (isinstance(v, OpResult) and isinstance(v.op, mem.ToTensorOp)):
        return None
    src = v.op.operand_values[0]
    if isinstance(src, OpResult) and isinstance(src.op, mem.SubviewOp):
        return v.op, src.op
    return None


_VIEW = (tensor.BroadcastOp, tensor.ReshapeOp)


def _static_parts(view: mem.SubviewOp) -> tuple[list[int], list[int], list[int]] | None:
    parts = [[static_int(v) for v in p] for p in view.parts()]
    return None if any(v is None for p in parts for v in p) else parts  # type: ignore[return-value]


_Weight = tuple[Operation, Value, tuple[int, int, int]]
_Window = tuple[Operation, Value, int, int, int, tuple[int, int]]


def _weight(v: Value, space: tuple[int, ...]) -> _Weight | None:
    """``w[:, c, a, b]`` broadcast over the planes: (snapshot, w, (c, a, b))."""
    found = _snapshot_of(v, _VIEW)
    if found is None:
        return None
    snap, view = found
    w, parts = view.source, _static_parts(view)
    wt = w.type
    if parts is None or not isinstance(wt, MemRefType) or wt.rank != 4 or \
            not wt.is_contiguous or tuple(view.attributes.get("drop") or ()) != (1, 2, 3):
        return None
    offs, sizes, steps = parts
    o = space[-3]
    if offs[0] != 0 or sizes != [o, 1, 1, 1] or steps[0] != 1 or wt.shape[0] != o:
        return None
    return snap, w, (offs[1], offs[2], offs[3])


def _window(v: Value, space: tuple[int, ...]) -> _Window | None:
    """One channel of ``x`` at a constant row/column, broadcast over the planes:
    (snapshot, x, c, row, col, steps)."""
    found = _snapshot_of(v, _VIEW)
    if found is None:
        return None
    snap, view = found
    x, parts = view.source, _static_parts(view)
    xt = x.type
    if parts is None or not isinstance(xt, MemRefType) or not xt.is_contiguous or \
            xt.rank not in (3, 4):
        return None
    offs, sizes, steps = parts
    drop = tuple(view.attributes.get("drop") or ())
    if len(space) == 4:  # every image: x[:, c, ...]
        ok = xt.rank == 4 and drop == (1,) and (offs[0], sizes[0], steps[0]) == (0, space[0], 1)
    elif xt.rank == 4:   # the one image of an (1, C, H, W) x: x[0, c, ...]
        ok = drop == (0, 1) and xt.shape[0] == 1
    else:
        ok = drop == (0,)
    if not ok:
        return None
    c, r, q = offs[-3:]
    if sizes[-3:] != [1, *space[-2:]]:
        return None
    return snap, x, c, r, q, (steps[-2], steps[-1])


def _term(v: Value, space: tuple[int, ...]) -> tuple[Tap, Value, Value, list[Operation]] | None:
    """A product leaf as a tap: (tap, x, w, its snapshots), else None."""
    if not (isinstance(v, OpResult) and type(v.op) is arith.MulOp and len(v.uses) == 1):
        return None
    p, q = v.op.operand_values
    for win, wgt in ((p, q), (q, p)):
        xw, ww = _window(win, space), _weight(wgt, space)
        if xw is not None and ww is not None and xw[2] == ww[2][0]:
            snap, x, c, row, col, steps = xw
            return Tap(c, *ww[2][1:], row, col, steps), x, ww[1], [snap, ww[0]]
    return None


def _geometry(taps: list[Tap], x: Value, w: Value, space: tuple[int, ...]
              ) -> tuple[ConvGeometry, tuple[int, int]] | None:
    """The convolution the taps are (each ``(c, a, b)`` once, one step, windows at
    ``origin + (a * dh, b * dw)``), else None."""
    o, c, kh, kw = w.type.shape  # type: ignore[attr-defined]
    if len(taps) != c * kh * kw or len({(t.c, t.a, t.b) for t in taps}) != len(taps) or \
            len({t.steps for t in taps}) != 1:
        return None
    at = {(t.c, t.a, t.b): t for t in taps}
    r0, q0 = at[(0, 0, 0)].row, at[(0, 0, 0)].col
    dh = at[(0, 1, 0)].row - r0 if kh > 1 else 1
    dw = at[(0, 0, 1)].col - q0 if kw > 1 else 1
    if dh < 1 or dw < 1 or any(t.row != r0 + t.a * dh or t.col != q0 + t.b * dw for t in taps):
        return None
    xs = x.type.shape  # type: ignore[attr-defined]
    n = xs[0] if len(xs) == 4 else 1
    h, wd = xs[-2] - r0, xs[-1] - q0
    dtype = x.type.element.name  # type: ignore[attr-defined]
    g = ConvGeometry(n, c, h, wd, o, kh, kw, taps[0].steps, (dh, dw), dtype=dtype)
    return (g, (r0, q0)) if (g.oh, g.ow) == tuple(space[-2:]) and \
        xs[-3] == c else None


def match_loop_conv(root: Operation) -> LoopConv | None:
    """The convolution the add tree at ``root`` sums (module docstring), else None."""
    t = root.result_values[0].type
    if not isinstance(t, TensorType) or t.rank not in (3, 4) or DYN in t.shape or \
            t.element.name not in ("f16", "f32"):
        return None
    leaves, _ = _chain(root)
    taps, rest, xs, ws, snaps = [], [], set(), set(), []
    for v in leaves:
        found = _term(v, t.shape)
        if found is None:
            rest.append(v)
            continue
        taps.append(found[0])
        xs.add(found[1])
        ws.add(found[2])
        snaps.extend(found[3])
    if len(taps) < MIN_TERMS or len(xs) != 1 or len(ws) != 1:
        return None
    x, w = xs.pop(), ws.pop()
    if x.type.element != t.element or w.type.element != t.element:  # type: ignore[attr-defined]
        return None
    geo = _geometry(taps, x, w, t.shape)
    first = _unwritten(snaps, root)
    if geo is None or first is None:
        return None
    rest = [v for v in rest if static_float(v) != 0.0]
    return LoopConv(x, w, geo[0], geo[1], root, rest, first)


def static_float(v: Value) -> float | None:
    """``v``'s value when it is a scalar constant, else None."""
    if isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp) and \
            isinstance(v.type, ScalarType):
        return v.op.attributes["value"]
    return None


def _unwritten(snaps: list[Operation], root: Operation) -> Operation | None:
    """The earliest snapshot when every one is in ``root``'s block before it and nothing
    in between writes memory (the copies read ``x`` and ``w`` at ``root``), else None."""
    block = root.parent
    ops = block.ops if block is not None else []
    where = {id(op): k for k, op in enumerate(ops)}
    if any(id(s) not in where for s in snaps) or id(root) not in where:
        return None
    start, end = min(where[id(s)] for s in snaps), where[id(root)]
    if any(op.has_trait("writes") or op.region_list and not op.has_trait("pure")
           for op in ops[start:end]):
        return None
    return ops[start]


class ConvEmitter:
    """Emits, before ``at``, the im2col copies of ``x`` for ``geo`` (windows from
    ``origin``) and the matmul of ``w`` with them (``pyasc.ops.conv2d``'s IR)."""

    def __init__(self, x: Value, w: Value, geo: ConvGeometry, origin: tuple[int, int],
                 at: Operation) -> None:
        self.x, self.w, self.geo, self.origin = x, w, geo, origin
        self.b = Builder.before(at)

    def const(self, v: int) -> Value:
        return self.b.insert(arith.ConstantOp.new(v, index)).result

    def reshape(self, v: Value, shape: tuple[int, ...]) -> Value:
        t = v.type
        assert isinstance(t, MemRefType)
        return self.b.insert(mem.ReshapeOp([v], [MemRefType(shape, t.element)])).result

    def snapshot(self, v: Value) -> Value:
        t = v.type
        assert isinstance(t, MemRefType)
        return self.b.insert(mem.ToTensorOp([v], [t.tensor_type()])).result

    def view(self, src: Value, offs: list[Value], sizes: tuple[int, ...],
             steps: tuple[int, ...], drop: tuple[int, ...] = ()) -> Value:
        t = src.type
        assert isinstance(t, MemRefType)
        base = t.strides or contiguous_strides(t.shape)
        strides = [s * k for s, k in zip(base, steps, strict=True)]
        kept = [a for a in range(len(sizes)) if a not in drop]
        rt = view_type([sizes[a] for a in kept], t.element, [strides[a] for a in kept])
        operands = [src, *offs, *(self.const(s) for s in sizes), *(self.const(s) for s in steps)]
        attrs = {"drop": drop} if drop else {}
        return self.b.insert(mem.SubviewOp(operands, [rt], attrs)).result

    def columns(self) -> Value:
        """The column matrix (N, 1, C, KH, KW, OH, OW), filled by a loop over the taps."""
        g, (r0, q0) = self.geo, self.origin
        (sh, sw), (dh, dw) = g.stride, g.dilation
        xt = self.x.type
        assert isinstance(xt, MemRefType)
        shape = (g.n, 1, g.c, g.fh, g.fw, g.oh, g.ow)
        cols = self.b.insert(mem.AllocOp([], [MemRefType(shape, xt.element)])).result
        zero, one, kh, kw = (self.const(v) for v in (0, 1, g.fh, g.fw))
        outer = self.b.insert(loop.ForOp.empty(zero, kh, one))
        outer_b = Builder.at_end(outer.body.blocks[0], self.b.loc)
        inner = outer_b.insert(loop.ForOp.empty(zero, kw, one))
        outer_b.insert(loop.YieldOp([]))
        saved, self.b = self.b, Builder.at_end(inner.body.blocks[0], self.b.loc)
        a, b = outer.induction_var, inner.induction_var
        # a (C, H, W) x as one image, viewed inside the nest (a copy loop's values
        # from outside are constants and whole arrays only)
        x4 = self.x if xt.rank == 4 else self.reshape(self.x, (1, *xt.shape))
        row = self.affine(a, dh, r0)
        col = self.affine(b, dw, q0)
        src = self.view(x4, [zero, zero, row, col], (g.n, g.c, g.oh, g.ow), (1, 1, sh, sw))
        dst = self.view(cols, [zero, zero, zero, a, b, zero, zero],
                        (g.n, 1, g.c, 1, 1, g.oh, g.ow), (1,) * 7, (1, 3, 4))
        self.b.insert(mem.WriteOp([self.snapshot(src), dst], []))
        self.b.insert(loop.YieldOp([]))
        self.b = saved
        return cols

    def affine(self, i: Value, scale: int, offset: int) -> Value:
        v = i
        if scale != 1:
            v = self.b.insert(arith.MulOp([v, self.const(scale)], [index])).result
        if offset:
            v = self.b.insert(arith.AddOp([v, self.const(offset)], [index])).result
        return v

    def product(self, rt: TensorType) -> Value:
        """``w @ cols`` reshaped to ``rt`` ((O, OH, OW) or (N, O, OH, OW))."""
        g = self.geo
        k, p = g.c * g.fh * g.fw, g.oh * g.ow
        cols = self.snapshot(self.reshape(self.columns(), (g.n, 1, k, p)))
        wm = self.snapshot(self.reshape(self.w, (1, g.o, k)))
        y = self.b.insert(tensor.MatmulOp.new(wm, cols)).result
        return self.b.insert(tensor.ReshapeOp([y], [rt])).result


def _replace(m: LoopConv) -> Value:
    """The product in the chain's shape, plus the chain's other leaves."""
    rt = m.root.result_values[0].type
    assert isinstance(rt, TensorType)
    e = ConvEmitter(m.x, m.w, m.geo, m.origin, m.root)
    v = e.product(rt)
    for leaf in m.rest:
        v = e.b.insert(arith.AddOp([v, leaf], [rt])).result
    return v


def rewrite_loop_convs(fn: FuncOp, soc: SoC, keep_order: bool = False) -> int:
    """Replace every loop convolution in ``fn``'s entry block that the cube pays for by
    an im2col and a matmul (module docstring); ``keep_order``: none (``sum_lanes=False``).
    Returns how many it replaced."""
    if soc.cube is None or keep_order:
        return 0
    done = 0
    for op in list(fn.entry.ops):
        if type(op) is not arith.AddOp or op.parent is None:
            continue
        r = op.result_values[0]
        if any(type(u) is arith.AddOp and u.result_values[0].type == r.type
               for u, _ in r.uses):
            continue  # not the root of its chain
        m = match_loop_conv(op)
        if m is None or not cube_pays(m.geo, soc):
            continue
        r.replace_all_uses_with(_replace(m))
        _erase_dead(op)
        done += 1
    return done


def _erase_dead(root: Operation) -> None:
    """Erase ``root`` and the pure/snapshot ops only it kept alive."""
    todo = [root]
    while todo:
        op = todo.pop()
        if op.parent is None or any(r.uses for r in op.result_values):
            continue
        if not (op is root or op.has_trait("pure") or isinstance(op, mem.ToTensorOp)):
            continue
        producers = [v.op for v in op.operand_values if isinstance(v, OpResult)]
        op.erase()
        todo.extend(producers)


__all__ = ["OPTION", "PASS_NAME", "ConvEmitter", "LoopConv", "match_loop_conv",
           "rewrite_loop_convs"]
