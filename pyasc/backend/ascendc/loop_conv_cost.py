"""Which route a convolution written with loops takes: first-order time estimates.

``loop_conv`` finds a loop convolution that ``batch-loops`` made a stencil (a sum of
window products); it becomes an im2col + cube matmul only when :func:`cube_pays`: the
estimate of the conv kernel with its im2col in L1 (``conv_plan.conv_l1_estimate_s``,
the roofline of ``cube_cost``) plus the x, w and y transpose kernels around it (each
array read and written once at HBM bandwidth) and four launches, against the stencil
kernel's: ``VECTOR_OPS_PER_TAP`` vector instructions (``Gather``, ``Mul``, ``Add``) per
tap over every output element, at one 256-byte repeat per cycle on every vector core,
or its GM bytes (x once, the output once), whichever is larger, plus one launch.  The
launch cost is an assumption, not a measurement (no NPU here): it is what keeps a small
RGB convolution (27 taps) on the vector unit, where four launches cost more than its
arithmetic.  Estimates, not measurements: docs/ascendc-backend.md.
"""

from __future__ import annotations

from pyasc.backend.ascendc.conv_plan import (
    ITEMSIZE,
    ConvGeometry,
    conv_route_estimate_s,
    plan_conv_l1,
)
from pyasc.backend.ascendc.soc import SoC

LAUNCH_S = 3e-6               # assumed cost of one kernel launch [I: not measured]
VECTOR_OPS_PER_TAP = 3        # a stencil tap: Gather, Mul, Add over the tile
VECTOR_BYTES_PER_CYCLE = 256  # one repeat (8 blocks of 32 bytes) per cycle [I]


def stencil_estimate_s(g: ConvGeometry, soc: SoC) -> float:
    """First-order time of the stencil kernel: ``VECTOR_OPS_PER_TAP`` vector repeats per
    tap over every output element on all vector cores, or its GM bytes (x once, the
    output once) at HBM bandwidth, whichever is larger, plus one launch."""
    cube = soc.cube
    assert cube is not None
    size = ITEMSIZE[g.dtype]
    outs = g.n * g.o * g.oh * g.ow
    work = outs * g.c * g.fh * g.fw * VECTOR_OPS_PER_TAP * size
    compute = work / (VECTOR_BYTES_PER_CYCLE * cube.clock_hz * soc.vector_blocks)
    memory = (g.n * g.c * g.h * g.w + outs) * size / cube.hbm_bytes_per_s
    return max(compute, memory) + LAUNCH_S


def cube_estimate_s(g: ConvGeometry, soc: SoC) -> float | None:
    """First-order time of the conv kernel with its im2col in L1 and its x, w and y
    transposes (``conv_plan.conv_route_estimate_s``) and four launches; None when no L1
    plan fits (the GM route then: not estimated here, the stencil stays)."""
    cube = soc.cube
    assert cube is not None
    plan = plan_conv_l1(g, cube)
    if isinstance(plan, str):
        return None
    return conv_route_estimate_s(plan, cube) + 4 * LAUNCH_S


def cube_pays(g: ConvGeometry, soc: SoC) -> bool:
    """Whether the cube route's estimate beats the stencil kernel's."""
    cube = cube_estimate_s(g, soc)
    return cube is not None and cube < stencil_estimate_s(g, soc)



__all__ = ["LAUNCH_S", "cube_estimate_s", "cube_pays", "stencil_estimate_s"]
