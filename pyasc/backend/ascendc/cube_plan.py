"""Planning a cube kernel: the shapes, batch, layouts and tiling of one ``cube_matmul``.

An ``ascend.cube_matmul`` (``cube_match``) becomes one cube kernel computing, for every
batch index, ``C (M x N) = A (M x K) @ B (K x N)``.  Shapes follow numpy's matmul:

* a 1-D A is one row (M = 1, a GEMV); a 1-D B is one column (N = 1), read as B^T
  (1 x K, the same memory);
* batch axes broadcast: both batch shapes are right-aligned, axes of extent 1 in the
  result dropped, and neighbouring axes on which the same operand broadcasts merged
  into one *batch group* (extent, A stride, B stride; a broadcast operand's stride is
  0).  C is contiguous, so its batch stride is M * N.  When the innermost group
  broadcasts B and A is not transposed, it is folded into M (``(E, M, K) @ (K, N)`` is
  ``(E * M, K) @ (K, N)``: bigger tiles, B read once per M tile instead of per batch).

Layouts (``shared/ascendc-cube-reference.md`` section 4.1): L0A wants A as Zz and L0B B
as Zn.  A given as ``(M, K)`` rows and B given as B^T ``(N, K)`` need no transposing
load for any dtype; A given as A^T ``(K, M)`` and B as ``(K, N)`` need ``LoadData``'s
per-fractal transpose, which exists for b16 (float16, bfloat16) only.  So a b32/b8
operand in the other layout is transposed on the host (``host_cube``: a view the
launcher makes contiguous); b16 operands are read as they are.

Tiling (sections 1.2, 9 and 10): a block of C of ``baseM x baseN`` stays live in L0C
over the whole K loop (``cube_tiling``: 128 x 128 double-buffered, or 128 x 256 / 256 x
128 filling L0C, which re-read a third less).  The work is a list of *units* ``(batch
index, M part, N part)``, each ``singleCoreM x singleCoreN`` of C (whole blocks); block
``b`` takes units ``b, b + block_dim, ...`` with ``block_dim = min(units,
soc.cube.cores)``.  Of the block shapes, splits and L1 residencies (``cube_tiling``),
the one with the least estimated time (``cube_cost``), then the least GM traffic, then
the fewest blocks on the busiest core, then the fewest units, is taken.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from pyasc.backend.ascendc.cores import CUBE
from pyasc.backend.ascendc.cube_cost import cube_cost
from pyasc.backend.ascendc.cube_match import QUANT, CubeMatmulOp
from pyasc.backend.ascendc.cube_tiling import Split, TileShape, splits, tile_shapes, with_residency
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.tiles import ctype
from pyasc.ir.core import Location
from pyasc.ir.types import ScalarType, TensorType

B16 = frozenset({"f16", "bf16"})

@dataclass(frozen=True)
class BatchGroup:
    """Merged batch axes: ``extent`` indices, A and B advancing by their strides."""

    extent: int
    a_stride: int
    b_stride: int


@dataclass
class CubeKernel:
    """One (batched) matmul on the cube unit (module docstring)."""

    core: ClassVar[str] = CUBE     # runs on the cube cores (cores.py)
    name: str
    loc: Location
    dtype: ScalarType          # operand element type
    out: ScalarType            # result element type
    m: int
    n: int
    k: int
    tile: TileShape            # the block of C live in L0C and its K step
    c0: int                    # elements per 32-byte fractal row of the operands
    quant: str                 # Fixpipe quantPre
    trans_a: bool              # the kernel reads A^T (k x m)
    trans_b: bool              # the kernel reads B^T (n x k)
    host_trans_a: bool         # the host transposes the given A first (b32/b8)
    host_trans_b: bool
    single_m: int              # rows of C per unit
    single_n: int              # columns of C per unit
    m_blocks: int              # units along M
    n_blocks: int              # units along N
    block_dim: int
    groups: list[BatchGroup] = field(default_factory=list)
    acc: str = "float"         # L0C element type
    a_resident: bool = False   # an M block's A rows over all of K stay in L1 (cube_tiling)
    b_resident: bool = False   # a unit's B columns over all of K stay in L1
    # run-time shapes (cube_dynamic): m, n, k, the blocks and the groups' numbers are DYN,
    # computed by the host per call; fold_m: A's batch axes are folded into M
    dynamic: bool = False
    fold_m: bool = False
    relu: bool = False         # Fixpipe applies ReLU (reluEn): a max(C, 0) epilogue (mix_plan)

    @property
    def split(self) -> Split:
        return Split(self.single_m // self.tile.base_m, self.single_n // self.tile.base_n,
                     self.m_blocks, self.n_blocks, self.block_dim, self.a_resident,
                     self.b_resident)

    @property
    def base_k(self) -> int:
        return self.tile.base_k

    @property
    def ctype(self) -> str:
        return ctype(self.dtype)

    @property
    def out_ctype(self) -> str:
        return ctype(self.out)

    @property
    def batch(self) -> int:
        n = 1
        for g in self.groups:
            n *= g.extent
        return n

    @property
    def units(self) -> int:
        return self.batch * self.m_blocks * self.n_blocks


@dataclass(frozen=True)
class Layout:
    """M, N, K, batch groups and the storage orientation of one cube matmul."""

    m: int
    n: int
    k: int
    groups: tuple[BatchGroup, ...]
    trans_a: bool
    trans_b: bool


def layout(op: CubeMatmulOp, trans_a: bool, trans_b: bool) -> Layout:
    """numpy's matmul of ``op`` as M, N, K and batch groups, for operands stored with
    ``trans_a`` / ``trans_b`` (which may differ from ``op``'s when the host transposes)."""
    la, lb = op.logical_shapes()
    if len(la) == 1:
        la, trans_a = (1, la[0]), False
    if len(lb) == 1:
        lb, trans_b = (1, lb[0]), True   # (K,) as B^T (1 x K): the same memory
        lb = (lb[1], lb[0])
    m, k, n = la[-2], la[-1], lb[-1]
    groups = _batch_groups(la[:-2], lb[:-2], m * k, k * n)
    if groups and groups[-1].b_stride == 0 and not trans_a:
        m, groups = m * groups[-1].extent, groups[:-1]
    return Layout(m, n, k, tuple(groups), trans_a, trans_b)


def _batch_groups(ba: tuple[int, ...], bb: tuple[int, ...], a_mat: int,
                  b_mat: int) -> list[BatchGroup]:
    rank = max(len(ba), len(bb))
    ba, bb = (1,) * (rank - len(ba)) + ba, (1,) * (rank - len(bb)) + bb
    axes: list[tuple[int, int, int]] = []  # (extent, A stride, B stride), outermost first
    sa, sb = a_mat, b_mat
    for ea, eb in reversed(list(zip(ba, bb, strict=True))):
        extent = max(ea, eb)
        if extent > 1:
            axes.insert(0, (extent, sa if ea > 1 else 0, sb if eb > 1 else 0))
        sa, sb = sa * ea, sb * eb
    return _merged(axes)


def _merged(axes: list[tuple[int, int, int]]) -> list[BatchGroup]:
    """Merge neighbouring axes (outermost first) that the same operands move along:
    the inner axis's strides are then the merged group's."""
    groups: list[BatchGroup] = []
    for extent, a, b in axes:
        if groups and (groups[-1].a_stride == 0) == (a == 0) and \
                (groups[-1].b_stride == 0) == (b == 0):
            groups[-1] = BatchGroup(groups[-1].extent * extent, a, b)
        else:
            groups.append(BatchGroup(extent, a, b))
    return groups


def plan_cube_kernel(op: CubeMatmulOp, soc: SoC, name: str) -> CubeKernel:
    """The cube kernel of ``op`` on ``soc``: of its block shapes, splits and L1
    residencies, the one with the least estimated time (``cube_cost``), then GM
    traffic, then blocks on the busiest core, then units (then the first shape)."""
    best: tuple[tuple[float, int, int, int], CubeKernel] | None = None
    for k in _candidates(op, soc, name):
        cost = cube_cost(k, soc)
        busiest = -(-k.units // k.block_dim) * k.split.sm * k.split.sn
        key = (cost.estimate_s, cost.gm_read_bytes, busiest, k.units)
        if best is None or key < best[0]:
            best = (key, k)
    assert best is not None
    return best[1]


def _candidates(op: CubeMatmulOp, soc: SoC, name: str) -> Iterator[CubeKernel]:
    """Every plan of ``op``: each block shape and split, with the residency that fits."""
    cube = soc.cube
    assert cube is not None
    at, rt = op.lhs.type, op.result.type
    assert isinstance(at, TensorType) and isinstance(rt, TensorType)
    dtype, out = at.element, rt.element
    b16 = dtype.name in B16
    given_a, given_b = op.attributes["trans_a"], op.attributes["trans_b"]
    # b32/b8: no LoadData transpose, so A must come as (M, K) and B as B^T (N, K)
    lay = layout(op, given_a if b16 else False, given_b if b16 else True)
    acc = "int32_t" if cube.accumulator[dtype.name] == "i32" else "float"
    for tile in tile_shapes(cube, dtype.itemsize, 4):
        for split in splits(*tile.tiles(lay.m, lay.n), cube.cores, _batch(lay.groups)):
            sp = with_residency(tile, split, lay.m, lay.n, lay.k, dtype.itemsize, cube)
            yield CubeKernel(
                name, op.loc, dtype, out, lay.m, lay.n, lay.k, tile, cube.c0[dtype.name],
                QUANT[(dtype.name, out.name)], lay.trans_a, lay.trans_b,
                host_trans_a=len(at.shape) >= 2 and lay.trans_a != given_a,
                host_trans_b=_rank(op.rhs.type) >= 2 and lay.trans_b != given_b,
                single_m=sp.sm * tile.base_m, single_n=sp.sn * tile.base_n, m_blocks=sp.bm,
                n_blocks=sp.bn, block_dim=sp.block_dim, groups=list(lay.groups), acc=acc,
                a_resident=sp.a_resident, b_resident=sp.b_resident)


def _rank(t: object) -> int:
    assert isinstance(t, TensorType)
    return t.rank


def _batch(groups: tuple[BatchGroup, ...]) -> int:
    n = 1
    for g in groups:
        n *= g.extent
    return n


__all__ = ["BatchGroup", "CubeKernel", "Layout", "layout", "plan_cube_kernel"]
