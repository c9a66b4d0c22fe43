"""Reference semantics of every region-free op, on numpy values.

This table is the definition the backends are tested against (through the interpreter)
and the constant folder evaluates with.  Values: scalars are numpy scalars of the exact
dtype (``index`` is ``np.int64``, ``i1`` is ``np.bool_``), tensors and memrefs are numpy
arrays (a memref may be a view; tensor values are never written to).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from pyasc.ir import alias
from pyasc.ir.core import DenseArray, Operation
from pyasc.ir.ops import arith, autodiff, mem, scatter, sort, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.types import DYN, ScalarType, ShapedType, Type, element_type

Evaluator = Callable[..., object]


_DTYPES: dict[str, np.dtype] = {}
"""numpy dtype per scalar type name: the interpreter asks for one per evaluated op."""


def np_dtype(t: Type) -> np.dtype:
    """The numpy dtype of a type's elements."""
    scalar = element_type(t)
    dt = _DTYPES.get(scalar.name)
    if dt is None:
        dt = _DTYPES[scalar.name] = scalar.to_numpy()
    return dt


def as_type(value: object, t: Type) -> object:
    """Coerce a numpy result to the IR type ``t``: a numpy scalar or an array."""
    dt = np_dtype(t)
    if isinstance(t, ScalarType):
        if type(value) is dt.type:  # already exact: most results (and eval_op checks twice)
            return value
        return dt.type(np.asarray(value).reshape(())[()]) if np.ndim(value) == 0 else \
            _not_scalar(value, t)
    arr = np.asarray(value)
    if arr.dtype != dt:
        arr = arr.astype(dt)
    return arr


def _not_scalar(value: object, t: Type) -> object:
    raise ValueError(f"expected a scalar of type {t}, got shape {np.shape(value)}")


def _result_shape(op: Operation, dims: list) -> tuple[int, ...]:
    """Concrete shape of ``op``'s single shaped result, given its dynamic-dim operands."""
    t = op.result.type
    assert isinstance(t, ShapedType)
    it = iter(int(d) for d in dims)
    return tuple(next(it) if d == DYN else d for d in t.shape)


# ---------------------------------------------------------------------------- arith / math

def _binary(fn: Callable) -> Evaluator:
    def ev(op: Operation, a: object, b: object) -> object:
        with np.errstate(all="ignore"):
            return as_type(fn(a, b), op.result.type)
    return ev


def _unary(fn: Callable) -> Evaluator:
    def ev(op: Operation, a: object) -> object:
        with np.errstate(all="ignore"):
            return as_type(fn(a), op.result.type)
    return ev


def _shift(left: bool) -> Evaluator:
    """numpy shift semantics: counts outside [0, width) give 0 (or -1 for negative shr)."""
    def ev(op: Operation, a: object, b: object) -> object:
        width = np_dtype(op.result.type).itemsize * 8
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        ok = (b_arr >= 0) & (b_arr < width)
        safe_b = np.where(ok, b_arr, 0).astype(a_arr.dtype)
        shifted = np.left_shift(a_arr, safe_b) if left else np.right_shift(a_arr, safe_b)
        fallback = np.zeros_like(shifted) if left else np.where(a_arr < 0, -1, 0).astype(
            a_arr.dtype)
        return as_type(np.where(ok, shifted, fallback), op.result.type)
    return ev


def _pow(op: Operation, a: object, b: object) -> object:
    dt = np_dtype(op.result.type)
    with np.errstate(all="ignore"):
        if dt.kind in "iu":
            a_arr, b_arr = np.broadcast_arrays(np.asarray(a), np.asarray(b))
            neg = b_arr < 0
            res = np.power(a_arr, np.where(neg, 0, b_arr).astype(dt))
            # Negative exponents: only 1 and -1 have integer results; the rest give 0.
            special = np.where(a_arr == 1, 1, np.where(a_arr == -1, 1 - 2 * (b_arr % 2), 0))
            return as_type(np.where(neg, special.astype(dt), res), op.result.type)
        # C99 pow for every element: numpy's loop takes sqrt for a stride-0 exponent of
        # 0.5 ((-0)**0.5 = -0); the frontend emits that fast path as math.sqrt itself
        a_arr, b_arr = (np.array(v, ndmin=1) for v in np.broadcast_arrays(a, b))
        res = np.power(a_arr, b_arr).reshape(np.shape(np.broadcast(a, b)))
        return as_type(res, op.result.type)


