"""Host side of a stencil kernel: pass the base arrays themselves, allocate the outputs.

The group's window inputs were snapshots of shifted views (``mem.to_tensor`` of a
``mem.subview``); the stencil kernel reads the arrays they view instead, so the host
passes each base array once and the snapshots become dead (``canonicalize`` drops them).
Shapes are static: the block count is a constant of the kernel's plan.
"""

from __future__ import annotations

from pyasc.backend.ascendc.analysis import SCALAR
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.stencil_kernel import StencilKernel
from pyasc.ir.core import Value
from pyasc.ir.types import TensorType


def launch_stencil(hb: HostBuilder, k: StencilKernel, env: dict[Value, Value],
                   operands: list[Value]) -> list[Value]:
    """Emit the launch of ``k``; ``env`` maps kernel-IR values to host values (the bases
    are kernel-IR buffers), ``operands`` are the group's inputs on the host.  Returns the
    group's results."""
    bases = [env[b.value] for b in k.match.bases]
    bases += [env[k.match.per_plane[p.index]] for p in k.planes_in]  # (planes, 1, 1)
    scalars = [hb.extract_scalar(h) for i, h in zip(k.inputs, operands, strict=True)
               if i.vv.cls == SCALAR]
    outs: list[Value] = []
    for o in k.written:
        t = k.group.result_values[o.index].type
        assert isinstance(t, TensorType)
        outs.append(hb.alloc(t.shape, t.element, [hb.const(d) for d in t.shape]))
    first = len(bases)
    hb.launch(k.name, hb.const(k.blocks), [*bases, *outs, *scalars],
              range(first, first + len(outs)))
    return [hb.to_tensor(buf) for buf in outs]


__all__ = ["launch_stencil"]
