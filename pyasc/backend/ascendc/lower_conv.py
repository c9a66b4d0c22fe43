"""The driver's step for a convolution whose im2col runs in L1 (``conv_match`` found it,
``conv_plan`` tiles it, ``emit_conv`` writes the kernel).

Instead of the copy kernel that fills the column matrix and the cube kernel that reads
it back, the host program passes the input as NHWC and the weights as OHWC
(transpose kernels on the vector cores, ``host_xpose``), the conv kernel writes
(N, OH*OW, O), and a third transpose kernel gives the matmul's (N, [1,] O, OH*OW)
result, which the rest of the program reads as before.  Fixpipe does
the epilogue's ReLU and conversion as for a cube kernel; a matmul whose epilogue is a MIX
kernel is one conv MIX kernel (``conv_mix``) whose vector cores write the epilogue's
results in NCHW, so only x and w are transposed.  A zero-padded source is passed
unpadded (``conv_match``: the pads are the kernel's padList); the host ops that would
fill the column matrix and build the padded copy are ``ConvMatch.host_ops``, which the
driver skips.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.backend.ascendc.analysis import SCALAR
from pyasc.backend.ascendc.conv_match import ConvMatch, match_conv
from pyasc.backend.ascendc.conv_mix import plan_conv_mix
from pyasc.backend.ascendc.conv_plan import (
    ConvGeometry,
    ConvL1Plan,
    conv_route_estimate_s,
    plan_conv_l1,
)
from pyasc.backend.ascendc.copy_loops import CopyLoop
from pyasc.backend.ascendc.cube_cost import cube_cost
from pyasc.backend.ascendc.cube_dynamic import is_dynamic
from pyasc.backend.ascendc.cube_match import CubeMatmulOp
from pyasc.backend.ascendc.cube_plan import plan_cube_kernel
from pyasc.backend.ascendc.emit_conv import ConvKernel, param_values
from pyasc.backend.ascendc.host import HostBuilder, Lowering
from pyasc.backend.ascendc.host_vector import prepare_input
from pyasc.backend.ascendc.host_xpose import device_transpose
from pyasc.backend.ascendc.mix_plan import FixpipeEpilogue
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.vec_kernel import VectorKernel
from pyasc.errors import OutOfMemoryError
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import tensor
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import SCALAR_TYPES, MemRefType, TensorType


def find_convs(copies: dict[Operation, CopyLoop], cubes: Sequence[CubeMatmulOp],
               mixed: dict[Operation, tuple[VectorKernel, int]],
               soc: SoC) -> dict[CubeMatmulOp, tuple[ConvMatch, ConvL1Plan]]:
    """The static cube matmuls that are convolutions the L1 route takes, keyed by the
    matmul; their copy loops are ``match.copy``.  A matmul with a MIX epilogue
    (``mixed``: its vector kernel and C's position) is taken when the epilogue's
    retiling for the conv MIX kernel fits UB (``conv_mix``)."""
    cube = soc.cube
    if cube is None:
        return {}
    found = {}
    for op in cubes:
        if is_dynamic(op):
            continue
        for nest, copy in copies.items():
            def fits(g: ConvGeometry, op: CubeMatmulOp = op, copy: CopyLoop = copy) -> bool:
                plan = plan_conv_l1(g, cube)
                return not isinstance(plan, str) and _l1_route_pays(plan, op, copy, soc) and \
                    (op not in mixed or _mix_fits(plan, *mixed[op], soc))

            m = match_conv(copy, op, nest, fits)
            if m is not None:
                plan = plan_conv_l1(m.geo, cube)
                assert not isinstance(plan, str)
                found[op] = (m, plan)
                break
    return found


def _l1_route_pays(plan: ConvL1Plan, op: CubeMatmulOp, copy: CopyLoop, soc: SoC) -> bool:
    """Whether a plan with streamed weights beats the GM route by the first-order
    estimates (``conv_route_estimate_s``: the kernel plus the x, w and y transposes,
    against ``cube_cost`` plus the copy kernel's bytes and a float32 B's transpose):
    with small images and large weights the per-call weight transpose and the re-read
    bands can cost more than the column matrix.  Plans with resident weights always
    take the L1 route (it moves far less for them: benchmarks/RESULTS.md)."""
    cube = soc.cube
    if not plan.stream or cube is None:
        return True
    l1 = conv_route_estimate_s(plan, cube)
    k = plan_cube_kernel(op, soc, "probe")
    gm = cube_cost(k, soc).estimate_s + \
        copy.plan.gm_bytes * (1 + k.host_trans_b) / cube.hbm_bytes_per_s
    return l1 < gm


def _mix_fits(plan: ConvL1Plan, vec: VectorKernel, c_arg: int, soc: SoC) -> bool:
    try:
        plan_conv_mix(plan, vec, c_arg, soc, "probe")
    except OutOfMemoryError:
        return False
    return True


def _transpose(lw: Lowering, v: Value, perm: tuple[int, ...]) -> Value:
    """``v`` permuted by a transpose kernel (``host_xpose``), else by the host."""
    out = device_transpose(lw, v, perm, lw.hb.b.loc)
    if out is not None:
        return lw.hb.to_tensor(out)
    t = v.type
    assert isinstance(t, TensorType)
    shape = tuple(t.shape[p] for p in perm)
    return lw.hb.insert(tensor.TransposeOp([v], [TensorType(shape, t.element)],
                                           {"perm": perm})).result


def _reshape(hb: HostBuilder, v: Value, shape: tuple[int, ...]) -> Value:
    t = v.type
    assert isinstance(t, TensorType)
    return hb.insert(tensor.ReshapeOp([v], [TensorType(shape, t.element)])).result


def _tensor(hb: HostBuilder, v: Value) -> Value:
    return hb.to_tensor(v) if isinstance(v.type, MemRefType) else v


def _nhwc_operands(lw: Lowering, m: ConvMatch, g: ConvGeometry) -> tuple[Value, Value]:
    """The conv kernel's x (NHWC) and weights (OHWC), by transpose kernels."""
    hb = lw.hb
    x = _tensor(hb, lw.env[m.source])
    if x.type.rank == 3:  # type: ignore[attr-defined]
        x = _reshape(hb, x, (1, *x.type.shape))  # type: ignore[attr-defined]
    x = _transpose(lw, x, (0, 2, 3, 1))
    w = _reshape(hb, _tensor(hb, lw.env[m.op.lhs]), (g.o, g.c, g.fh, g.fw))
    return x, _transpose(lw, w, (0, 2, 3, 1))


def lower_conv(lw: Lowering, m: ConvMatch, plan: ConvL1Plan,
               fix: FixpipeEpilogue | None = None) -> None:
    """``m``'s matmul as the conv kernel of ``plan`` (with ``fix``'s ReLU/conversion)."""
    op, g = m.op, plan.geo
    result = op.result.type
    assert isinstance(result, TensorType)
    out = fix.out if fix is not None and fix.out is not None else result.element.name
    k = ConvKernel(lw._name(), plan, out, fix is not None and fix.relu)
    lw.kernels.append(k)
    hb = lw.hb
    hb.b.loc = op.loc
    x, w = _nhwc_operands(lw, m, g)
    elem = SCALAR_TYPES[out]
    shape = (g.n, g.oh * g.ow, g.o)
    y = hb.alloc(shape, elem, [hb.const(d) for d in shape])
    scalars = [hb.const(v) for v in param_values(k)]
    hb.launch(k.name, hb.const(plan.blocks), [x, w, y, *scalars], [2])
    nchw = _transpose(lw, hb.to_tensor(y), (0, 2, 1))
    lw.env[op.result] = _reshape(hb, nchw, result.shape)


def lower_conv_mix(lw: Lowering, m: ConvMatch, plan: ConvL1Plan, vec: VectorKernel,
                   c_arg: int, group: FusionGroupOp) -> None:
    """``m``'s matmul and its epilogue ``group`` (planned as ``vec``) as one conv MIX
    kernel (``conv_mix``): the group's results come out NCHW, no transpose back."""
    k = plan_conv_mix(plan, vec, c_arg, lw.soc, lw._name())
    lw.kernels.append(k)
    hb = lw.hb
    hb.b.loc = group.loc
    x, w = _nhwc_operands(lw, m, plan.geo)
    v = k.vec
    operands = [lw.env.get(u, u) for u in group.inputs]
    dims = [hb.const(d) for d in v.info.space]
    arrays = [prepare_input(hb, i, h, v, dims)
              for j, (i, h) in enumerate(zip(v.inputs, operands, strict=True))
              if i.vv.cls != SCALAR and j != c_arg]
    scalars = [hb.extract_scalar(h) for i, h in zip(v.inputs, operands, strict=True)
               if i.vv.cls == SCALAR]
    outs = []
    for o in v.written:
        t = group.result_values[o.index].type
        assert isinstance(t, TensorType)
        outs.append(hb.alloc(t.shape, t.element, [hb.const(d) for d in t.shape]))
    elem = SCALAR_TYPES[k.conv.out]
    ws = hb.alloc((k.workspace_elems,), elem, [hb.const(k.workspace_elems)])
    args = [x, w, *arrays, *outs, ws, *scalars, *(hb.const(p) for p in param_values(k.conv))]
    first = 2 + len(arrays)
    hb.launch(k.name, hb.const(k.block_dim), args, [*range(first, first + len(outs) + 1)])
    lw.env.update(zip(group.result_values, (hb.to_tensor(o) for o in outs), strict=True))


__all__ = ["find_convs", "lower_conv", "lower_conv_mix"]
