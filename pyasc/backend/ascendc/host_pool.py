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
from pyasc.backend.ascendc.pool_loops import PoolLoop, outer_value
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
        self.inside = {r for op in p.nest.walk() for r in op.result_values}

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


def _cmp(hb: HostBuilder, pred: str, a: Value, b: Value | int) -> Value:
    b_v = hb.const(b) if isinstance(b, int) else b
    return hb.insert(arith.CmpOp.new(pred, a, b_v)).result


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
    """``(NI, NJ)`` table of the post-operation's scalar (in the kernel's type)."""
    assert p.scale is not None
    tab = hb.alloc((-1, -1), p.dtype, list(n))
    fi = hb.insert(ForOp.empty(hb.const(0), n[0], hb.const(1), loc=hb.b.loc))
    bi = HostBuilder(fi.body.blocks[0], hb.b.loc)
    fj = bi.insert(ForOp.empty(bi.const(0), n[1], bi.const(1), loc=hb.b.loc))
    bj = HostBuilder(fj.body.blocks[0], hb.b.loc)
    ki, kj = fi.induction_var, fj.induction_var
    vmap = {p.ivs[0]: bj.add(lo[0], ki), p.ivs[1]: bj.add(lo[1], kj)}
    s = clones.value(p.scale, bj, vmap)
    if s.type != p.dtype:
        s = bj.insert(arith.CastOp.new(s, p.dtype)).result
    bj.insert(mem.StoreOp([s, tab, ki, kj], []))
    bj.insert(YieldOp([]))
    bi.insert(YieldOp([]))
    return tab


def _capacity(hb: HostBuilder, x: Value, rank: int, stats: list[list[Value]],
              nj: Value) -> list[Cmp]:
    """Windows inside ``x`` and not empty; rows, output rows and offsets within the
    kernel's UB capacities."""
    conds: list[Cmp] = []
    for a, st in enumerate(stats):
        conds += [("ge", st[0], 0), ("le", st[1], hb.dim(x, rank - 2 + a)), ("ge", st[2], 1)]
    width = hb.dim(x, rank - 1)
    return conds + [("le", hb.round_up(width, 16), ROW_CAP), ("le", hb.round_up(nj, 16), ROW_CAP),
                    ("le", hb.mul(stats[1][3], hb.round_up(nj, 16)), IDX_CAP)]


def _conditions(hb: HostBuilder, clones: _Clones, p: PoolLoop, x: Value, out: Value,
                ranges: list[tuple[Value, Value]], stats: list[list[Value]],
                ni_nj: tuple[Value, Value]) -> Value:
    """True when the kernel computes what the loop would (module docstring)."""
    top: dict[Value, Value] = {}
    conds: list[Cmp] = []
    for s in p.steps:
        conds.append(("eq", clones.value(s, hb, top), 1))
    for axis, (off, size) in enumerate(p.lead):
        conds += [("eq", clones.value(off, hb, top), 0),
                  ("eq", clones.value(size, hb, top), hb.dim(x, axis)),
                  ("eq", hb.dim(x, axis), hb.dim(out, axis))]
    for axis, (off, size, step) in enumerate(p.out_lead):
        conds += [("eq", clones.value(off, hb, top), 0),
                  ("eq", clones.value(size, hb, top), hb.dim(out, axis)),
                  ("eq", clones.value(step, hb, top), 1)]
    r = p.rank
    for a, (lo, hi) in enumerate(ranges):
        conds += [("ge", lo, 0), ("le", hi, hb.dim(out, r - 2 + a))]
    conds += _capacity(hb, x, r, stats, ni_nj[1])
    return _all(hb, [_cmp(hb, *c) for c in conds])


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
            lo: tuple[Value, Value], ns: tuple[Value, Value], kw: Value, cores: int) -> None:
    """The kernel's launch: output rows ``lo[0] + [0, ns[0])`` (columns likewise) of
    ``out`` from the windows of ``x`` the tables give."""
    r = k.loop.rank
    planes = hb.product([hb.dim(x, a) for a in range(r - 2)])
    units = hb.mul(planes, ns[0])
    # each block takes at least ~4 output rows of a plane: overlapping windows re-read
    # their shared input rows once per block
    blocks = hb.min(hb.min(units, cores), hb.mul(planes, hb.max(
        hb.binary(arith.FloorDivOp, ns[0], hb.const(MIN_BLOCK_ROWS)), 1)))
    args = [x, out, *tabs, planes, hb.dim(x, r - 2), hb.dim(x, r - 1), hb.dim(out, r - 2),
            hb.dim(out, r - 1), lo[0], lo[1], ns[0], ns[1], kw]
    hb.launch(k.name, blocks, args, [1])


def launch_taps(hb: HostBuilder, k: PoolKernel, t: TapLoop, env: dict[Value, Value],
                cores: int, scalar: Callable[[HostBuilder], list[Value]]) -> list[Value]:
    """A tap nest (``pool_taps``): output ``(i, j)`` is the window at rows ``c + i * s``
    (``kh`` of them) and columns ``c' + j * s'``; checks that the first snapshot is tap
    ``(0, 0)`` and that the views take whole leading axes; returns the nest's result."""
    clones = _Clones(t, env)  # type: ignore[arg-type]
    x = env[t.src]
    zero = {t.ivs[0]: hb.const(0), t.ivs[1]: hb.const(0)}
    offs, sizes, steps = (
        [clones.value(v, hb, dict(zero)) for v in part] for part in t.view.parts())  # type: ignore[attr-defined]
    first = [[env[v] for v in part] for part in t.init.parts()]  # type: ignore[attr-defined]
    conds: list[Cmp] = [("eq", a, b) for a, b in zip([*offs, *sizes, *steps],
                                                     [v for part in first for v in part],
                                                     strict=True)]
    for axis in range(t.rank - 2):
        conds += [("eq", offs[axis], 0), ("eq", sizes[axis], hb.dim(x, axis)),
                  ("eq", steps[axis], 1)]

    def along(a: int) -> Bounds:
        taps = t.taps[a - t.rank + 2]
        return lambda body, i: (body.add(offs[a], body.mul(i, steps[a])), body.const(taps))
    rows, rst = _table(hb, sizes[-2], along(t.rank - 2))
    cols, cst = _table(hb, sizes[-1], along(t.rank - 1))
    ok = _all(hb, [_cmp(hb, *c) for c in conds + _capacity(hb, x, t.rank, [rst, cst], sizes[-1])])
    result = t.nest.result_values[0].type
    branch = hb.insert(IfOp.empty(ok, [result], t.loc))
    then = HostBuilder(branch.then_region.blocks[0], t.loc)
    shape = [then.dim(x, a) for a in range(t.rank - 2)] + sizes[-2:]
    assert isinstance(result, TensorType)
    out = then.alloc(result.shape, t.dtype, shape)
    _launch(then, k, x, out, [rows, cols], (then.const(0), then.const(0)),
            (sizes[-2], sizes[-1]), cst[3], cores)
    then.insert(YieldOp([then.to_tensor(out)]))
    other = HostBuilder(branch.else_region.blocks[0], t.loc)
    other.insert(YieldOp(scalar(other)))
    return list(branch.result_values)


def env_or(clones: _Clones, hb: HostBuilder, v: Value) -> Value:
    """A loop bound on the host (computed outside the nest, or re-computed)."""
    return clones.value(v, hb, {})


__all__ = ["launch_pool"]
