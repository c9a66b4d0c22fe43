"""Helpers for the ``layout`` and ``memplan`` tests: run the loop-level passes on a
lowered module and compare the interpreter on the tensor-level module, the lowered one
and the optimized one (bit for bit, results and in-place effects), with allocation
tracking on both loop-level runs (leaks, double frees; freed buffers are poisoned, so a
use after free changes results)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from loops_harness import (
    _copy_args,
    assert_loop_level,
    assert_same,
    lower,
    tracked_allocations,
    with_bases,
)

from pyasc.ir import parse_module
from pyasc.ir.core import Operation
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import loop
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes import PassManager
from pyasc.ir.types import DYN, FunctionType, MemRefType, i1, index

PASSES = ("layout", "memplan")


def optimize(module: ModuleOp, passes: Sequence[str] = PASSES) -> ModuleOp:
    """A copy of the loop-level ``module`` after ``passes`` (verified, round-tripped,
    still within the loop-level contract)."""
    copy = parse_module(str(module))
    PassManager(list(passes)).run(copy)
    text = str(copy)
    assert str(parse_module(text)) == text
    assert_loop_level(copy)
    return copy


def run_tracked(module: ModuleOp, args: Sequence, name: str = "f"):
    """Interpret ``module`` on copies of ``args`` with allocation tracking; returns
    (results, arguments after the call)."""
    fresh = _copy_args(args)
    with tracked_allocations() as live:
        results = Interpreter(module).call(name, *fresh)
        returned = {id(r) for r in with_bases(results)}  # a view returns its base
        leaked = set(live) - returned
    assert not leaked, f"{len(leaked)} buffers leaked"
    return results, fresh


def assert_runs_agree(a: tuple[list, list], b: tuple[list, list], rtol: float = 0.0) -> None:
    """Two (results, arguments after) pairs agree (bit for bit unless ``rtol``)."""
    assert len(a[0]) == len(b[0])
    for x, y in zip(a[0], b[0], strict=True):
        assert_same(x, y, rtol)
    for x, y in zip(a[1], b[1], strict=True):
        if hasattr(x, "dtype"):
            assert_same(x, y, rtol)


def check_passes(module: ModuleOp, args: Sequence, passes: Sequence[str] = PASSES,
                 loop_level: bool = False) -> ModuleOp:
    """``module`` (tensor level, or loop level with ``loop_level``) lowered, then
    optimized by ``passes``: the lowered and optimized modules agree bit for bit on
    ``args`` (and with the tensor-level module up to float rounding of the lowering's
    own summation order).  Returns the optimized module."""
    low = module if loop_level else lower(module)
    opt = optimize(low, passes)
    before = run_tracked(low, args)
    assert_runs_agree(before, run_tracked(opt, args))
    if not loop_level:
        fresh = _copy_args(args)
        assert_runs_agree((Interpreter(module).call("f", *fresh), fresh), before, 1e-5)
    return opt


def in_loop(op: Operation) -> bool:
    """True if ``op`` is nested in a ``loop.for`` or ``loop.while``."""
    anc = op.parent_op
    while anc is not None:
        if isinstance(anc, loop.ForOp | loop.WhileOp):
            return True
        anc = anc.parent_op
    return False


def allocs_in_loops(module: ModuleOp) -> int:
    return sum(op.name == "mem.alloc" and in_loop(op) for op in module.walk())


def loop_ivs_innermost(module: ModuleOp) -> list[str]:
    """Name hints of the induction variables of innermost ``loop.for`` ops."""
    out = []
    for op in module.walk():
        if isinstance(op, loop.ForOp) and not any(
                isinstance(o, loop.ForOp) for o in op.walk() if o is not op):
            out.append(op.induction_var.name_hint or "")
    return out


def sample_args(fn_type: FunctionType, rng: np.random.Generator, size: int = 5,
                flag: bool = True) -> list:
    """Arguments for a function of type ``fn_type``: random arrays (``size`` for dynamic
    dims; strided memref types get strided views, alternately reversed), index ``4``,
    ``i1`` ``flag``, other scalars ``0.5``."""
    out: list = []
    for k, t in enumerate(fn_type.inputs):
        if isinstance(t, MemRefType):
            shape = tuple(size if d == DYN else d for d in t.shape)
            arr = random_array(shape, t.element.to_numpy(), rng)
            unit = tuple(s == 1 for s in t.strides or ())
            out.append(arr if t.strides is None else strided_copy(arr, k % 2 == 1, unit))
        elif t == index:
            out.append(4)
        elif t == i1:
            out.append(flag)
        else:
            out.append(t.to_numpy().type(0.5))
    return out


def random_array(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    return rng.integers(0, 50, shape).astype(dt)


def strided_copy(arr: np.ndarray, reverse: bool = False,
                 unit: Sequence[bool] = ()) -> np.ndarray:
    """``arr``'s values in a non-contiguous view: every other element of a larger array
    along each axis (in reverse order with ``reverse``), except the axes flagged in
    ``unit``, which keep stride 1."""
    unit = list(unit) + [False] * (arr.ndim - len(unit))
    big = np.zeros(tuple(d if u else 2 * d + 1
                         for d, u in zip(arr.shape, unit, strict=True)), arr.dtype)
    step = -2 if reverse else 2
    view = big[tuple(slice(None) if u else slice(None, None, step) for u in unit)][
        tuple(slice(0, d) for d in arr.shape)]
    view[...] = arr
    return view


def check_text_case(path: Path, rng: np.random.Generator) -> None:
    """The passes of a text test's ``// RUN:`` line do not change what its function
    ``f`` computes (and leak no more than the input did)."""
    text = path.read_text()
    passes = [p.strip() for p in text.split("// RUN:")[1].splitlines()[0].split(",")]
    module = parse_module(text)
    opt = optimize(module, passes)
    fn_type = module.get("f").function_type
    for flag in (True, False) if i1 in fn_type.inputs else (True,):
        args = sample_args(fn_type, rng, flag=flag)
        before, n_before = run_counting(module, args)
        after, n_after = run_counting(opt, args)
        assert_runs_agree(before, after)
        assert n_after <= n_before


def run_counting(module: ModuleOp, args: Sequence, name: str = "f"):
    """Like :func:`run_tracked`, but returns the number of leaked buffers instead of
    failing on leaks (for inputs that leak on purpose)."""
    fresh = _copy_args(args)
    with tracked_allocations() as live:
        results = Interpreter(module).call(name, *fresh)
        leaked = set(live) - {id(r) for r in with_bases(results)}
    return (results, fresh), len(leaked)
