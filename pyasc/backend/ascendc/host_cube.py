"""Host side of a cube kernel: the output buffer, the operands' layout, the launch.

The tiling (``cube_plan``) is passed as the kernel's int32 parameters
(``emit_cube.params``) rather than baked into its text, as for the vector kernels.  The
operands reach the kernel as stored: transposed views were looked through
(``cube_match``), so no transposing copy is made, except for a b32/b8 operand in the
layout LoadData cannot transpose (float32/int8 A given as A^T, B given as (K, N)): that
one is transposed by a device transpose kernel (``host_xpose``: the vector cores, its
bytes in the counters), or, for a dtype that kernel does not take (int8), by a host
transpose view which the launcher makes contiguous.  The kernel writes C contiguously, batch
by batch, which is numpy's layout of the result whatever its rank.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc.analysis import SCALAR
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.emit_cube import param_values
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.host_vector import prepare_input
from pyasc.backend.ascendc.mix_plan import MixKernel
from pyasc.ir.core import Value
from pyasc.ir.ops import tensor
from pyasc.ir.types import TensorType


def swapped(hb: HostBuilder, v: Value) -> Value:
    """``v`` with its last two axes swapped (a host view)."""
    t = v.type
    assert isinstance(t, TensorType)
    n = t.rank
    perm = (*range(n - 2), n - 1, n - 2)
    shape = tuple(t.shape[p] for p in perm)
    return hb.insert(tensor.TransposeOp([v], [TensorType(shape, t.element)],
                                        {"perm": perm})).result


Swap = Callable[[Value], Value]
"""Makes an operand's last two axes swapped (a device transpose kernel, or ``swapped``)."""


def launch_cube(hb: HostBuilder, k: CubeKernel, lhs: Value, rhs: Value,
                result: TensorType, swap: Swap | None = None) -> Value:
    """Launch ``k`` on ``lhs @ rhs``; returns the result tensor (of type ``result``).
    ``swap`` transposes an operand the kernel needs in the other layout (default: the
    host's view, made contiguous by the launcher)."""
    swap = swap or (lambda v: swapped(hb, v))
    a = swap(lhs) if k.host_trans_a else lhs
    b = swap(rhs) if k.host_trans_b else rhs
    out = hb.alloc(result.shape, result.element, [hb.const(d) for d in result.shape])
    scalars = [hb.const(v) for v in param_values(k)]
    hb.launch(k.name, hb.const(k.block_dim), [a, b, out, *scalars], [2])
    return hb.to_tensor(out)


def launch_mix(hb: HostBuilder, k: MixKernel, lhs: Value, rhs: Value,
               operands: list[Value], result_types: list,  # noqa: ANN001
               swap: Swap | None = None) -> list[Value]:
    """Launch MIX kernel ``k``: ``lhs @ rhs`` and the epilogue on the group's other
    ``operands`` (the matmul result's position is not read); returns the group's
    results.  The workspace holds two ``baseM x baseN`` blocks of C per cube core;
    ``swap`` as for :func:`launch_cube`."""
    cube, vec = k.cube, k.vec
    swap = swap or (lambda v: swapped(hb, v))
    a = swap(lhs) if cube.host_trans_a else lhs
    b = swap(rhs) if cube.host_trans_b else rhs
    dims = [hb.const(d) for d in vec.info.space]
    arrays = [prepare_input(hb, i, h, vec, dims)
              for j, (i, h) in enumerate(zip(vec.inputs, operands, strict=True))
              if i.vv.cls != SCALAR and j != k.c_arg]
    scalars = [hb.extract_scalar(h) for i, h in zip(vec.inputs, operands, strict=True)
               if i.vv.cls == SCALAR]
    outs = []
    for o in vec.written:
        t = result_types[o.index]
        outs.append(hb.alloc(t.shape, t.element, [hb.const(d) for d in t.shape]))
    ws = hb.alloc((k.workspace_elems,), cube.out, [hb.const(k.workspace_elems)])
    cube_args = [hb.const(v) for v in param_values(cube)]
    args = [a, b, *arrays, *outs, ws, *scalars, *cube_args]
    first = 2 + len(arrays)
    hb.launch(k.name, hb.const(k.block_dim), args, [*range(first, first + len(outs) + 1)])
    return [hb.to_tensor(o) for o in outs]


__all__ = ["launch_cube", "launch_mix", "swapped"]
