"""Host side of a pool kernel: window tables, the run-time checks, the launch.

The window bounds of a pooling loop are scalar index arithmetic of the nest
(``pool_loops``).  The host re-computes them, as the user wrote them, once per output
row and once per output column: loops of host IR fill an ``(NI, 2)`` table of row
bounds ``[r0, r1)`` and an ``(NJ, 2)`` table of column bounds (int32), and, when the
result is divided or multiplied by a scalar of ``(i, j)`` (``np.mean``'s count), an
``(NI, NJ)`` table of it.  The same loops carry the smallest and largest bound and
window size, from which the host decides whether the kernel applies: unit steps, whole
leading axes, windows inside the input and not empty, output indices inside ``out``, and
the row and column tables within the kernel's UB capacities.  When they hold it launches
the pool kernel, else the nest as a scalar kernel (which raises what numpy would).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.pool_kernel import IDX_CAP, ROW_CAP, PoolKernel
from pyasc.backend.ascendc.pool_loops import PoolLoop
from pyasc.backend.ascendc.pool_match import outer_value
from pyasc.backend.ascendc.pool_taps import TapLoop
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith, mem
from pyasc.ir.ops.loop import ForOp, IfOp, YieldOp
from pyasc.ir.types import TensorType, i1, i32

Cmp = tuple[str, Value, Value | int]
MIN_BLOCK_ROWS = 4


class _Clones:
    """Re-computes nest values on the host, one map per loop level."""

    def __init__(self, p: PoolLoop, env: dict[Value, Value]) -> None:
        self.p, self.env = p, env
        self.inside = {r for op in p.top.walk() for r in op.result_values}

    def value(self, v: Value, hb: HostBuilder, vmap: dict[Value, Value]) -> Value:
        v = outer_value(v)
        if v in vmap:
            return vmap[v]
        if v not in self.inside:
            return self.env[v]
        assert isinstance(v, OpResult)
        op: Operation = v.op
        operands = [self.value(o, hb, vmap) for o in op.operand_values]
        new = hb.insert(type(op)(operands, [r.type for r in op.result_values],
                                 dict(op.attributes), (), op.loc))
        vmap.update(zip(op.result_values, new.result_values, strict=True))
        return vmap[v]


def _all(hb: HostBuilder, conds: Sequence[Value]) -> Value:
    acc = hb.const(True, i1)
    for c in conds:
        acc = hb.binary(arith.AndOp, acc, c)
    return acc


Bounds = Callable[[HostBuilder, Value], tuple[Value, Value]]


def _nest_bounds(clones: _Clones, iv: Value, lo: Value,
                 bounds: tuple[Value, Value]) -> Bounds:
    """Window ``k``'s (start, size): the nest's values at iteration ``lo + k``."""
    def at(body: HostBuilder, k: Value) -> tuple[Value, Value]:
        vmap = {iv: body.add(lo, k)}
        return clones.value(bounds[0], body, vmap), clones.value(bounds[1], body, vmap)
    return at


def _table(hb: HostBuilder, n: Value, bounds: Bounds) -> tuple[Value, list[Value]]:
    """``(n, 2)`` int32 ``[start, end)`` of windows ``0 <= k < n``, and the smallest
    start, largest end, smallest and largest size over them (carried)."""
    tab = hb.alloc((-1, 2), i32, [n, hb.const(2)])
    big, small = hb.const(1 << 40), hb.const(-(1 << 40))
    f = hb.insert(ForOp.empty(hb.const(0), n, hb.const(1), [big, small, big, small], loc=hb.b.loc))
    body = HostBuilder(f.body.blocks[0], hb.b.loc)
    k, *acc = f.body.blocks[0].args
    start, size = bounds(body, k)
    end = body.add(start, size)
    for col, v in ((0, start), (1, end)):
        cast = body.insert(arith.CastOp.new(v, i32)).result
        body.insert(mem.StoreOp([cast, tab, k, body.const(col)], []))
    nxt = [body.min(acc[0], start), body.max(acc[1], end), body.min(acc[2], size),
           body.max(acc[3], size)]
    body.insert(YieldOp(nxt))
    return tab, list(f.result_values)


def _scale_table(hb: HostBuilder, clones: _Clones, p: PoolLoop, lo: tuple[Value, Value],
                 n: tuple[Value, Value]) -> Value:
    """``(NI, NJ)`` table of the post-operation's scalar (in its type)."""
    assert p.scale is not None
    tab = hb.alloc((-1, -1), p.red_dtype, list(n))
    fi = hb.insert(ForOp.empty(hb.const(0), n[0], hb.const(1), loc=hb.b.loc))
    bi = HostBuilder(fi.body.blocks[0], hb.b.loc)
    fj = bi.insert(ForOp.empty(bi.const(0), n[1], bi.const(1), loc=hb.b.loc))
    bj = HostBuilder(fj.body.blocks[0], hb.b.loc)
    ki, kj = fi.induction_var, fj.induction_var
    vmap = {p.ivs[0]: bj.add(lo[0], ki), p.ivs[1]: bj.add(lo[1], kj)}
    s = clones.value(p.scale, bj, vmap)
    if s.type != p.red_dtype:
        s = bj.insert(arith.CastOp.new(s, p.red_dtype)).result
    bj.insert(mem.StoreOp([s, tab, ki, kj], []))
    bj.insert(YieldOp([]))
    bi.insert(YieldOp([]))
    return tab


