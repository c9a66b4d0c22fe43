"""Host side of cube kernels of run-time shapes (``cube_dynamic``) and of MIX kernels of
run-time shapes (``mix_plan``): numpy's checks, the kernel arguments, the limits, and
``if the limits hold: the kernel else: its twin`` in the host program.

For a cube kernel (:func:`launch_dynamic`) the twin is the same matmul as a scalar
kernel.  For a MIX kernel (:func:`launch_mix_dynamic`) the limits also say that the
epilogue's iteration space is C's own shape (a run-time ``?`` may broadcast C, e.g. a
(1, N) result against a (5, N) residual, and the vector cores read C from the workspace
as it is); its twin is the unfused pair (the dynamic cube kernel, with its own scalar
twin, then the epilogue's vector kernel), so no run-time shape gives a wrong result.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc.cube_dynamic import PITCH_MAX, rank
from pyasc.backend.ascendc.cube_match import INT32_MAX, CubeMatmulOp
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.host_cube import swapped
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, func
from pyasc.ir.ops.loop import IfOp, YieldOp
from pyasc.ir.types import TensorType


def host_views(hb: HostBuilder, op: CubeMatmulOp, lhs: Value, rhs: Value) -> list[Value]:
    """The logical operands of ``op`` (its transposed views undone) as host views."""
    return [swapped(hb, v) if op.attributes[flag] and rank(v) >= 2 else v
            for v, flag in ((lhs, "trans_a"), (rhs, "trans_b"))]


class _Shapes:
    """The run-time M, N, K, batch extents and strides of one call (host values)."""

    def __init__(self, hb: HostBuilder, k: CubeKernel, a: Value, b: Value) -> None:
        self.hb = hb
        da = [hb.dim(a, i) for i in range(rank(a))]
        db = [hb.dim(b, i) for i in range(rank(b))]
        self.a_dims, self.b_dims = da, db
        one = hb.const(1)
        if len(da) == 1:
            self.m, self.ka = one, da[0]
        else:
            self.m, self.ka = (da[-1], da[-2]) if k.trans_a else (da[-2], da[-1])
        if len(db) == 1:
            self.n, self.kb = one, db[0]
        else:
            self.n, self.kb = (db[-2], db[-1]) if k.trans_b else (db[-1], db[-2])
        self.ba, self.bb = da[:-2], db[:-2]

    def cmp(self, pred: str, a: Value, b: Value | int) -> Value:
        rhs = self.hb.const(b) if isinstance(b, int) else b
        return self.hb.insert(arith.CmpOp.new(pred, a, rhs)).result

    def all(self, conds: list[Value]) -> Value:
        out = conds[0]
        for c in conds[1:]:
            out = self.hb.binary(arith.AndOp, out, c)
        return out

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        return self.hb.insert(arith.SelectOp.new(cond, a, b)).result


def _check(hb: HostBuilder, cond: Value, values: list[Value], message: str, op: Operation) -> None:
    hb.insert(func.AssertOp([cond, *values], [], {"message": message, "kind": "shape"},
                            loc=op.loc))


def _batch(s: _Shapes, k: CubeKernel, op: Operation) -> tuple[list[Value], list[Value]]:
    """(the result's batch extents, the kernel's group parameters), checking numpy's
    broadcast of the batch axes."""
    hb, one = s.hb, s.hb.const(1)
    axes = max(len(s.ba), len(s.bb))
    ba = [one] * (axes - len(s.ba)) + s.ba
    bb = [one] * (axes - len(s.bb)) + s.bb
    extents: list[Value] = []
    for ea, eb in zip(ba, bb, strict=True):
        ok = hb.binary(arith.OrOp, s.cmp("eq", ea, eb),
                       hb.binary(arith.OrOp, s.cmp("eq", ea, 1), s.cmp("eq", eb, 1)))
        _check(hb, ok, [ea, eb], "operands could not be broadcast together (batch sizes {0} "
               "and {1})", op)
        extents.append(hb.broadcast_dim(ea, eb))
    if k.fold_m:
        return extents, []
    params: list[Value] = []
    sa, sb = hb.mul(s.m, s.ka), hb.mul(s.ka, s.n)
    zero = hb.const(0)
    for ea, eb, e in reversed(list(zip(ba, bb, extents, strict=True))):
        params[:0] = [e, s.select(s.cmp("eq", ea, 1), zero, sa),
                      s.select(s.cmp("eq", eb, 1), zero, sb)]
        sa, sb = hb.mul(sa, ea), hb.mul(sb, eb)
    return extents, params


def _fits(s: _Shapes, out_elems: Value) -> Value:
    """The kernel's limits: K >= 1, row pitches in uint16, sizes in int32."""
    conds = [s.cmp("ge", s.ka, 1)]
    for dims in (s.a_dims, s.b_dims):
        conds.append(s.cmp("le", dims[-1], PITCH_MAX))
        conds.append(s.cmp("le", s.hb.product(dims), INT32_MAX))
    conds.append(s.cmp("le", out_elems, INT32_MAX))
    return s.all(conds)


def launch_dynamic(hb: HostBuilder, k: CubeKernel, op: CubeMatmulOp, lhs: Value, rhs: Value,
                   cores: int, twin: Callable[[HostBuilder], Value]) -> Value:
    """The host code of a dynamic cube matmul on ``cores`` cube cores: checks,
    arguments, and ``if the kernel's limits hold: launch it, else: the scalar twin``;
    returns the result tensor."""
    result = op.result.type
    assert isinstance(result, TensorType)
    a = swapped(hb, lhs) if k.host_trans_a else lhs
    b = swapped(hb, rhs) if k.host_trans_b else rhs
    s = _Shapes(hb, k, a, b)
    _check(hb, s.cmp("eq", s.ka, s.kb), [s.kb, s.ka], "matmul: Input operand 1 has a "
           "mismatch in its core dimension 0 (size {0} is different from {1})", op)
    extents, groups = _batch(s, k, op)
    m = hb.mul(s.m, hb.product(extents)) if k.fold_m else s.m
    mats = [*([s.m] if rank(lhs) >= 2 else []), *([s.n] if rank(rhs) >= 2 else [])]
    out_dims = [*extents, *mats]
    assert len(out_dims) == result.rank
    m_blocks, n_blocks = hb.ceil_div(m, k.tile.base_m), hb.ceil_div(s.n, k.tile.base_n)
    units = hb.mul(hb.product([] if k.fold_m else extents), hb.mul(m_blocks, n_blocks))
    block_dim = hb.max(hb.min(units, cores), 1)
    fits = _fits(s, hb.product(out_dims))
    branch = hb.insert(IfOp.empty(fits, [result], op.loc))
    then = HostBuilder(branch.then_region.blocks[0], op.loc)
    out = then.alloc(result.shape, result.element, out_dims)
    scalars = [m, s.n, s.ka, then.const(k.tile.base_m), then.const(k.tile.base_n), m_blocks,
               n_blocks, *groups]
    then.launch(k.name, block_dim, [a, b, out, *scalars], [2])
    then.insert(YieldOp([then.to_tensor(out)]))
    other = HostBuilder(branch.else_region.blocks[0], op.loc)
    other.insert(YieldOp([twin(other)]))
    return branch.result_values[0]


__all__ = ["host_views", "launch_dynamic"]
