"""Reference semantics of every region-free op, on numpy values.

This table is the definition the backends are tested against (through the interpreter)
and the constant folder evaluates with.  Values: scalars are numpy scalars of the exact
dtype (``index`` is ``np.int64``, ``i1`` is ``np.bool_``), tensors and memrefs are numpy
arrays (a memref may be a view; tensor values are never written to).  The scalar and
elementwise ops' semantics are ``semantics_arith``'s.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyasc.ir import alias
from pyasc.ir.core import Operation
from pyasc.ir.ops import autodiff, mem, scatter, sort, tensor
from pyasc.ir.semantics_arith import (
    ARITH,
    MATH,
    Evaluator,
    _constant,
    _result_shape,
    as_type,
    np_dtype,
)
from pyasc.ir.types import ScalarType

# ---------------------------------------------------------------------------- tensor / mem


def slice_view(arr: np.ndarray, op: Operation, args: list) -> np.ndarray:
    """The numpy view selected by a ``tensor.slice``/``mem.subview`` op."""
    r = arr.ndim
    offsets, sizes, steps = (list(map(int, args[i * r:(i + 1) * r])) for i in range(3))
    index: list[object] = []
    for off, size, step in zip(offsets, sizes, steps, strict=True):
        stop = off + size * step
        index.append(slice(off, None if stop < 0 else stop, step))
    view = arr[tuple(index)]
    if view.shape != tuple(sizes):
        raise IndexError(f"slice {offsets}/{sizes}/{steps} out of bounds for {arr.shape}")
    drop = op.attributes.get("drop", ())
    if drop:
        view = view[tuple(0 if a in drop else slice(None) for a in range(r))]
    return view


def _reduce(fn: Callable) -> Evaluator:
    def ev(op: Operation, x: np.ndarray) -> object:
        axes = tuple(op.attributes["axes"])
        keep = op.attributes["keepdims"]
        with np.errstate(all="ignore"):
            if fn in (np.sum, np.prod):
                res = fn(x, axis=axes, keepdims=keep, dtype=np_dtype(op.result.type))
            else:
                res = fn(x, axis=axes, keepdims=keep)
        return as_type(res, op.result.type)
    return ev


def _argreduce(fn: Callable) -> Evaluator:
    def ev(op: Operation, x: np.ndarray) -> object:
        axis = op.attributes.get("axis")
        keep = op.attributes.get("keepdims", False)
        return as_type(fn(x, axis=axis, keepdims=keep), op.result.type)
    return ev


def _alloc(op: Operation, *dims: object) -> np.ndarray:
    # Poison fresh buffers so that reading uninitialized memory shows up in tests.
    dt = np_dtype(op.result.type)
    fill = np.nan if dt.kind == "f" else (True if dt.kind == "b" else 0x5A)
    return np.full(_result_shape(op, list(dims)), fill, dtype=dt)


def _dealloc(op: Operation, buf: np.ndarray) -> None:
    # Poison freed buffers so that a use after free shows up in tests.
    dt = buf.dtype
    buf[...] = np.nan if dt.kind == "f" else (True if dt.kind == "b" else 0x5A)


def _write(op: Operation, value: object, dest: np.ndarray) -> None:
    dest[...] = value


def _store(op: Operation, value: object, dest: np.ndarray, *idx: object) -> None:
    dest[tuple(int(i) for i in idx)] = value


def _argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable order along ``axis``, NaN last (also when descending)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    if x.dtype.kind == "f":  # negation is exact and keeps NaN last
        return np.argsort(-x, axis=axis, kind="stable")
    # Stable descending: sort the reversed array, then reverse the order back.
    order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(x.shape[axis] - 1 - order, axis)


def _sort(op: Operation, x: np.ndarray) -> np.ndarray:
    order = _argsort(x, *sort.sort_attrs(op))
    if isinstance(op, sort.ArgSortOp):
        return order.astype(np.int64)
    return np.take_along_axis(x, order, axis=op.attributes["axis"])


def _accumulate(fn: Callable) -> Evaluator:
    def ev(op: Operation, x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(x, axis=op.attributes["axis"], dtype=x.dtype)
    return ev


def leading_indices(idx: tuple, shape: tuple[int, ...],
                    axes: tuple[int, ...] | None = None) -> list[np.ndarray]:
    """Index operands of ``gather_nd``/``scatter`` as in-range ``int64`` arrays
    broadcast together (negative ones wrapped; out of range is numpy's IndexError,
    naming the first bad index and the user's axis from ``axes``)."""
    out = []
    for k, raw in enumerate(idx):
        arr, size = np.asarray(raw), shape[k]
        wide = arr.astype(np.int64)
        bad = (wide >= size) | (wide < -size if arr.dtype.kind == "i" else wide < 0)
        if bad.any():
            axis = axes[k] if axes is not None and k < len(axes) else k
            raise IndexError(f"index {int(wide[bad].flat[0])} is out of bounds for axis "
                             f"{axis} with size {size}")
        out.append(np.where(wide < 0, wide + size, wide))
    try:
        return list(np.broadcast_arrays(*out))
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast "
                         "together") from None


def _gather_nd(op: Operation, x: np.ndarray, *idx: object) -> object:
    return x[tuple(leading_indices(idx, x.shape, op.attributes.get("axes")))]


