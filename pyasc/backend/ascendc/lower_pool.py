"""The driver's steps for pooling loops: plan the pool kernel, record it, and emit its
launch behind the host's checks, with the loop as a scalar kernel for the shapes the
kernel does not take (``codegen._Lowering`` calls these).

A loop of window reductions (``pool_loops``) writes into the array the function
allocated; a loop over kernel taps (``pool_taps``) produces a new array.  When the SoC
lacks an API the kernel needs, the loop is a scalar kernel as before.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.host_pool import launch_pool, launch_taps
from pyasc.backend.ascendc.lower_cube import Lowering
from pyasc.backend.ascendc.partition import ScalarItem
from pyasc.backend.ascendc.pool_kernel import plan_pool_kernel
from pyasc.backend.ascendc.pool_loops import PoolLoop
from pyasc.backend.ascendc.pool_taps import TapLoop
from pyasc.backend.ascendc.scalar_plan import (
    escaping_values,
    external_values,
    is_scalar_constant,
    outline,
)
from pyasc.ir.core import Location, Operation, Value

Twin = Callable[[HostBuilder], list[Value]]


def _scalar_twin(lw: Lowering, ops: list[Operation], reason: str, loc: Location,
                 outs: list[Value]) -> Twin:
    """A builder of the launch of ``ops`` (a nest, and what its kernel fuses after it)
    as a scalar kernel computing ``outs`` into a host branch."""
    inputs = [v for v in external_values(ops) if not is_scalar_constant(v)]
    fn = outline(ops, inputs, outs)

    def scalar(hb: HostBuilder) -> list[Value]:
        return lw._launch_scalar(fn, inputs, outs, reason, loc, ops, hb=hb, warn=False)
    return scalar


def lower_pool(lw: Lowering, p: PoolLoop, nest: Operation) -> None:
    """A loop of window reductions as a pool kernel, behind the host's checks."""
    k = plan_pool_kernel(p, lw.soc, lw._name())
    if k is None:
        lw._scalar(ScalarItem([nest]))
        return
    lw.kernels.append(k)
    lw.hb.b.loc = p.loc
    reason = (f"the run-time window geometry is outside what pool kernel {k.name} "
              "takes (steps, empty windows, sizes past its UB capacity)")
    scalar = _scalar_twin(lw, [nest], reason, p.loc, [])
    launch_pool(lw.hb, k, lw.env, lw.soc.vector_blocks, scalar)


def lower_taps(lw: Lowering, t: TapLoop, nest: Operation) -> None:
    """A loop over kernel taps (``max_pool2d``, ``avg_pool2d``) as a pool kernel, behind
    the host's checks."""
    k = plan_pool_kernel(t, lw.soc, lw._name())
    if k is None:
        lw._scalar(ScalarItem([nest]))
        return
    lw.kernels.append(k)
    lw.hb.b.loc = t.loc
    reason = (f"the run-time views of the taps are outside what pool kernel {k.name} "
              "takes (not one array's window, sizes past its UB capacity)")
    ops, outputs = [nest], escaping_values([nest]) if t.acc is None else []
    if t.group is not None:  # the division after the nest is the kernel's
        ops, outputs = [nest, *t.between, t.group], list(t.group.result_values)
    scalar = _scalar_twin(lw, ops, reason, t.loc, outputs)
    results = launch_taps(lw.hb, k, t, lw.env, lw.soc.vector_blocks, scalar)
    lw.env.update(zip(outputs, results, strict=True))
    # the in-place form's index results are Python's loop variables: constants
    lw.env.update({v: lw.hb.const(n) for v, n in t.last.items()})


__all__ = ["lower_pool", "lower_taps"]