def _fma(op: Operation, a: object, b: object, c: object) -> object:
    """``a * b + c`` rounded once to float32: the product is exact in float64, the sum
    rounded to float64 (``s``, with its exact error ``e`` by TwoSum); rounding ``s`` to
    float32 is then right unless ``s`` is a float32 midpoint that ``e`` moves off.
    float64: exactly, in rationals (non-finite operands as float64 arithmetic gives)."""
    if np.asarray(a).dtype == np.float64:
        return as_type(np.vectorize(_fma64, otypes=[np.float64])(a, b, c), op.result.type)
    a64, b64, c64 = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(all="ignore"):
        p = a64 * b64
        s = p + c64
        bv = s - p
        e = (p - (s - bv)) + (c64 - bv)
        r = np.asarray(s.astype(np.float32))
        up = s > r
        nb = np.nextafter(r, np.where(up, np.float32(np.inf), np.float32(-np.inf)))
        mid = (r.astype(np.float64) + nb.astype(np.float64)) / 2
        fix = np.isfinite(s) & np.isfinite(nb) & (s == mid) & (e != 0)
        toward = np.where(up, e > 0, e < 0)  # the exact value lies beyond the midpoint
        out = np.where(fix & toward, nb, r)
    return as_type(out.astype(np.float32), op.result.type)


def _fma64(a: float, b: float, c: float) -> float:
    if not all(map(math.isfinite, (a, b, c))):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # IEEE: -0 only for (-0) + (-0), else +0 (round to nearest)
        product_negative = math.copysign(1.0, a) * math.copysign(1.0, b) < 0
        both = (a == 0 or b == 0) and product_negative and math.copysign(1.0, c) < 0
        return -0.0 if both else 0.0
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _erf(x: object) -> object:
    arr = np.asarray(x)
    return np.vectorize(math.erf, otypes=[np.float64])(arr.astype(np.float64)).astype(arr.dtype)


def _sigmoid(x: object) -> object:
    arr = np.asarray(x)
    one = arr.dtype.type(1)
    return one / (one + np.exp(-arr))


def _rsqrt(x: object) -> object:
    arr = np.asarray(x)
    return arr.dtype.type(1) / np.sqrt(arr)


def _cmp(op: Operation, a: object, b: object) -> object:
    fn = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
          "gt": np.greater, "ge": np.greater_equal}[op.attributes["predicate"]]
    return as_type(fn(a, b), op.result.type)


def _cast(op: Operation, a: object) -> object:
    with np.errstate(all="ignore"):
        return as_type(np.asarray(a).astype(np_dtype(op.result.type)), op.result.type)


def _bitcast(op: Operation, a: object) -> object:
    # a same-itemsize view works on any strides, and on 0-d arrays for scalars
    return as_type(np.asarray(a).view(np_dtype(op.result.type)), op.result.type)


def _constant(op: Operation) -> object:
    v = op.attributes["value"]
    if isinstance(v, DenseArray):
        return v.array.astype(np_dtype(op.result.type)).copy()
    return np_dtype(op.result.type).type(v)


ARITH: dict[type[Operation], Evaluator] = {
    arith.ConstantOp: _constant,
    arith.AddOp: _binary(np.add),
    arith.SubOp: _binary(np.subtract),
    arith.MulOp: _binary(np.multiply),
    arith.DivOp: _binary(np.true_divide),
    arith.FloorDivOp: _binary(np.floor_divide),
    arith.RemOp: _binary(np.remainder),
    arith.MaxOp: _binary(np.maximum),
    arith.MinOp: _binary(np.minimum),
    arith.AndOp: _binary(np.bitwise_and),
    arith.OrOp: _binary(np.bitwise_or),
    arith.XorOp: _binary(np.bitwise_xor),
    arith.ShlOp: _shift(left=True),
    arith.ShrOp: _shift(left=False),
    arith.NegOp: _unary(np.negative),
    arith.NotOp: _unary(np.invert),
    arith.CmpOp: _cmp,
    arith.SelectOp: lambda op, c, a, b: as_type(np.where(c, a, b), op.result.type),
    arith.CastOp: _cast,
    arith.BitcastOp: _bitcast,
}

MATH: dict[type[Operation], Evaluator] = {
    m.ExpOp: _unary(np.exp), m.Exp2Op: _unary(np.exp2), m.Expm1Op: _unary(np.expm1),
    m.LogOp: _unary(np.log), m.Log2Op: _unary(np.log2), m.Log10Op: _unary(np.log10),
    m.Log1pOp: _unary(np.log1p), m.SqrtOp: _unary(np.sqrt), m.RsqrtOp: _unary(_rsqrt),
    m.TanhOp: _unary(np.tanh), m.SinOp: _unary(np.sin), m.CosOp: _unary(np.cos),
    m.TanOp: _unary(np.tan), m.AtanOp: _unary(np.arctan), m.ErfOp: _unary(_erf),
    m.FloorOp: _unary(np.floor),
    m.CeilOp: _unary(np.ceil), m.RoundOp: _unary(np.rint), m.TruncOp: _unary(np.trunc),
    m.SigmoidOp: _unary(_sigmoid), m.AbsOp: _unary(np.abs), m.SignOp: _unary(np.sign),
    m.PowOp: _pow, m.IsNanOp: _unary(np.isnan), m.IsInfOp: _unary(np.isinf),
    m.IsFiniteOp: _unary(np.isfinite), m.FmaOp: _fma,
}

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