def _capacity(hb: HostBuilder, x: Value, rank: int, stats: list[list[Value]],
              nj: Value, kw: Value) -> list[Cmp]:
    """Windows inside ``x`` and not empty; rows, output rows and the ``kw`` taps'
    offsets within the kernel's UB capacities."""
    conds: list[Cmp] = []
    for a, st in enumerate(stats):
        conds += [("ge", st[0], 0), ("le", st[1], hb.dim(x, rank - 2 + a)), ("ge", st[2], 1)]
    width = hb.dim(x, rank - 1)
    return conds + [("le", hb.round_up(width, 16), ROW_CAP), ("le", hb.round_up(nj, 16), ROW_CAP),
                    ("le", hb.mul(kw, hb.round_up(nj, 16)), IDX_CAP)]


def _conditions(hb: HostBuilder, clones: _Clones, p: PoolLoop, x: Value, out: Value,
                ranges: list[tuple[Value, Value]], stats: list[list[Value]],
                ni_nj: tuple[Value, Value]) -> Value:
    """True when the kernel computes what the loop would (module docstring)."""
    top: dict[Value, Value] = {}
    conds: list[Cmp] = []
    for s in p.steps:
        conds.append(("eq", clones.value(s, hb, top), 1))
    for axis, (off, size) in enumerate(p.lead):
        conds.append(("eq", hb.dim(x, axis), hb.dim(out, axis)))
        if axis in p.loops:  # x[c, ...] and out[c, ...]: a loop over the whole axis
            lp = p.loops[axis]
            conds += [("eq", clones.value(size, hb, top), 1),
                      ("eq", env_or(clones, hb, lp.lower), 0),
                      ("eq", env_or(clones, hb, lp.upper), hb.dim(x, axis))]
            continue
        conds += [("eq", clones.value(off, hb, top), 0),
                  ("eq", clones.value(size, hb, top), hb.dim(x, axis))]
    for axis, (off, size, step) in enumerate(p.out_lead):
        if axis in p.loops:
            conds.append(("eq", clones.value(size, hb, top), 1))
            continue
        conds += [("eq", clones.value(off, hb, top), 0),
                  ("eq", clones.value(size, hb, top), hb.dim(out, axis)),
                  ("eq", clones.value(step, hb, top), 1)]
    r = p.rank
    for a, (lo, hi) in enumerate(ranges):
        conds += [("ge", lo, 0), ("le", hi, hb.dim(out, r - 2 + a))]
    conds += _capacity(hb, x, r, stats, ni_nj[1], stats[1][3])
    return _all(hb, [hb.cmp(*c) for c in conds])