def _scatter(op: Operation, updates: object, dest: np.ndarray, *idx: object) -> None:
    k = len(idx)
    ids = leading_indices(idx, dest.shape, op.attributes.get("axes"))
    rest = dest.shape[k:]
    flat = [i.reshape(-1) for i in ids]
    if not flat[0].size:
        return
    # one row of updates per index (not reshape(-1, ...): -1 is ambiguous when a dim of
    # `rest` is 0)
    upd = np.broadcast_to(updates, ids[0].shape + rest).reshape((flat[0].size, *rest))
    # The last write to each position wins: keep only its last occurrence.
    lin = np.ravel_multi_index(flat, dest.shape[:k])
    _, first_from_end = np.unique(lin[::-1], return_index=True)
    keep = lin.size - 1 - first_from_end
    dest[tuple(i[keep] for i in flat)] = upd[keep]


TENSOR: dict[type[Operation], Evaluator] = {
    tensor.FillOp: lambda op, v, *d: np.full(_result_shape(op, list(d)), v,
                                               dtype=np_dtype(op.result.type)),
    tensor.ArangeOp: lambda op, start, step, *d: as_type(
        start + np.arange(_result_shape(op, list(d))[0]).astype(np_dtype(op.result.type))
        * step, op.result.type),
    tensor.BroadcastOp: lambda op, x, *d: np.broadcast_to(x, _result_shape(op, list(d))),
    tensor.ReshapeOp: lambda op, x, *d: np.reshape(x, _result_shape(op, list(d))),
    tensor.TransposeOp: lambda op, x: np.transpose(x, op.attributes["perm"]),
    tensor.SliceOp: lambda op, x, *a: slice_view(x, op, list(a)),
    tensor.ExtractOp: lambda op, x, *i: as_type(x[tuple(int(j) for j in i)], op.result.type),
    tensor.DimOp: lambda op, x: np.int64(x.shape[op.attributes["axis"]]),
    tensor.ConcatOp: lambda op, *xs: np.concatenate(xs, axis=op.attributes["axis"]),
    tensor.SumOp: _reduce(np.sum), tensor.ProdOp: _reduce(np.prod),
    tensor.ReduceMaxOp: _reduce(np.max), tensor.ReduceMinOp: _reduce(np.min),
    tensor.AnyOp: _reduce(np.any), tensor.AllOp: _reduce(np.all),
    tensor.ArgMaxOp: _argreduce(np.argmax), tensor.ArgMinOp: _argreduce(np.argmin),
    tensor.MatmulOp: lambda op, a, b: as_type(np.matmul(a, b), op.result.type),
    tensor.GatherOp: lambda op, x, i: as_type(np.take(x, np.asarray(i, dtype=np.int64),
                                                      axis=op.attributes["axis"]),
                                              op.result.type),
    tensor.CompressOp: lambda op, x, mask: x[mask],
    sort.SortOp: _sort, sort.ArgSortOp: _sort,
    sort.CumSumOp: _accumulate(np.cumsum), sort.CumProdOp: _accumulate(np.cumprod),
    scatter.GatherNdOp: _gather_nd,
}

MEM: dict[type[Operation], Evaluator] = {
    mem.AllocOp: _alloc,
    mem.DimOp: lambda op, x: np.int64(x.shape[op.attributes["axis"]]),
    mem.LoadOp: lambda op, x, *i: as_type(x[tuple(int(j) for j in i)], op.result.type),
    mem.StoreOp: _store,
    mem.SubviewOp: lambda op, x, *a: slice_view(x, op, list(a)),
    mem.TransposeOp: lambda op, x: np.transpose(x, op.attributes["perm"]),
    mem.ReshapeOp: lambda op, x, *d: _reshape_view(x, _result_shape(op, list(d))),
    mem.ToTensorOp: lambda op, x: np.array(x, copy=True),
    mem.WriteOp: _write,
    mem.CopyOp: lambda op, src, dst: _write(op, src, dst),
    mem.ContiguousOp: lambda op, x: np.array(x, order="C", copy=True),
    mem.FillOp: _write,
    mem.DeallocOp: _dealloc,
    mem.ConstantOp: lambda op: _constant(op),
    mem.DisjointOp: lambda op, a, b: alias.disjoint(a, b),
    mem.SameViewOp: lambda op, a, b: alias.same_view(a, b),
    scatter.ScatterOp: _scatter,
}


def _reshape_view(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    view = x.view()
    view.shape = shape  # raises instead of silently copying a non-contiguous buffer
    return view


EVALUATORS: dict[type[Operation], Evaluator] = {
    **ARITH, **MATH, **TENSOR, **MEM,
    # only in the IR autodiff reads (where it is dropped): the value itself
    autodiff.StopGradientOp: lambda op, x: x,
}


def register_evaluator(op_class: type[Operation], fn: Evaluator) -> None:
    """Add the semantics of an op defined elsewhere (e.g. by a backend-specific pass)."""
    EVALUATORS[op_class] = fn


def eval_op(op: Operation, operands: list) -> list:
    """Evaluate one region-free op on concrete operand values; returns its results."""
    fn = EVALUATORS.get(type(op))
    if fn is None:
        raise NotImplementedError(f"no reference semantics for '{op.name}'")
    out = fn(op, *operands)
    n = len(op.result_values)
    if n == 0:
        return []
    if n == 1:
        t = op.result.type
        return [as_type(out, t) if isinstance(t, ScalarType) else out]
    return list(out)  # type: ignore[arg-type]
