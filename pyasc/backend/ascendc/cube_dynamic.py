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
run-time shape gives a wrong result.  This module is the plan; the host side (checks,
arguments, the launch or the twin) is ``host_dynamic``.
"""

from __future__ import annotations

import math
from dataclasses import replace

from pyasc.backend.ascendc.cube_match import QUANT, CubeMatmulOp
from pyasc.backend.ascendc.cube_plan import B16, BatchGroup, CubeKernel
from pyasc.backend.ascendc.cube_tiling import tile_shapes
from pyasc.backend.ascendc.soc import SoC
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.types import DYN, TensorType

PITCH_MAX = 65535   # Nd2NzParams.srcDValue


def is_dynamic(op: Operation) -> bool:
    """True if a shape of ``op``'s operands or result is only known at run time."""
    return any(isinstance(v.type, TensorType) and DYN in v.type.shape
               for v in [*op.operand_values, *op.result_values])


def rank(v: Value) -> int:
    """The rank of tensor value ``v``."""
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
    ra, rb = rank(op.lhs), rank(op.rhs)
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


def plan_at(k: CubeKernel, m: int, n: int, kk: int, batch: tuple[int, ...],
            cores: int) -> CubeKernel:
    """The static plan that dynamic kernel ``k`` runs for one call of C = ``batch`` x
    (``m`` x ``n``), K = ``kk`` (``m`` folded as the host folds it), on ``cores`` cube
    cores: the arguments the host computes, for the counts of ``cube_cost`` /
    ``mix_cost``.  Batch strides are those of operands that span the whole batch (only
    the compulsory minimum of ``cube_cost`` reads them)."""
    t = k.tile
    m_blocks, n_blocks = -(-m // t.base_m), -(-n // t.base_n)
    groups = [BatchGroup(e, m * kk, kk * n) for e in batch]
    units = math.prod(batch) * m_blocks * n_blocks
    return replace(k, m=m, n=n, k=kk, m_blocks=m_blocks, n_blocks=n_blocks, groups=groups,
                   block_dim=max(min(units, cores), 1), dynamic=False)


# ---------------------------------------------------------------- the twin
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


__all__ = ["PITCH_MAX", "is_dynamic", "plan_at", "plan_dynamic", "rank", "reference_ops"]
