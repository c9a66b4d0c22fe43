"""Host side of a cube kernel: the output buffer, B^T when the kernel needs it, launch.

The tiling (``cube_plan``) is passed as the kernel's int32 parameters (``emit_cube.PARAMS``)
rather than baked into its text, as for the vector kernels.  A float32 B is passed as
B^T: a host transpose view, which the launcher makes contiguous (on an NPU a device copy,
like the other host-side data movement).
"""

from __future__ import annotations

from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.ir.core import Value
from pyasc.ir.ops import tensor
from pyasc.ir.types import TensorType


def launch_cube(hb: HostBuilder, k: CubeKernel, lhs: Value, rhs: Value) -> Value:
    """Launch ``k`` on ``lhs @ rhs``; returns the result tensor."""
    b = rhs
    if k.b_transposed:
        b = hb.insert(tensor.TransposeOp([rhs], [TensorType((k.n, k.k), k.dtype)],
                                         {"perm": (1, 0)})).result
    out = hb.alloc((k.m, k.n), k.dtype, [hb.const(k.m), hb.const(k.n)])
    scalars = [k.m, k.n, k.k, k.single_m, k.single_n, k.m_blocks]
    hb.launch(k.name, hb.const(k.block_dim), [lhs, b, out, *(hb.const(v) for v in scalars)],
              [2])
    return hb.to_tensor(out)


__all__ = ["launch_cube"]
