"""Planning a cube kernel: which matmuls run on the cube unit, and their tiling.

A top-level ``tensor.matmul`` of two static 2-D operands of a dtype the SoC's cube unit
takes (``soc.cube``: dav-c220 only) becomes one cube kernel; everything else keeps the
scalar path.  Tiling (``shared/ascendc-cube-reference.md`` sections 1.2, 9 and 10):

* base tiles ``baseM = baseN = 128``: one L0C buffer holds 128 x 128 fp32 (64 KB), so two
  ping-pong buffers fill L0C's 128 KB; ``baseK`` makes one A tile 32 KB
  (``128 * baseK * itemsize``), so two L0A (and two L0B) buffers fill 64 KB.  L1 holds
  two A and two B tiles (128 KB of the 512 KB less its reserve).
* per-core tiles ``singleCoreM x singleCoreN`` (whole base tiles) over at most
  ``soc.cube.cores`` blocks: the fewest base tiles per core, then the least GM traffic
  (A is read once per column of cores, B once per row), then the fewest blocks.

B is loaded as it is for b16 dtypes (``LoadData`` transposes each 16 x 16 fractal into
L0B's Zn layout); LoadData cannot transpose b32, so float32 B reaches the kernel as B^T
(a host transpose, ``b_transposed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pyasc.backend.ascendc.cores import CUBE
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.tiles import ctype
from pyasc.ir.core import Location, Operation
from pyasc.ir.ops import tensor
from pyasc.ir.types import DYN, ScalarType, TensorType

BASE_MN = 128
L0AB_TILE_BYTES = 32 * 1024   # half of L0A / L0B: one ping-pong buffer
MAX_PARAM = 65535             # uint16 fields (srcDValue of Nd2NzParams) bound N and K

# operand dtype -> (Fixpipe quantPre from the fp32/int32 L0C, B goes transposed)
_CUBE_DTYPES: dict[str, tuple[str, bool]] = {
    "f16": ("F322F16", False),
    "bf16": ("F322BF16", False),
    "f32": ("NoQuant", True),
}


@dataclass
class CubeKernel:
    """One 2-D matmul on the cube unit: ``c (m x n) = a (m x k) @ b (k x n)``."""

    core: ClassVar[str] = CUBE     # runs on the cube cores (cores.py)
    name: str
    loc: Location
    dtype: ScalarType          # operand and result element type
    m: int
    n: int
    k: int
    base_k: int
    c0: int                    # elements per 32-byte fractal row of the operands
    quant: str                 # Fixpipe quantPre
    b_transposed: bool         # the kernel reads B^T (n x k)
    single_m: int              # rows of C per block
    single_n: int              # columns of C per block
    m_blocks: int              # blocks along M (block b: m index b % m_blocks)
    block_dim: int
    acc: str = "float"         # L0C element type

    @property
    def ctype(self) -> str:
        return ctype(self.dtype)


def cube_matmul(op: Operation, soc: SoC) -> bool:
    """True when ``op`` runs as a cube kernel on ``soc``."""
    if not isinstance(op, tensor.MatmulOp) or soc.cube is None:
        return False
    a, b = op.operand_values[0].type, op.operand_values[1].type
    if not (isinstance(a, TensorType) and isinstance(b, TensorType)) or a.rank != 2 or b.rank != 2:
        return False
    if DYN in a.shape or DYN in b.shape or a.element.name not in _CUBE_DTYPES:
        return False
    (m, k), n = a.shape, b.shape[1]
    return min(m, n, k) >= 1 and max(n, k) <= MAX_PARAM


def plan_cube_kernel(op: Operation, soc: SoC, name: str) -> CubeKernel:
    """The cube kernel of a matmul that :func:`cube_matmul` accepts."""
    assert soc.cube is not None and cube_matmul(op, soc)
    a, b = op.operand_values[0].type, op.operand_values[1].type
    assert isinstance(a, TensorType) and isinstance(b, TensorType)
    (m, k), n = a.shape, b.shape[1]
    dtype = a.element
    quant, transposed = _CUBE_DTYPES[dtype.name]
    base_k = L0AB_TILE_BYTES // (BASE_MN * dtype.itemsize)
    sm, sn, m_blocks, blocks = split_cores(m, n, k, soc.cube.cores)
    return CubeKernel(name, op.loc, dtype, m, n, k, base_k, soc.cube.c0[dtype.name], quant,
                      transposed, sm * BASE_MN, sn * BASE_MN, m_blocks, blocks)


def split_cores(m: int, n: int, k: int, cores: int) -> tuple[int, int, int, int]:
    """(base tiles per core along M, along N, blocks along M, blocks) for ``cores``."""
    mt, nt = -(-m // BASE_MN), -(-n // BASE_MN)
    best: tuple[tuple[int, int, int], tuple[int, int, int, int]] | None = None
    for sm in range(1, mt + 1):
        bm = -(-mt // sm)
        sn_min = max(1, -(-nt // max(1, cores // bm)))
        for sn in range(sn_min, nt + 1):
            bn = -(-nt // sn)
            if bm * bn > cores:
                continue
            traffic = (bn * m + bm * n) * k   # elements of A and B read from GM
            key = (sm * sn, traffic, bm * bn)
            if best is None or key < best[0]:
                best = (key, (sm, sn, bm, bm * bn))
            break  # a larger sn only adds tiles per core
    assert best is not None
    return best[1]


__all__ = ["CubeKernel", "cube_matmul", "plan_cube_kernel", "split_cores"]
