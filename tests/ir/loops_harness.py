"""Helpers for the ``lower-to-loops`` tests: build tensor-level kernels, lower them, check
the loop-level contract, and compare the interpreter before and after the pass while
tracking every allocation (leaks, double frees and frees of non-allocations fail)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from pyasc.ir import Builder, DenseArray, parse_module
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import func, mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes import PassManager
from pyasc.ir.semantics import EVALUATORS
from pyasc.ir.types import (
    DYN,
    FunctionType,
    MemRefType,
    ScalarType,
    TensorType,
    index,
    scalar_from_numpy,
)

LOOP_LEVEL_OPS = {
    "builtin.module", "func.func", "func.return", "func.assert", "func.call",
    "mem.alloc", "mem.dealloc", "mem.constant", "mem.dim", "mem.load", "mem.store",
    "mem.subview", "mem.transpose", "mem.reshape", "mem.disjoint", "mem.same_view",
    "loop.for", "loop.while", "loop.if", "loop.yield", "loop.condition",
}


def memref_of(arr: np.ndarray, dynamic: bool = False) -> MemRefType:
    """The parameter type the frontend gives ``arr``."""
    shape = tuple(DYN if dynamic else d for d in arr.shape)
    strides = None if arr.flags.c_contiguous else (DYN,) * arr.ndim
    return MemRefType(shape, scalar_from_numpy(arr.dtype), strides)


def build(params: Sequence, body: Callable, name: str = "f") -> ModuleOp:
    """A one-function module; ``body(b, *args)`` returns the values to return.  The
    module goes through print + parse (round trip and verification)."""
    mod = ModuleOp.empty()
    fn = FuncOp.empty(name, list(params), [])
    mod.append(fn)
    b = Builder.at_end(fn.entry)
    results = body(b, *fn.entry.args)
    b.insert(func.ReturnOp(list(results)))
    fn.set_result_types([v.type for v in results])
    return parse_module(str(mod))


def kernel(arrays: Sequence, body: Callable, dynamic: bool = False) -> ModuleOp:
    """Parameters from example arguments (arrays become memrefs snapshotted as tensors,
    Python ints ``index``, numpy scalars their dtype); ``body(b, *values)``."""
    params = [memref_of(a, dynamic) if isinstance(a, np.ndarray) else scalar_type(a)
              for a in arrays]

    def wrapped(b: Builder, *args):
        vals = [to_tensor(b, a) if isinstance(a.type, MemRefType) else a for a in args]
        return body(b, *vals)
    return build(params, wrapped)


def scalar_type(x: object) -> ScalarType:
    if isinstance(x, bool):
        return scalar_from_numpy(np.bool_)
    if isinstance(x, int):
        return index
    if isinstance(x, float):
        return scalar_from_numpy(np.float64)
    return scalar_from_numpy(np.asarray(x).dtype)


def to_tensor(b: Builder, buf):
    return b.insert(mem.ToTensorOp([buf], [buf.type.tensor_type()])).result


def op1(b: Builder, cls, operands, result_type, **attrs):
    """Insert ``cls(operands) -> result_type`` and return its result."""
    return b.insert(cls(list(operands), [result_type], attrs)).result


def dense(b: Builder, array: np.ndarray):
    from pyasc.ir.ops import arith

    t = TensorType(array.shape, scalar_from_numpy(array.dtype))
    return b.insert(arith.ConstantOp([], [t], {"value": DenseArray(array, t)})).result


def lower(module: ModuleOp) -> ModuleOp:
    """A lowered copy of ``module`` (verified after the pass, and round-tripped)."""
    copy = parse_module(str(module))
    PassManager(["lower-to-loops"]).run(copy)
    text = str(copy)
    assert str(parse_module(text)) == text
    return copy


def assert_loop_level(module: ModuleOp) -> None:
    """The loop-level contract: allowed ops only, no tensor anywhere, scalar arith."""
    for op in module.walk():
        family = op.name.split(".")[0]
        assert op.name in LOOP_LEVEL_OPS or family in ("arith", "math"), op.name
        types = [v.type for v in op.operand_values] + [r.type for r in op.result_values]
        types += [a.type for region in op.region_list for blk in region.blocks
                  for a in blk.args]
        if family in ("arith", "math"):
            assert all(isinstance(t, ScalarType) for t in types), op
            assert not isinstance(op.attributes.get("value"), DenseArray)
        assert not any(isinstance(t, TensorType) for t in types), op
        ft = op.attributes.get("function_type")
        if isinstance(ft, FunctionType):
            assert not any(isinstance(t, TensorType) for t in ft.inputs + ft.results)


@contextmanager
def tracked_allocations() -> Iterator[dict[int, np.ndarray]]:
    """Instrument ``mem.alloc``/``mem.dealloc`` in the interpreter; yields the live set
    (id -> array).  Freeing something that is not a live allocation fails."""
    live: dict[int, np.ndarray] = {}
    alloc, dealloc = EVALUATORS[mem.AllocOp], EVALUATORS[mem.DeallocOp]

    def on_alloc(op, *dims):
        arr = alloc(op, *dims)
        live[id(arr)] = arr
        return arr

    def on_dealloc(op, arr):
        assert id(arr) in live, f"dealloc of a buffer that is not live at {op.loc}"
        del live[id(arr)]
        dealloc(op, arr)

    EVALUATORS[mem.AllocOp], EVALUATORS[mem.DeallocOp] = on_alloc, on_dealloc
    try:
        yield live
    finally:
        EVALUATORS[mem.AllocOp], EVALUATORS[mem.DeallocOp] = alloc, dealloc


def _copy_args(args: Sequence) -> list:
    """Fresh copies of the arguments; views keep their exact layout (strides, sign)."""
    return [_copy_array(a) if isinstance(a, np.ndarray) else a for a in args]


def _copy_array(a: np.ndarray) -> np.ndarray:
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is a:
        return a.copy()
    fresh = np.empty(root.nbytes, np.uint8)
    fresh[...] = np.frombuffer(root.tobytes(order="A"), np.uint8)
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return np.ndarray(a.shape, a.dtype, buffer=fresh, offset=offset, strides=a.strides)


def run_both(module: ModuleOp, args: Sequence, name: str = "f"):
    """Interpret ``module`` and its lowered form on copies of ``args``; returns
    (results before, results after, args before, args after, lowered module)."""
    lowered = lower(module)
    assert_loop_level(lowered)
    a0, a1 = _copy_args(args), _copy_args(args)
    before = Interpreter(module).call(name, *a0)
    with tracked_allocations() as live:
        after = Interpreter(lowered).call(name, *a1)
        returned = {id(r) for r in with_bases(after)}  # a view returns its base
        leaked = set(live) - returned
    assert not leaked, f"{len(leaked)} buffers leaked"
    return before, after, a0, a1, lowered


def with_bases(results: Sequence) -> list[np.ndarray]:
    """The arrays among ``results`` and the arrays they are views of."""
    out = []
    for r in results:
        while isinstance(r, np.ndarray):
            out.append(r)
            r = r.base
    return out


def assert_same(x, y, rtol: float = 0.0) -> None:
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, y.dtype, x.shape, y.shape)
    if rtol == 0.0 or x.dtype.kind not in "fc":
        np.testing.assert_array_equal(x, y, strict=True)
    else:
        finite = np.abs(x[np.isfinite(x)].astype(np.float64))
        scale = max(float(np.max(finite, initial=0.0)), 1.0)
        np.testing.assert_allclose(x.astype(np.float64), y.astype(np.float64),
                                   rtol=rtol, atol=rtol * scale, equal_nan=True)


def check(module: ModuleOp, args: Sequence, rtol: float = 0.0) -> ModuleOp:
    """Results and in-place effects agree before and after lowering; returns the
    lowered module."""
    before, after, a0, a1, lowered = run_both(module, args)
    assert len(before) == len(after)
    for x, y in zip(before, after, strict=True):
        assert_same(x, y, rtol)
    for x, y in zip(a0, a1, strict=True):
        if isinstance(x, np.ndarray):
            assert_same(x, y)
    return lowered


def count_ops(module: ModuleOp, name: str) -> int:
    return sum(op.name == name for op in module.walk())


def slice_type(t: TensorType, sizes: Sequence[int], drop: Sequence[int] = ()) -> TensorType:
    return TensorType(tuple(s for a, s in enumerate(sizes) if a not in drop), t.element)

