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
from dataclasses import dataclass

from pyasc.backend.ascendc.analysis import SCALAR
from pyasc.backend.ascendc.cube_dynamic import PITCH_MAX, rank
from pyasc.backend.ascendc.cube_match import INT32_MAX, CubeMatmulOp
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.host_cube import swapped
from pyasc.backend.ascendc.host_vector import prepare_input, space_dims
from pyasc.backend.ascendc.mix_plan import MixKernel
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, func
from pyasc.ir.ops.loop import IfOp, YieldOp
from pyasc.ir.types import DYN, TensorType


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


@dataclass
class _Call:
    """One call's host values: the operands as the kernel reads them, C's dims, the
    kernel's int32 arguments after the arrays, its block_dim, and ``fits`` (its limits)."""

    a: Value
    b: Value
    out_dims: list[Value]
    cube_args: list[Value]
    block_dim: Value
    fits: Value


def _prepare(hb: HostBuilder, k: CubeKernel, op: CubeMatmulOp, lhs: Value, rhs: Value,
             cores: int) -> _Call:
    """numpy's checks, then the arguments of cube kernel ``k`` on ``cores`` cube cores."""
    a = swapped(hb, lhs) if k.host_trans_a else lhs
    b = swapped(hb, rhs) if k.host_trans_b else rhs
    s = _Shapes(hb, k, a, b)
    _check(hb, s.cmp("eq", s.ka, s.kb), [s.kb, s.ka], "matmul: Input operand 1 has a "
           "mismatch in its core dimension 0 (size {0} is different from {1})", op)
    extents, groups = _batch(s, k, op)
    m = hb.mul(s.m, hb.product(extents)) if k.fold_m else s.m
    mats = [*([s.m] if rank(lhs) >= 2 else []), *([s.n] if rank(rhs) >= 2 else [])]
    out_dims = [*extents, *mats]
    m_blocks, n_blocks = hb.ceil_div(m, k.tile.base_m), hb.ceil_div(s.n, k.tile.base_n)
    units = hb.mul(hb.product([] if k.fold_m else extents), hb.mul(m_blocks, n_blocks))
    block_dim = hb.max(hb.min(units, cores), 1)
    args = [m, s.n, s.ka, hb.const(k.tile.base_m), hb.const(k.tile.base_n), m_blocks,
            n_blocks, *groups]
    return _Call(a, b, out_dims, args, block_dim, _fits(s, hb.product(out_dims)))


def launch_dynamic(hb: HostBuilder, k: CubeKernel, op: CubeMatmulOp, lhs: Value, rhs: Value,
                   cores: int, twin: Callable[[HostBuilder], Value],
                   result: TensorType | None = None) -> Value:
    """The host code of a dynamic cube matmul on ``cores`` cube cores: checks,
    arguments, and ``if the kernel's limits hold: launch it, else: the scalar twin``;
    returns the result tensor (of type ``result``, by default ``op``'s: Fixpipe may
    convert it)."""
    result = result or op.result.type
    assert isinstance(result, TensorType)
    call = _prepare(hb, k, op, lhs, rhs, cores)
    assert len(call.out_dims) == result.rank
    branch = hb.insert(IfOp.empty(call.fits, [result], op.loc))
    then = HostBuilder(branch.then_region.blocks[0], op.loc)
    out = then.alloc(result.shape, result.element, call.out_dims)
    then.launch(k.name, call.block_dim, [call.a, call.b, out, *call.cube_args], [2])
    then.insert(YieldOp([then.to_tensor(out)]))
    other = HostBuilder(branch.else_region.blocks[0], op.loc)
    other.insert(YieldOp([twin(other)]))
    return branch.result_values[0]


def launch_mix_dynamic(hb: HostBuilder, k: MixKernel, op: CubeMatmulOp, lhs: Value, rhs: Value,
                       operands: list[Value], result_types: list, cores: int,  # noqa: ANN001
                       twin: Callable[[HostBuilder], list[Value]]) -> list[Value]:
    """The host code of MIX kernel ``k`` of run-time shapes: ``lhs @ rhs`` and the
    epilogue on the group's other ``operands`` (the matmul result's position is not
    read), ``if the cube's limits hold and the epilogue's space is C's shape: launch it,
    else: the unfused twin``; returns the group's results."""
    cube, vec = k.cube, k.vec
    call = _prepare(hb, cube, op, lhs, rhs, cores)
    # the epilogue's space; C is not computed yet: it is given by its extents
    given = [call.out_dims if j == k.c_arg else h for j, h in enumerate(operands)]
    dims = space_dims(hb, vec, given)
    assert len(dims) == len(call.out_dims)
    same = [hb.insert(arith.CmpOp.new("eq", d, c)).result
            for d, c in zip(dims, call.out_dims, strict=True)]
    fits = call.fits
    for c in same:
        fits = hb.binary(arith.AndOp, fits, c)
    branch = hb.insert(IfOp.empty(fits, list(result_types), op.loc))
    then = HostBuilder(branch.then_region.blocks[0], op.loc)
    arrays = [prepare_input(then, i, h, vec, dims)
              for j, (i, h) in enumerate(zip(vec.inputs, operands, strict=True))
              if i.vv.cls != SCALAR and j != k.c_arg]
    scalars = [then.extract_scalar(h) for i, h in zip(vec.inputs, operands, strict=True)
               if i.vv.cls == SCALAR]
    outs = []
    for o in vec.written:
        t = result_types[o.index]
        outs.append(then.alloc(t.shape, t.element, dims[len(dims) - t.rank:]))
    ws = then.alloc((DYN,), cube.out, [then.mul(call.block_dim, k.slot_elems)])
    args = [call.a, call.b, *arrays, *outs, ws, *scalars, *call.cube_args]
    first = 2 + len(arrays)
    then.launch(k.name, call.block_dim, args, [*range(first, first + len(outs) + 1)])
    then.insert(YieldOp([then.to_tensor(o) for o in outs]))
    other = HostBuilder(branch.else_region.blocks[0], op.loc)
    other.insert(YieldOp(twin(other)))
    return list(branch.result_values)


__all__ = ["host_views", "launch_dynamic", "launch_mix_dynamic"]
