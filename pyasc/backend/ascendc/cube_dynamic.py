"""Cube kernels of run-time shapes (``dynamic_shape=True``): one kernel, every shape.

A cube kernel's M, N, K, tiling (``singleCoreM``, ``singleCoreN``, ``mBlocks``,
``nBlocks``) and batch groups are already int32 kernel arguments (``emit_cube.params``);
only the block shape and the L1 residency are constants of its text.  So a
``cube_matmul`` whose shapes are ``?`` gets **one plan valid for every run-time shape**
(:func:`plan_dynamic`) and the host computes the arguments per call (:func:`launch_dynamic`):

* the block is 128 x 128 with two L0C buffers (FIX drains one while M fills the other),
  the shape that suits no orientation of C worse than the other; the static planner's
  128 x 256 / 256 x 128 read a third less on large C, which a kernel that must also be
  good for a 17-row C cannot know;
* no L1-resident panel: whether a whole-K panel fits L1 depends on K, so both operands
  stream through L1 in double-buffered ``baseK`` slices, which fits L1 and L0A/L0B for
  *any* K (the K loop runs ``ceil(K / baseK)`` steps, accumulating in L0C);
* units are single blocks (``singleCoreM = baseM``, ``singleCoreN = baseN``): without
  residency a unit's size does not change the traffic, and single blocks balance the
  cores best (the busiest core has at most one block more than the others);
* one batch group per batch axis of the result (no merging: which axes broadcast is only
  known at run time), extent and strides computed by the host (stride 0 where the
  operand's extent is 1); a batch of A against a 2-D (or 1-D) B is folded into M, as in
  the static planner, which needs no run-time fact.

The host checks numpy's rules first (equal K, broadcastable batch axes: the errors of
the scalar path) and then the kernel's limits: ``K >= 1`` (an empty K loop would leave
L0C unset), row pitches within ``Nd2NzParams.srcDValue`` (uint16) and every size within
int32.  A call outside them runs the same matmul as a scalar kernel (the *twin*), so no
run-time shape gives a wrong result.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc.cube_match import INT32_MAX, QUANT, CubeMatmulOp
from pyasc.backend.ascendc.cube_plan import B16, BatchGroup, CubeKernel
from pyasc.backend.ascendc.cube_tiling import tile_shapes
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.host_cube import swapped
from pyasc.backend.ascendc.soc import SoC
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, func, tensor
from pyasc.ir.ops.loop import IfOp, YieldOp
from pyasc.ir.types import DYN, TensorType

PITCH_MAX = 65535   # Nd2NzParams.srcDValue


def is_dynamic(op: Operation) -> bool:
    """True if a shape of ``op``'s operands or result is only known at run time."""
    return any(isinstance(v.type, TensorType) and DYN in v.type.shape
               for v in [*op.operand_values, *op.result_values])


def _rank(v: Value) -> int:
    t = v.type
    assert isinstance(t, TensorType)
    return t.rank


def plan_dynamic(op: CubeMatmulOp, soc: SoC, name: str) -> CubeKernel:
    """The one plan of ``op`` for every run-time shape (module docstring)."""
    cube = soc.cube
    assert cube is not None
    at, rt = op.lhs.type, op.result.type
    assert isinstance(at, TensorType) and isinstance(rt, TensorType)
    dtype, out = at.element, rt.element
    b16 = dtype.name in B16
    given_a, given_b = op.attributes["trans_a"], op.attributes["trans_b"]
    ra, rb = _rank(op.lhs), _rank(op.rhs)
    trans_a = given_a and b16 and ra >= 2
    trans_b = (given_b or not b16) if rb >= 2 else True   # a 1-D B is B^T (1 x K)
    tile = tile_shapes(cube, dtype.itemsize, 4)[0]
    assert (tile.base_m, tile.base_n, tile.c_bufs) == (128, 128, 2)
    fold = rb <= 2 and ra >= 3 and not trans_a
    batch_axes = 0 if fold else rt.rank - (ra >= 2) - (rb >= 2)
    groups = [BatchGroup(DYN, DYN, DYN)] * batch_axes
    acc = "int32_t" if cube.accumulator[dtype.name] == "i32" else "float"
    return CubeKernel(
        name, op.loc, dtype, out, DYN, DYN, DYN, tile, cube.c0[dtype.name],
        QUANT[(dtype.name, out.name)], trans_a, trans_b,
        host_trans_a=ra >= 2 and trans_a != given_a,
        host_trans_b=rb >= 2 and trans_b != given_b,
        single_m=tile.base_m, single_n=tile.base_n, m_blocks=DYN, n_blocks=DYN,
        block_dim=DYN, groups=groups, acc=acc, dynamic=True, fold_m=fold)


# ---------------------------------------------------------------- the twin
def host_views(hb: HostBuilder, op: CubeMatmulOp, lhs: Value, rhs: Value) -> list[Value]:
    """The logical operands of ``op`` (its transposed views undone) as host views."""
    return [swapped(hb, v) if op.attributes[flag] and _rank(v) >= 2 else v
            for v, flag in ((lhs, "trans_a"), (rhs, "trans_b"))]


def reference_ops(op: CubeMatmulOp, a: Value, b: Value) -> tuple[list[Operation], Value]:
    """Free-standing tensor ops computing ``op`` from its logical operands ``a`` and
    ``b`` as numpy does (casts to the result type, ``tensor.matmul``): the scalar twin."""
    rt = op.result.type
    assert isinstance(rt, TensorType)
    ops: list[Operation] = []
    logical = []
    for v in (a, b):
        t = v.type
        assert isinstance(t, TensorType)
        if t.element != rt.element:
            ops.append(arith.CastOp.new(v, rt.element, loc=op.loc))
            v = ops[-1].result
        logical.append(v)
    ops.append(tensor.MatmulOp(logical, [rt], loc=op.loc))
    return ops, ops[-1].result


# ---------------------------------------------------------------- the host side
class _Shapes:
    """The run-time M, N, K, batch extents and strides of one call (host values)."""

    def __init__(self, hb: HostBuilder, k: CubeKernel, a: Value, b: Value) -> None:
        self.hb = hb
        da = [hb.dim(a, i) for i in range(_rank(a))]
        db = [hb.dim(b, i) for i in range(_rank(b))]
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
    rank = max(len(s.ba), len(s.bb))
    ba = [one] * (rank - len(s.ba)) + s.ba
    bb = [one] * (rank - len(s.bb)) + s.bb
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
    mats = [*([s.m] if _rank(lhs) >= 2 else []), *([s.n] if _rank(rhs) >= 2 else [])]
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


__all__ = ["host_views", "is_dynamic", "launch_dynamic", "plan_dynamic", "reference_ops"]
