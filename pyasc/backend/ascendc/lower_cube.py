"""The driver's steps for cube matmuls and copy loops: plan the kernel, record it, and
emit its launch into the host program (``codegen._Lowering`` calls these).

A static-shape ``cube_matmul`` is planned by ``cube_plan`` and launched by
``host_cube``; a run-time-shape one gets the one plan of ``cube_dynamic`` and an ``if``
on the host between its launch and the scalar twin (``host_dynamic``).  A MIX kernel
of run-time shapes has the unfused pair as its twin (the dynamic cube kernel, then the
epilogue group as the vector kernel it would be without fusion); a cube kernel of
run-time shapes whose Fixpipe does the epilogue has the scalar matmul and that vector
kernel.  A loop of window copies is the DMA kernel of ``copy_loops``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pyasc.backend.ascendc import host
from pyasc.backend.ascendc.copy_loops import CopyLoop
from pyasc.backend.ascendc.cube_dynamic import is_dynamic, plan_dynamic, reference_ops
from pyasc.backend.ascendc.cube_match import QUANT, CubeMatmulOp
from pyasc.backend.ascendc.cube_plan import CubeKernel, plan_cube_kernel
from pyasc.backend.ascendc.emit_copy import launch_copy
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.host_cube import Swap, launch_cube, launch_mix, swapped
from pyasc.backend.ascendc.host_dynamic import host_views, launch_dynamic, launch_mix_dynamic
from pyasc.backend.ascendc.host_xpose import swap_last
from pyasc.backend.ascendc.mix_plan import FixpipeEpilogue, plan_mix_kernel
from pyasc.backend.ascendc.scalar_plan import outline
from pyasc.backend.ascendc.vec_kernel import VectorKernel
from pyasc.ir.core import Location, Value
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import SCALAR_TYPES, TensorType


class Lowering(host.Lowering, Protocol):
    """What these steps use of the driver: ``host.Lowering`` and its scalar kernels."""

    def _scalar(self, item: Any) -> None: ...

    def _group(self, group: FusionGroupOp) -> None: ...

    def _launch_scalar(self, fn: FuncOp, inputs: list[Value], outputs: list[Value],
                       reason: str, loc: Location, region: Sequence | None = None,
                       hb: HostBuilder | None = None, warn: bool = True) -> list[Value]: ...


def lower_cube(lw: Lowering, op: CubeMatmulOp, fix: FixpipeEpilogue | None = None,
               group: FusionGroupOp | None = None) -> None:
    """``op`` as a cube kernel launch (with the scalar twin for run-time shapes);
    ``fix``: the ReLU and conversion of its epilogue ``group``, done by Fixpipe."""
    if is_dynamic(op):
        _lower_dynamic(lw, op, fix, group)
        return
    k = plan_cube_kernel(op, lw.soc, lw._name())
    result = _fixpipe(k, op, fix)
    lw.kernels.append(k)
    lw.hb.b.loc = op.loc
    lhs, rhs = (lw.env[v] for v in op.operand_values)
    lw.env[op.result] = launch_cube(lw.hb, k, lhs, rhs, result, _swap(lw, op.loc))


def _swap(lw: Lowering, loc: Location) -> Swap:
    """An operand's last two axes swapped by a transpose kernel where it takes the
    operand (a b32 operand LoadData cannot transpose), else by the host."""
    def swap(v: Value) -> Value:
        out = swap_last(lw, v, loc)
        return swapped(lw.hb, v) if out is None else out
    return swap


def _fixpipe(k: CubeKernel, op: CubeMatmulOp, fix: FixpipeEpilogue | None) -> TensorType:
    """Set Fixpipe's ReLU and conversion of ``fix`` on ``k``; the type it writes."""
    result = op.result.type
    assert isinstance(result, TensorType)
    if fix is not None:
        k.relu = fix.relu
        if fix.out is not None:
            k.out = SCALAR_TYPES[fix.out]
            k.quant = QUANT[(k.dtype.name, fix.out)]
            result = TensorType(result.shape, k.out)
    return result