def launch_pool(hb: HostBuilder, k: PoolKernel, env: dict[Value, Value], cores: int,
                scalar: Callable[[HostBuilder], None]) -> None:
    """Emit the tables, the checks and ``if ok: pool kernel else: scalar(hb)``."""
    p = k.loop
    clones = _Clones(p, env)
    x, out = env[p.src], env[p.dst]
    ranges = [(env_or(clones, hb, f.lower), env_or(clones, hb, f.upper)) for f in (p.nest, p.inner)]
    ns = [hb.max(hb.binary(arith.SubOp, hi, lo), 0) for lo, hi in ranges]
    rows, rst = _table(hb, ns[0], _nest_bounds(clones, p.ivs[0], ranges[0][0], p.row))
    cols, cst = _table(hb, ns[1], _nest_bounds(clones, p.ivs[1], ranges[1][0], p.col))
    ok = _conditions(hb, clones, p, x, out, ranges, [rst, cst], (ns[0], ns[1]))
    branch = hb.insert(IfOp.empty(ok, [], p.loc))
    then = HostBuilder(branch.then_region.blocks[0], p.loc)
    tabs = [rows, cols]
    if p.scale is not None:  # a divisor or factor other than the window's count
        tabs.append(_scale_table(then, clones, p, (ranges[0][0], ranges[1][0]), (ns[0], ns[1])))
    _launch(then, k, x, out, tabs, (ranges[0][0], ranges[1][0]), (ns[0], ns[1]), cst[3], cores)
    then.insert(YieldOp([]))
    other = HostBuilder(branch.else_region.blocks[0], p.loc)
    scalar(other)
    other.insert(YieldOp([]))


def _launch(hb: HostBuilder, k: PoolKernel, x: Value, out: Value, tabs: list[Value],
            lo: tuple[Value, Value], ns: tuple[Value, Value], kw: Value, cores: int,
            steps: tuple[Value, Value] | None = None) -> None:
    """The kernel's launch: output rows ``lo[0] + [0, ns[0])`` (columns likewise) of
    ``out`` from the windows of ``x`` the tables give, every ``steps`` row/column of
    them (the dilation; 1 by default) and ``kw`` taps along a row."""
    r = k.loop.rank
    planes = hb.product([hb.dim(x, a) for a in range(r - 2)])
    units = hb.mul(planes, ns[0])
    # each block takes at least ~4 output rows of a plane: overlapping windows re-read
    # their shared input rows once per block
    blocks = hb.min(hb.min(units, cores), hb.mul(planes, hb.max(
        hb.binary(arith.FloorDivOp, ns[0], hb.const(MIN_BLOCK_ROWS)), 1)))
    args = [x, out, *tabs, planes, hb.dim(x, r - 2), hb.dim(x, r - 1), hb.dim(out, r - 2),
            hb.dim(out, r - 1), lo[0], lo[1], ns[0], ns[1], kw,
            *(steps or (hb.const(1), hb.const(1)))]
    hb.launch(k.name, blocks, args, [1])


def _taps_along(hb: HostBuilder, clones: _Clones, t: TapLoop, axis: int
                ) -> tuple[Value, Value, list[Cmp]]:
    """The view's offset and size along ``axis`` (-2 rows, -1 columns) at tap 0, the
    dilation (offset step between taps) and the checks that the offsets are affine in
    the tap with a positive step and the sizes equal."""
    n, iv = t.taps[axis], t.ivs[axis]
    other = t.ivs[axis + 1] if axis == -2 else t.ivs[0]
    off, size, _ = (part[axis] for part in t.view.parts())  # type: ignore[attr-defined]
    offs, sizes = [], []
    for k in range(n):
        vmap = {iv: hb.const(k), other: hb.const(0)}
        offs.append(clones.value(off, hb, vmap))
        sizes.append(clones.value(size, hb, vmap))
    step = hb.binary(arith.SubOp, offs[1], offs[0]) if n > 1 else hb.const(1)
    conds: list[Cmp] = [("ge", step, 1)]
    for k in range(1, n):
        conds += [("eq", sizes[k], sizes[0]),
                  ("eq", offs[k], hb.add(offs[0], hb.mul(step, hb.const(k))))]
    return offs[0], step, conds + [("ge", sizes[0], 0)]


