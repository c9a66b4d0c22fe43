"""The driver's step for a convolution whose im2col runs in L1 (``conv_match`` found it,
``conv_plan`` tiles it, ``emit_conv`` writes the kernel).

Instead of the copy kernel that fills the column matrix and the cube kernel that reads
it back, the host program passes the input as NHWC and the weights as OHWC
(transpose kernels on the vector cores, ``host_xpose``), the conv kernel writes
(N, OH*OW, O), and a third transpose kernel gives the matmul's (N, [1,] O, OH*OW)
result, which the rest of the program reads as before.  Fixpipe does
the epilogue's ReLU and conversion as for a cube kernel; a matmul whose epilogue is a MIX
kernel keeps the GM route (the (O, 1) bias of the NCHW result is not yet re-indexed for
the NHWC tile).  A zero-padded source is passed unpadded (``conv_match``: the pads are
the kernel's padList); the host ops that would fill the column matrix and build the
padded copy are ``ConvMatch.host_ops``, which the driver skips.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.backend.ascendc.conv_match import ConvMatch, match_conv
from pyasc.backend.ascendc.conv_plan import ConvL1Plan, plan_conv_l1
from pyasc.backend.ascendc.copy_loops import CopyLoop
from pyasc.backend.ascendc.cube_dynamic import is_dynamic
from pyasc.backend.ascendc.cube_match import CubeMatmulOp
from pyasc.backend.ascendc.emit_conv import ConvKernel, param_values
from pyasc.backend.ascendc.host import HostBuilder, Lowering
from pyasc.backend.ascendc.host_xpose import device_transpose
from pyasc.backend.ascendc.mix_plan import FixpipeEpilogue
from pyasc.backend.ascendc.soc import SoC
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import tensor
from pyasc.ir.types import SCALAR_TYPES, MemRefType, TensorType


def find_convs(copies: dict[Operation, CopyLoop], cubes: Sequence[CubeMatmulOp],
               mixed: set[Operation], soc: SoC) -> dict[CubeMatmulOp, tuple[ConvMatch, ConvL1Plan]]:
    """The cube matmuls (static, without a MIX epilogue) that are convolutions the L1
    route takes, keyed by the matmul; their copy loops are ``match.copy``."""
    cube = soc.cube
    if cube is None:
        return {}
    found = {}
    for op in cubes:
        if op in mixed or is_dynamic(op):
            continue
        for nest, copy in copies.items():
            m = match_conv(copy, op, nest, lambda g: not isinstance(plan_conv_l1(g, cube), str))
            if m is not None:
                plan = plan_conv_l1(m.geo, cube)
                assert not isinstance(plan, str)
                found[op] = (m, plan)
                break
    return found


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
    x = _transpose(lw, _tensor(hb, lw.env[m.source]), (0, 2, 3, 1))
    w = _reshape(hb, _tensor(hb, lw.env[op.lhs]), (g.o, g.c, g.fh, g.fw))
    w = _transpose(lw, w, (0, 2, 3, 1))
    elem = SCALAR_TYPES[out]
    shape = (g.n, g.oh * g.ow, g.o)
    y = hb.alloc(shape, elem, [hb.const(d) for d in shape])
    scalars = [hb.const(v) for v in param_values(k)]
    hb.launch(k.name, hb.const(plan.blocks), [x, w, y, *scalars], [2])
    nchw = _transpose(lw, hb.to_tensor(y), (0, 2, 1))
    lw.env[op.result] = _reshape(hb, nchw, result.shape)


__all__ = ["find_convs", "lower_conv"]
