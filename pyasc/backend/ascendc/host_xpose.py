"""Host side of the device transpose (``xpose_kernel``): which permutations it does and
its launch in the host program.

A permutation that keeps leading axes and swaps the two groups of trailing axes after
them (``(0, 2, 3, 1)`` on NCHW: N kept, C swapped with H, W) is a batched transpose of
the last two axes of the array seen as ``(batch, rows, cols)`` (``(N, C, H*W)``), which
the kernel does on the vector cores.  A permutation of another form, a run-time shape, an
empty array or a dtype ``Gather`` does not take (int8, float64) keeps the host's
transpose (``tensor.transpose``), as before.

The user's own copies of a transposed array take the same kernel: a top-level
``mem.contiguous`` or ``mem.to_tensor`` of a ``mem.transpose`` view of a whole contiguous
array (``np.ascontiguousarray(x.T)``, ``x.transpose(0, 2, 1).copy()``, or the snapshot a
vector kernel reads of ``np.transpose(x, (0, 2, 3, 1)) + 1``), which the host program
did in numpy (the launcher's copy of a non-contiguous view).  A transposed *tensor*
(``tensor.transpose`` of a kernel's result) stays a host view.
"""

from __future__ import annotations

import math

from pyasc.backend.ascendc.host import Lowering
from pyasc.backend.ascendc.xpose_kernel import plan_transpose, transposable
from pyasc.ir.core import Location, Operation, OpResult, Value
from pyasc.ir.ops import mem
from pyasc.ir.types import DYN, MemRefType, TensorType


def batched_swap(shape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[int, int, int] | None:
    """``(batch, rows, cols)`` when ``perm`` of an array of ``shape`` is a transpose of
    the last two axes of its ``(batch, rows, cols)`` view, else None."""
    n = len(perm)
    k = 0
    while k < n and perm[k] == k:
        k += 1
    if k >= n - 1:
        return None  # the identity
    m = perm[k] - k  # the group of rows is axes k .. k+m-1, the columns k+m .. n-1
    want = (*range(k), *range(k + m, n), *range(k, k + m))
    if perm != want:
        return None
    return (math.prod(shape[:k]), math.prod(shape[k:k + m]), math.prod(shape[k + m:]))


def device_transpose(lw: Lowering, v: Value, perm: tuple[int, ...],
                     loc: Location) -> Value | None:
    """``np.transpose(v, perm)`` as a new contiguous array written by a transpose kernel
    (a memref), or None when the kernel does not take it (module docstring)."""
    t = v.type
    if not isinstance(t, TensorType | MemRefType) or DYN in t.shape or math.prod(t.shape) == 0:
        return None
    if not transposable(t.element, lw.soc):
        return None
    dims = batched_swap(tuple(t.shape), tuple(perm))
    if dims is None:
        return None
    k = plan_transpose(*dims, t.element, lw.soc, lw._name(), loc)
    lw.kernels.append(k)
    hb = lw.hb
    shape = tuple(t.shape[p] for p in perm)
    out = hb.alloc(shape, t.element, [hb.const(d) for d in shape])
    hb.launch(k.name, hb.const(k.block_dim), [v, out], [1])
    return out


def swap_last(lw: Lowering, v: Value, loc: Location) -> Value | None:
    """``v`` with its last two axes swapped by a transpose kernel (a tensor), or None."""
    t = v.type
    assert isinstance(t, TensorType | MemRefType)
    n = len(t.shape)
    out = device_transpose(lw, v, (*range(n - 2), n - 1, n - 2), loc)
    return None if out is None else lw.hb.to_tensor(out)


def lower_transpose_copy(lw: Lowering, op: Operation) -> bool:
    """``op``, a host copy of a transposed view of a whole array (module docstring), as a
    transpose kernel launch; False (nothing emitted) when it is not one or the kernel
    does not take it."""
    if not isinstance(op, mem.ContiguousOp | mem.ToTensorOp):
        return False
    src = op.operand_values[0]
    if not isinstance(src, OpResult) or not isinstance(src.owner, mem.TransposeOp):
        return False
    base = src.owner.operand_values[0]
    t = base.type
    if not isinstance(t, MemRefType) or t.strides is not None or base not in lw.env:
        return False
    out = device_transpose(lw, lw.env[base], tuple(src.owner.attributes["perm"]), op.loc)
    if out is None:
        return False
    lw.env[op.result_values[0]] = out if isinstance(op, mem.ContiguousOp) else \
        lw.hb.to_tensor(out)
    return True


__all__ = ["Lowering", "batched_swap", "device_transpose", "lower_transpose_copy",
           "swap_last"]