def launch_taps(hb: HostBuilder, k: PoolKernel, t: TapLoop, env: dict[Value, Value],
                cores: int, scalar: Callable[[HostBuilder], list[Value]]) -> list[Value]:
    """A tap nest (``pool_taps``): output ``(i, j)`` is the window at rows ``c + i * s``
    (``kh`` of them, ``d`` apart) and columns likewise; checks the taps are such windows
    of ``x`` (whole leading axes; the carried form's first snapshot is tap ``(0, 0)``,
    the in-place form's buffer has the output's shape); returns the nest's array result
    (the carried form) or nothing (the buffer is written)."""
    clones = _Clones(t, env)  # type: ignore[arg-type]
    x = env[t.src]
    zero = {t.ivs[0]: hb.const(0), t.ivs[1]: hb.const(0)}
    offs, sizes, steps = (
        [clones.value(v, hb, dict(zero)) for v in part] for part in t.view.parts())  # type: ignore[attr-defined]
    conds: list[Cmp] = []
    if t.init is not None:
        first = [env[v] for part in t.init.parts() for v in part]  # type: ignore[attr-defined]
        conds += [("eq", a, b) for a, b in zip([*offs, *sizes, *steps], first, strict=True)]
    for axis in range(t.rank - 2):
        conds += [("eq", offs[axis], 0), ("eq", sizes[axis], hb.dim(x, axis)),
                  ("eq", steps[axis], 1)]
    if t.acc is not None:
        conds += [("eq", hb.dim(env[t.acc], a), s) for a, s in enumerate(
            [hb.dim(x, a) for a in range(t.rank - 2)] + sizes[-2:])]
    tabs: list[Value] = []
    if t.scale is not None:  # the divisor of every output: one row per output row
        tabs = [env[t.scale]]
        conds += [("eq", hb.dim(tabs[0], a), sizes[a - 2]) for a in range(2)]
    (r0, dr, rc), (c0, dc, cc) = (_taps_along(hb, clones, t, a) for a in (-2, -1))

    def along(start: Value, stride: Value, dil: Value, taps: int) -> Bounds:
        span = hb.add(hb.mul(dil, hb.const(taps - 1)), hb.const(1))
        return lambda body, i: (body.add(start, body.mul(i, stride)), span)
    rows, rst = _table(hb, sizes[-2], along(r0, steps[-2], dr, t.taps[0]))
    cols, cst = _table(hb, sizes[-1], along(c0, steps[-1], dc, t.taps[1]))
    kw = hb.const(t.taps[1])
    cap = _capacity(hb, x, t.rank, [rst, cst], sizes[-1], kw)
    ok = _all(hb, [hb.cmp(*c) for c in conds + rc + cc + cap])
    results = [t.nest.result_values[0].type] if t.acc is None else []
    if t.group is not None:
        results = [t.group.result_values[0].type]
    branch = hb.insert(IfOp.empty(ok, results, t.loc))
    then = HostBuilder(branch.then_region.blocks[0], t.loc)
    if t.acc is None:
        shape = [then.dim(x, a) for a in range(t.rank - 2)] + sizes[-2:]
        assert isinstance(results[0], TensorType)
        out = then.alloc(results[0].shape, t.dtype, shape)
    else:
        out = env[t.acc]
    _launch(then, k, x, out, [rows, cols, *tabs], (then.const(0), then.const(0)),
            (sizes[-2], sizes[-1]), kw, cores, (dr, dc))
    then.insert(YieldOp([then.to_tensor(out)] if results else []))
    other = HostBuilder(branch.else_region.blocks[0], t.loc)
    other.insert(YieldOp(scalar(other)))
    return list(branch.result_values)


def env_or(clones: _Clones, hb: HostBuilder, v: Value) -> Value:
    """A loop bound on the host (computed outside the nest, or re-computed)."""
    return clones.value(v, hb, {})


__all__ = ["launch_pool"]