def _lower_dynamic(lw: Lowering, op: CubeMatmulOp, fix: FixpipeEpilogue | None = None,
                   group: FusionGroupOp | None = None) -> None:
    cube = lw.soc.cube
    assert cube is not None
    k = plan_dynamic(op, lw.soc, lw._name())
    result = _fixpipe(k, op, fix)
    lw.kernels.append(k)
    lw.hb.b.loc = op.loc
    lhs, rhs = (lw.env[v] for v in op.operand_values)

    def twin(hb: HostBuilder) -> Value:
        c = _scalar_matmul(lw, op, k.name, hb, lhs, rhs)
        if fix is None:
            return c
        assert group is not None  # Fixpipe's epilogue: its group as a vector kernel
        lw.env[op.result] = c
        _lowered_in(lw, hb, lambda: lw._group(group))
        return lw.env[group.result_values[0]]

    lw.env[op.result] = launch_dynamic(lw.hb, k, op, lhs, rhs, cube.cores, twin, result)


def _scalar_matmul(lw: Lowering, op: CubeMatmulOp, name: str, hb: HostBuilder, lhs: Value,
                   rhs: Value) -> Value:
    """``op`` as a scalar kernel in ``hb``: the twin of cube kernel ``name``."""
    reason = (f"the run-time shapes are outside the limits of cube kernel {name} "
              "(K = 0, a row longer than 65535 elements or a size beyond int32)")
    inputs = host_views(hb, op, lhs, rhs)
    ops, result = reference_ops(op, *inputs)
    fn = outline(ops, inputs, [result])
    lw.env.update({v: v for v in inputs})   # host values: the launch looks them up
    return lw._launch_scalar(fn, inputs, [result], reason, op.loc, hb=hb, warn=False)[0]


def _lowered_in(lw: Lowering, hb: HostBuilder, lower: Callable[[], object]) -> None:
    """Run ``lower`` (driver steps that emit into ``lw.hb``) emitting into ``hb``, a
    branch of the host program (a twin)."""
    outer = lw.hb
    lw.hb = hb
    try:
        lower()
    finally:
        lw.hb = outer


def lower_mix(lw: Lowering, op: CubeMatmulOp, vec: VectorKernel, c_arg: int,
              group: FusionGroupOp) -> None:
    """``op`` and its epilogue ``group`` (planned as ``vec``) as one MIX kernel launch."""
    k = plan_mix_kernel(op, vec, c_arg, lw.soc, lw._name())
    lw.kernels.append(k)
    lw.hb.b.loc = group.loc
    lhs, rhs = (lw.env[v] for v in op.operand_values)
    operands = [lw.env.get(v, v) if j != c_arg else v for j, v in enumerate(group.inputs)]
    types = [r.type for r in group.result_values]
    if k.dynamic:
        cube = lw.soc.cube
        assert cube is not None

        def unfused(hb: HostBuilder) -> list[Value]:
            _lowered_in(lw, hb, lambda: (_lower_dynamic(lw, op), lw._group(group)))
            return [lw.env[r] for r in group.result_values]

        results = launch_mix_dynamic(lw.hb, k, op, lhs, rhs, operands, types, cube.cores,
                                     unfused)
    else:
        results = launch_mix(lw.hb, k, lhs, rhs, operands, types, _swap(lw, group.loc))
    lw.env.update(zip(group.result_values, results, strict=True))


def lower_copy(lw: Lowering, c: CopyLoop) -> None:
    """A loop of window copies as one copy kernel launch."""
    k = c.plan
    k.name = lw._name()
    lw.kernels.append(k)
    lw.hb.b.loc = k.loc
    launch_copy(lw.hb, k, lw.env[c.src], lw.env[c.dst], lw.soc)


__all__ = ["Lowering", "lower_copy", "lower_cube", "lower_mix"]
