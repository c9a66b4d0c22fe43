"""Planning a scalar kernel: outline a region, lower it to loops, place its buffers.

The region (a run of ops, or a group the vector schedules reject) is outlined into a
function, lowered with ``lower-to-loops`` (plus ``expand-math`` once that pass exists)
and the loop-level result is split:

* GM arrays (kernel ``GM_ADDR`` parameters): the region's array inputs, its array
  results and large top-level temporaries (allocated by the host: their extents are
  computed from the inputs), constant arrays, one-element buffers for scalar results,
  and a status record per block when the region has run-time checks (the failed
  check's code and the values it reports, ``ScalarKernel.status_stride`` int64 each);
* local arrays: temporaries of static size up to :data:`LOCAL_LIMIT` bytes (kernel stack);
* per-block scratch (``source="scratch"``, ``block_dim`` slices allocated by the host):
  larger static temporaries inside loops or branches, and the carriers of arrays that
  loops and branches carry (:func:`place_carriers`) beyond the stack budget.  A carried
  array that is a region result is carried in its GM result array itself when one
  block runs the kernel;
* everything else is device code, emitted by ``emit_scalar``.

A top-level ``loop.for`` (or the fast copy of a loop ``hoist-checks`` versioned, whose
unchanged copy then runs in block 0 alone) is split across blocks when it is the only
code that writes GM and :func:`~pyasc.ir.passes.parallel_safe.independent` proves its
iterations independent, counting as owned the GM arrays no other array it touches may alias
(local arrays are each block's own: writing one that outlives an iteration keeps the
loop whole).  Every block runs the code around the loop, so that code must not touch
memory the loop writes; and a loop with a run-time check must not write memory the
caller sees (``partial_writes_visible``: a block failing early must not leave later
rows written).  Otherwise one block runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.backend.ascendc.scalar_checks import (
    LOCAL_LIMIT,
    carried_values,
    fresh_result,
    reject_unsupported,
)
from pyasc.backend.ascendc.scalar_f64 import (
    DEMOTE_OPTION,
    demote,
    fold_host_scalars,
    has_float64,
)
from pyasc.backend.ascendc.scalar_kernel import (
    ARENA_BYTES,
    CACHE_LINE,
    GmArray,
    ScalarKernel,
    _Names,
)
from pyasc.backend.ascendc.scalar_split import find_parallel_loop, split_rows
from pyasc.backend.ascendc.soc import SoC, get_soc
from pyasc.backend.ascendc.unsupported import unsupported
from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import func, loop, mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes import PASS_REGISTRY, PassContext, PassManager
from pyasc.ir.types import MemRefType, ScalarType, TensorType

_LOWERING = ("expand-math", "lower-to-loops", "hoist-checks", "canonicalize", "cse", "dce")


def outline(ops: Sequence[Operation], inputs: Sequence[Value], outputs: Sequence[Value],
            mapping: dict[Value, Value] | None = None, name: str = "region") -> FuncOp:
    """A function computing ``outputs`` from ``inputs`` with clones of ``ops``."""
    fn = FuncOp.empty(name, [v.type for v in inputs], [v.type for v in outputs],
                      [v.name_hint for v in inputs], loc=ops[0].loc if ops else None)
    env: dict[Value, Value] = dict(mapping or {})
    for v, arg in zip(inputs, fn.entry.args, strict=True):
        env.setdefault(v, arg)
    for v in external_values(ops):  # scalar constants are cloned, not passed
        if v not in env and is_scalar_constant(v):
            env[v] = fn.entry.append(v.op.clone()).result  # type: ignore[attr-defined]
    for op in ops:
        fn.entry.append(op.clone(env))
    fn.entry.append(func.ReturnOp([env.get(v, v) for v in outputs]))
    return fn


def is_scalar_constant(v: Value) -> bool:
    return isinstance(v, OpResult) and v.op.name == "arith.constant" and \
        isinstance(v.type, ScalarType)


def external_values(ops: Sequence[Operation]) -> list[Value]:
    """Values the ops use that none of them (at any depth) defines, in first-use order."""
    defined: set[Value] = set()
    for op in ops:
        for inner in op.walk():
            defined.update(inner.result_values)
            for region in inner.region_list:
                for block in region.blocks:
                    defined.update(block.args)
    seen: list[Value] = []
    for op in ops:
        for inner in op.walk():
            for v in inner.operand_values:
                if v not in defined and v not in seen:
                    seen.append(v)
    return seen


def escaping_values(ops: Sequence[Operation]) -> list[Value]:
    members = set(ops)
    return [r for op in ops for r in op.result_values
            if any(not _inside_any(u, members) for u, _ in r.uses)]


def _inside_any(user: Operation, members: set[Operation]) -> bool:
    op: Operation | None = user
    while op is not None:
        if op in members:
            return True
        op = op.parent_op
    return False


def lower_region(fn: FuncOp, options: dict[str, object]) -> FuncOp:
    """``fn`` (tensor level) lowered to loop level in a module of its own."""
    module = ModuleOp.empty()
    module.append(fn)
    names = [p for p in _LOWERING if p in PASS_REGISTRY]
    # kernel arrays get no run-time alias tests: a group that may overlap what it
    # writes keeps its temporary (lower_group_inplace)
    PassManager(names).run(module, PassContext(options={**options, "alias_checks": False}))
    return module.get(fn.sym_name)


def plan_scalar_kernel(name: str, fn: FuncOp, inputs: list[Value], outputs: list[Value],
                       distinct: Callable[[int, int], bool], reason: str,
                       options: dict[str, object],
                       private: Callable[[int], bool] = lambda i: False,
                       soc: SoC | None = None) -> ScalarKernel:
    """Lower ``fn`` and place its buffers; ``distinct(i, j)`` says whether array inputs
    ``i`` and ``j`` are known not to alias, ``private(i)`` whether nothing outside the
    region sees input ``i`` after it (a buffer the kernel may treat as its own).  ``soc``
    (default: the default SoC) says how scalar GM writes are flushed."""
    soc = soc or get_soc()
    demoted = None
    if options.get(DEMOTE_OPTION) == "demote" and not soc.float64 and has_float64(fn):
        demoted = demote(fn, fn.loc)
    low = lower_region(fn, {**options, "float64": soc.float64})
    host = fold_host_scalars(low) if not soc.float64 else None
    k = ScalarKernel(name, fn.loc, low, inputs, outputs, reason=reason,
                     dcache_flush=soc.dcache_flush, host_scalars=host, demoted=demoted)
    reject_unsupported(low, private)
    names = _Names()
    for i, arg in enumerate(low.entry.args):
        if isinstance(arg.type, MemRefType):
            k.arrays.append(GmArray(names.new(arg.name_hint or f"in{i}"), arg,
                                    arg.type.element, "input", i))
    _place_results(k, names, private)
    _place_temporaries(k, names)
    k.asserts = [op for op in low.walk() if isinstance(op, func.AssertOp)]
    if k.arena:
        k.arrays.append(GmArray(names.new("workspace"), None, ScalarType("ui8"), "arena"))
    if k.asserts or k.arena:
        k.arrays.append(GmArray(names.new("status"), None, ScalarType("i64"), "status"))
    k.parallel = find_parallel_loop(k, distinct)
    if k.parallel is not None:
        k.split_rows = split_rows(k, k.parallel)
    place_carriers(k, names)
    return k



_CARRY_OPS = (loop.ForOp, loop.WhileOp, loop.IfOp)


def _place_results(k: ScalarKernel, names: _Names, private: Callable[[int], bool]) -> None:
    """GM arrays for the region's results: scalars, top-level allocations and the fresh
    arrays of loops and branches (copied from their carriers at the end)."""
    term = k.fn.entry.terminator
    assert term is not None
    for j, v in enumerate(term.operand_values):
        if isinstance(v, BlockArgument):
            continue  # a parameter returned as it is
        if isinstance(v.type, ScalarType):
            k.arrays.append(GmArray(names.new(f"result{j}"), v, v.type, "scalar", j))
        elif isinstance(v, OpResult) and v.op.parent is k.fn.entry and (
                isinstance(v.op, mem.AllocOp) or isinstance(v.op, _CARRY_OPS) and (
                    isinstance(k.outputs[j].type, TensorType)  # a value: a copy is fine
                    or fresh_result(v, private))):
            k.arrays.append(GmArray(names.new(f"out{j}"), v, v.type.element, "result", j))
        else:
            loc = v.op.loc if isinstance(v, OpResult) else k.loc
            raise unsupported("an array a loop or a branch chose that may alias another "
                              "array (a view on one path), kept beyond device code "
                              "(returned, or used by later code)", loc,
                              hint="copy the view in its branch (x[1:].copy()), or write "
                                   "into a preallocated array")


def _place_temporaries(k: ScalarKernel, names: _Names) -> None:
    for op in k.fn.walk():
        if isinstance(op, mem.ConstantOp):
            k.arrays.append(GmArray(names.new("const"), op.result, op.result.type.element,
                                    "const"))
        if not isinstance(op, mem.AllocOp) or k.array_of(op.result) is not None:
            continue
        t = op.result.type
        assert isinstance(t, MemRefType)
        size = t.num_elements()
        if size is not None and size * t.element.itemsize <= LOCAL_LIMIT:
            k.locals.add(op.result)
        elif op.parent is k.fn.entry:
            k.arrays.append(GmArray(names.new("work"), op.result, t.element, "temp"))
        elif size is not None:  # one live instance per block at a time: a fixed slice
            k.arrays.append(GmArray(names.new("scratch"), op.result, t.element, "scratch"))
        else:
            k.arena.add(op.result)


def place_carriers(k: ScalarKernel, names: _Names) -> None:
    """GM homes of carried arrays that do not stay on the stack (``emit_carry.slot``).

    A carried value that is a region result lives in its GM result array when one
    block runs the kernel (every block would write it otherwise).  The others are local
    arrays while their total stays within ``LOCAL_LIMIT`` bytes, then per-block scratch.
    Carriers are static (``reject_unsupported``)."""
    stack = 0
    for op in k.fn.walk():
        if not isinstance(op, _CARRY_OPS):
            continue
        for v in carried_values(op):
            t = v.type
            assert isinstance(t, MemRefType)
            result = k.array_of(v)
            if result is not None and result.source == "result" and k.parallel is None:
                k.carriers[v] = result
                continue
            size = (t.num_elements() or 0) * t.element.itemsize
            if stack + size <= LOCAL_LIMIT:
                stack += size
            else:
                arr = GmArray(names.new(f"{v.name_hint or 'carry'}_gm"), v, t.element,
                              "scratch")
                k.arrays.append(arr)
                k.carriers[v] = arr


__all__ = ["ARENA_BYTES", "CACHE_LINE", "LOCAL_LIMIT", "GmArray", "ScalarKernel", "escaping_values",
           "external_values", "find_parallel_loop", "is_scalar_constant", "outline",
           "plan_scalar_kernel", "split_rows"]
