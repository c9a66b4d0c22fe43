"""How the AscendC driver lowers one fusion group: a stencil, vector or scalar kernel.

``codegen._Lowering`` inherits :class:`GroupLowering`: grouping asks its ``_probe`` (does
a group plan as one kernel?), and each group the partition yields is lowered by
``_group``: a stencil kernel when ``stencil-windows`` marked it, else a vector kernel
(with a twin for run-time shapes it cannot take), else a scalar kernel.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc.analysis import NotVectorizable, body_ops
from pyasc.backend.ascendc.cols_split import split_columns
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.host_stencil import launch_stencil, launch_stencil_dynamic
from pyasc.backend.ascendc.host_vector import launch_vector, space_dims, span_condition
from pyasc.backend.ascendc.render import Kernel
from pyasc.backend.ascendc.scalar_plan import outline
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.stencil_kernel import plan_stencil_kernel
from pyasc.backend.ascendc.vec_collapse import (
    collapse_operands,
    expand_results,
    plan_collapsible,
)
from pyasc.backend.ascendc.vec_kernel import VectorKernel, plan_vector_kernel
from pyasc.errors import OutOfMemoryError
from pyasc.ir.core import Value
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.ops.loop import IfOp, YieldOp


class GroupLowering:
    """The group part of the driver (the attributes below are set by ``_Lowering``)."""

    soc: SoC
    stencils: bool
    kernels: list[Kernel]
    hb: HostBuilder
    env: dict[Value, Value]
    _name: Callable[[], str]
    _launch_scalar: Callable[..., list[Value]]

    def _probe(self, group: FusionGroupOp) -> None:
        """Raises unless ``group`` plans as one vector kernel or one stencil kernel (a
        stencil's windows need no queue each: it holds more of them than a flat one)."""
        try:
            plan_collapsible(group, self.soc, "probe")
        except (NotVectorizable, OutOfMemoryError):
            if not self.stencils or \
                    plan_stencil_kernel(group, self.soc, "probe", marked=False) is None:
                raise

    def _stencil_probe(self, group: FusionGroupOp) -> None:
        if plan_stencil_kernel(group, self.soc, "probe", marked=False) is None:
            raise NotVectorizable("not a stencil kernel", group.loc)

    def _group(self, group: FusionGroupOp) -> None:
        if self._stencil(group):
            return
        try:
            k, collapsed = plan_collapsible(group, self.soc, self._name())
        except NotVectorizable as exc:
            block = group.body.blocks[0]
            body = [op for op in block.ops if op.name != "fusion.yield"]
            assert block.terminator is not None
            fn = outline(body, list(block.args), list(block.terminator.operand_values))
            self._launch_scalar(fn, list(group.inputs), list(group.result_values),
                                exc.reason, exc.loc or group.loc)
            return
        self.kernels.append(k)
        if k.alt is not None:  # the long-rows twin of a run-time row length
            self.kernels.append(k.alt)
        self.hb.b.loc = group.loc
        inputs = [self.env[v] for v in group.inputs]
        if collapsed is not None:  # the 2-D form of a plane broadcast over leading axes
            inputs, full = collapse_operands(self.hb, collapsed, inputs)
        types = [r.type for r in k.group.result_values]
        dims = space_dims(self.hb, k, inputs)
        fits = span_condition(self.hb, k, inputs, dims)
        # a narrow tall matrix's column statistics: one split kernel per pass
        split = split_columns(self.hb, k, self.soc, self.kernels, self._name,
                              fits is None and collapsed is None and k.alt is None)
        if split is not None:
            results = split(inputs, dims)
        elif fits is None:
            results = launch_vector(self.hb, k, inputs, self.soc, types, dims)
        else:
            results = self._with_twin(k.group, k, fits, inputs, dims)
        if collapsed is not None:
            results = expand_results(self.hb, collapsed, results, full)
        self.env.update(zip(group.result_values, results, strict=True))

    def _stencil(self, group: FusionGroupOp) -> bool:
        """``group`` as a stencil kernel (windows of one array loaded once per tile) when
        it is one (marked by ``stencil-windows``); False leaves it to the vector kernel."""
        k = plan_stencil_kernel(group, self.soc, self._name())
        if k is None:
            return False
        self.kernels.append(k)
        self.hb.b.loc = group.loc
        inputs = [self.env[v] for v in group.inputs]
        if not k.dynamic:
            results = launch_stencil(self.hb, k, self.env, inputs)
        else:  # beside it a twin, for shapes the stencil does not take
            results = launch_stencil_dynamic(self.hb, k, self.env, inputs,
                                             self.soc.vector_blocks, self._stencil_twin(group))
        self.env.update(zip(group.result_values, results, strict=True))
        return True

    def _stencil_twin(self, group: FusionGroupOp
                      ) -> Callable[[HostBuilder, list[Value]], list[Value]] | None:
        """What runs a run-time stencil's shapes the stencil kernel does not take (windows
        past their base): the group's ``flat`` kernel, or None when it does not plan (a
        bilateral filter's 121 windows are more inputs than one flat kernel's TPipe; its
        windows are in bounds whenever it has work: it is a batched loop)."""
        types = [r.type for r in group.result_values]
        try:
            flat = plan_vector_kernel(group, self.soc, f"{self.kernels[-1].name}_flat")
            if flat.alt is not None or any(c.result is None for c in flat.spans.checks):
                raise NotVectorizable("the flat kernel needs a twin of its own", group.loc)
        except NotVectorizable:
            return None  # host_stencil raises for the shapes the stencil cannot take
        flat.twin = True  # named after the stencil kernel
        self.kernels.append(flat)

        def launch_flat(hb: HostBuilder, operands: list[Value]) -> list[Value]:
            return launch_vector(hb, flat, operands, self.soc, types)
        return launch_flat

    def _with_twin(self, group: FusionGroupOp, k: VectorKernel, fits: Value,
                   inputs: list[Value], dims: list[Value]) -> list[Value]:
        """``if fits: vector kernel else: the group as a scalar kernel`` on the host: the
        scalar twin runs when the run-time shapes broadcast an array the kernel reduces
        (a size-1 axis the space is wider than), which the vector form cannot."""
        types = [r.type for r in group.result_values]
        branch = self.hb.insert(IfOp.empty(fits, types, group.loc))
        then = HostBuilder(branch.then_region.blocks[0], group.loc)
        then.insert(YieldOp(launch_vector(then, k, inputs, self.soc, types, dims)))
        block = group.body.blocks[0]
        assert block.terminator is not None
        fn = outline(body_ops(group), list(block.args), list(block.terminator.operand_values))
        other = HostBuilder(branch.else_region.blocks[0], group.loc)
        reason = (f"the run-time shapes broadcast an array that kernel {k.name} reduces "
                  "(its vector form needs the array to span the kernel's space)")
        results = self._launch_scalar(fn, list(group.inputs), list(group.result_values),
                                      reason, group.loc, hb=other, warn=False)
        other.insert(YieldOp(results))
        return list(branch.result_values)
