"""Plan an entry function's calling convention before emitting code.

Decides, from the loop-level IR alone: each parameter's slot and layout class, whether
the kernel writes into it, and for each result where its memory comes from.  A result
array is traced back through views (``subview``, ``transpose``, ``reshape``) to its root:

* a parameter: the result is the caller's own array (``"param"``) or a view of it;
* a ``mem.alloc`` in the function's entry block whose dims are static, dims of
  parameters or integer parameters (and that is never deallocated): the runtime
  preallocates it with ``np.empty`` (numpy owns the memory: returning it costs nothing);
* any other ``mem.alloc``, or a loop/if result that may hold one of several
  allocations (buffers carried through loops): the kernel allocates it and hands the
  pointer to the runtime, which frees it when the returned array dies;
* a loop/if result that holds one of several parameters (``x if c else y``): the
  runtime returns whichever argument object the result descriptor points into;
* a result (or a view of one) whose memory may be one of several allocations, one
  made in a loop or on some paths only, or an allocation or a parameter's (``r =
  t.reshape(..) if c else np.zeros(..)``, ``y = x if c else np.zeros_like(x)``, ``r =
  t[5:15]`` for a ``t`` made in each iteration): those allocations are *tracked*
  (``tracked_allocations``): the kernel links each into the call's list and, at
  return, stores in the result's buffer slot the allocation the result lies in and
  frees the others (``tracking.py``).  The runtime compares the result's data pointer
  with the arguments' memory (``choices``): all of an argument is returned as the
  caller's own object, a pointer into one as a view of it, anything else is a view
  of the handed-over allocation (``runtime.results.pick_view``).  A single allocation
  in the entry block of known dims (a result that is it or an argument) is
  preallocated instead;
* a ``mem.constant``: read-only kernel memory, copied out by the runtime.

Anything else (say, a constant chosen at run time) is an internal error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pyasc.errors import InternalCompilerError
from pyasc.ir.core import BlockArgument, Operation, OpResult, Region, Value
from pyasc.ir.ops import loop, mem
from pyasc.ir.ops.func import FuncOp, ReturnOp
from pyasc.ir.passes.dealloc import may_be_freed, never_freed
from pyasc.ir.passes.parallel_safe import splittable
from pyasc.ir.types import MemRefType, ScalarType
from pyasc.runtime.abi import BufferSpec, ParamSpec, ResultSpec

VIEW_OPS = (mem.SubviewOp, mem.TransposeOp, mem.ReshapeOp)


@dataclass
class EntryPlan:
    """Slots, result roots and result buffers of one entry function."""

    params: list[ParamSpec]
    results: list[ResultSpec]
    buffers: list[BufferSpec]
    buffer_of_alloc: dict[Operation, int] = field(default_factory=dict)  # preallocated
    buffer_base: list[Value] = field(default_factory=list)  # value holding each buffer
    arg_slots: int = 0
    result_slots: int = 0
    owner: dict[Value, int] = field(default_factory=dict)  # allocation -> its buffer
    tracked: set[Operation] = field(default_factory=set)  # allocs in the call's list
    settle: list[tuple[Value, int]] = field(default_factory=list)  # result -> its buffer
    error_slot: int = -1  # first slot of the error record (errrecord.py); -1: none


def root_of(v: Value) -> Value:
    """Follow view ops back to the value that owns the memory."""
    while isinstance(v, OpResult) and isinstance(v.op, VIEW_OPS):
        v = v.op.operand_values[0]
    return v


def plan_entry(func: FuncOp, result_params: Sequence[int | None] = ()) -> EntryPlan:
    """The calling-convention plan of ``func`` (see the module docstring)."""
    params, arg_slots = _plan_params(func)
    ret = func.entry.terminator
    if not isinstance(ret, ReturnOp):
        raise InternalCompilerError(f"function '{func.sym_name}' does not end in func.return")
    plan = EntryPlan(params, [], [], arg_slots=arg_slots)
    listed = tracked_allocations(func, ret.operand_values) | _dropped(func)
    plan.tracked = {a.op for a in listed}  # type: ignore[attr-defined]
    slot = 0
    for j, v in enumerate(ret.operand_values):
        forced = result_params[j] if j < len(result_params) else None
        spec, slot = _plan_result(func, plan, v, slot, forced)
        plan.results.append(spec)
    for i, b in enumerate(plan.buffers):
        plan.buffers[i] = BufferSpec(slot + i, b.prealloc, b.dtype, b.shape, b.dim_sources,
                                     b.shares)
    plan.result_slots = slot + len(plan.buffers)
    return plan


def _plan_params(func: FuncOp) -> tuple[list[ParamSpec], int]:
    written = _written_params(func)
    out: list[ParamSpec] = []
    slot = 0
    for i, arg in enumerate(func.entry.args):
        name = arg.name_hint or f"arg{i}"
        t = arg.type
        if isinstance(t, ScalarType):
            out.append(ParamSpec(name, "scalar", t.name, slot))
            slot += 1
        elif isinstance(t, MemRefType):
            out.append(ParamSpec(name, "array", t.element.name, slot, tuple(t.shape),
                                 None if t.strides is None else tuple(t.strides),
                                 i in written))
            slot += 1 + 2 * t.rank
        else:
            raise InternalCompilerError(
                f"parameter {name} of '{func.sym_name}' has type {t}; the CPU backend takes "
                "scalars and memrefs (was lower-to-loops run?)")
    return out, slot


def _written_params(func: FuncOp) -> set[int]:
    """Parameters a ``mem.store`` may write into (through views and loop/if results)."""
    written: set[int] = set()
    for op in func.walk():
        if isinstance(op, mem.StoreOp):
            roots = origins(func, op.dest, set(), views=True) or {root_of(op.dest)}
            written |= {r.index for r in roots if _is_param(func, r)}  # type: ignore
    return written


def _plan_result(func: FuncOp, plan: EntryPlan, v: Value, slot: int,
                 forced: int | None) -> tuple[ResultSpec, int]:
    t = v.type
    if forced is not None:
        return ResultSpec("param", _elem(t), -1, param=forced), slot
    if isinstance(t, ScalarType):
        return ResultSpec("scalar", t.name, slot), slot + 1
    if not isinstance(t, MemRefType):
        raise InternalCompilerError(f"'{func.sym_name}' returns a {t}; expected a scalar or memref")
    root = root_of(v)
    if isinstance(root, BlockArgument) and root.block is func.entry:
        if root is v:
            return ResultSpec("param", t.element.name, -1, t.rank, param=root.index), slot
        return ResultSpec("array", t.element.name, slot, t.rank, param=root.index), \
            slot + 1 + 2 * t.rank
    if isinstance(root, OpResult) and root.op.name == "mem.constant":
        return ResultSpec("array", t.element.name, slot, t.rank, copy=True), \
            slot + 1 + 2 * t.rank
    found = origins(func, root, set())
    if _in_list(func, plan, v):
        return _settled_result(func, plan, v, slot)
    if found and root is v and all(_is_param(func, o) for o in found):
        # ``x if c else y``: one of several arguments, told apart at run time
        choices = tuple(sorted(o.index for o in found))  # type: ignore[attr-defined]
        return ResultSpec("param", t.element.name, slot, t.rank, param=choices[0],
                          choices=choices), slot + 1 + 2 * t.rank
    chosen = _chosen_at_run_time(func, plan, root, found)
    if chosen is not None:
        choices, buf = chosen
        return ResultSpec("array", t.element.name, slot, t.rank, buffer=buf,
                          choices=choices), slot + 1 + 2 * t.rank
    buf = _buffer_for(func, plan, root, found)
    if root is v and plan.buffers[buf].prealloc:
        return ResultSpec("buffer", t.element.name, -1, t.rank, buffer=buf), slot
    return ResultSpec("array", t.element.name, slot, t.rank, buffer=buf), \
        slot + 1 + 2 * t.rank


def _chosen_at_run_time(func: FuncOp, plan: EntryPlan, root: Value,
                        found: set[Value] | None) -> tuple[tuple[int, ...], int | None] | None:
    """For a result whose memory may be a parameter's (or a view of one), or a view of
    one allocation made once in the entry block, that the runtime preallocates: the
    parameters and the buffer of the allocation (if any).  (Results that may be in
    other allocations are in the call's list: ``tracked_allocations``.)"""
    if found is not None and not any(_is_param(func, o) for o in found):
        return None  # allocations only: an ordinary result buffer
    roots = origins(func, root, set(), views=True)
    if not roots:
        return None
    params = tuple(sorted(o.index for o in roots if _is_param(func, o)))  # type: ignore
    allocs = [o for o in roots if not _is_param(func, o)]
    if not allocs:
        return params, None
    if len(allocs) != 1 or not _preallocated(func, allocs[0]):
        raise InternalCompilerError(f"'{func.sym_name}' may return a buffer it frees")
    return params, _buffer_for(func, plan, allocs[0], set(allocs))


def tracked_allocations(func: FuncOp, results: Sequence[Value]) -> set[Value]:
    """The allocations the call's list holds (``tracking.py``): those of every result
    that may be a view of one of several allocations, of one made in a loop or on some
    paths only, or of an allocation or an argument's memory, told apart at run time.
    An allocation some ``mem.dealloc`` may free is never listed (those results keep the
    buffers of ``_buffer_for``).  Closed: a result in a listed allocation is settled."""
    freed = may_be_freed(func)
    per_result = []
    for v in results:
        roots = origins(func, v, set(), views=True) if isinstance(v.type, MemRefType) else None
        allocs = {o for o in roots or () if not _is_param(func, o)}
        if allocs and not allocs & freed:
            per_result.append((v, roots, allocs))
    listed: set[Value] = set()
    for v, roots, allocs in per_result:
        if not _fixed_buffer(func, v, roots, allocs):
            listed |= allocs
    while True:  # a result sharing an allocation with a listed one is settled too
        more = {a for _, _, allocs in per_result if allocs & listed for a in allocs}
        if more <= listed:
            return listed
        listed |= more


def _dropped(func: FuncOp) -> set[Value]:
    """Allocations that escape a loop or a branch but that nothing frees or returns
    (``dealloc.never_freed``): the call's list frees them at return.  Not those made in
    a loop the backend may run on threads (an outlined function of its own)."""
    return {a for a in never_freed(func) if not any(
        isinstance(op, loop.ForOp) and splittable(op) for op in _enclosing(func, a))}


def _enclosing(func: FuncOp, v: Value) -> list[Operation]:
    """The ops whose regions hold the op defining ``v``, innermost first."""
    out = []
    op = v.op if isinstance(v, OpResult) else None
    while op is not None and op.parent is not None and op.parent.parent_op is not func:
        op = op.parent.parent_op
        out.append(op)
    return out


def _fixed_buffer(func: FuncOp, v: Value, roots: set[Value], allocs: set[Value]) -> bool:
    """Whether the result ``v`` lies in one allocation made at most once per call, that
    an ordinary or a preallocated result buffer holds."""
    (alloc,) = allocs if len(allocs) == 1 else (None,)
    if alloc is None or not _once(func, alloc):
        return False
    found = origins(func, root_of(v), set())
    return (found is not None and roots == allocs) or _preallocated(func, alloc)


def _once(func: FuncOp, v: Value) -> bool:
    """Whether the op defining ``v`` runs at most once per call (in no loop)."""
    return not any(isinstance(op, loop.ForOp | loop.WhileOp) for op in _enclosing(func, v))


def _preallocated(func: FuncOp, alloc: Value) -> bool:
    """Whether the runtime can preallocate ``alloc`` (made in the entry block, with dims
    it knows before the call)."""
    return isinstance(alloc, OpResult) and isinstance(alloc.op, mem.AllocOp) and \
        alloc.op.parent is func.entry and _dim_sources(func, alloc.op) is not None


def _in_list(func: FuncOp, plan: EntryPlan, v: Value) -> bool:
    """Whether ``v`` may lie in a tracked allocation (then it lies in no other)."""
    roots = origins(func, v, set(), views=True) or set()
    allocs = [o for o in roots if not _is_param(func, o)]
    listed = [o for o in allocs if getattr(o, "op", None) in plan.tracked]
    if listed and len(listed) < len(allocs):  # one that may be freed: no owner to hand over
        raise InternalCompilerError(f"'{func.sym_name}' may return a buffer it frees")
    return bool(listed)


def _settled_result(func: FuncOp, plan: EntryPlan, v: Value,
                    slot: int) -> tuple[ResultSpec, int]:
    """A result in an allocation of the call's list (or in an argument): its buffer
    slot gets the allocation's pointer at return (``tracking.settle``)."""
    t = v.type
    assert isinstance(t, MemRefType)
    roots = origins(func, v, set(), views=True) or set()
    params = tuple(sorted(o.index for o in roots if _is_param(func, o)))  # type: ignore
    k = len(plan.buffers)
    shares = tuple(b for _, b in plan.settle)  # results may lie in one allocation
    plan.buffers.append(BufferSpec(-1, False, t.element.name, tuple(t.shape), (), shares))
    plan.buffer_base.append(v)
    plan.settle.append((v, k))
    return ResultSpec("array", t.element.name, slot, t.rank, buffer=k, choices=params), \
        slot + 1 + 2 * t.rank


def _buffer_for(func: FuncOp, plan: EntryPlan, root: Value,
                sources: set[Value] | None) -> int:
    """The result buffer held by ``root``: an allocation, or a loop/if result that holds
    one of several allocations (buffers carried through loops, as ``lower-to-loops``
    makes for ``y = f(y)`` in a Python loop)."""
    if root in plan.buffer_base:
        return plan.buffer_base.index(root)
    if not sources or not all(isinstance(o, OpResult) for o in sources):
        raise InternalCompilerError(
            f"cannot tell which buffer a result of '{func.sym_name}' returns ({root.type}); "
            "results must be parameters, allocations or views of them")
    idx = len(plan.buffers)
    # allocations another result's buffer already holds (``t2 = row`` and ``row`` maybe
    # rebound): this buffer's pointer may be theirs, so the runtime must not own it twice
    shares = tuple(sorted({plan.owner[s] for s in sources if s in plan.owner}))
    for src in sources:
        plan.owner.setdefault(src, idx)
        if any(u.name == "mem.dealloc" for u, _ in src.uses) and src is root:
            raise InternalCompilerError(f"'{func.sym_name}' returns a buffer it deallocates")
    alloc = None if shares else _single_alloc(root, sources)
    t = (alloc.result if alloc is not None else root).type  # the allocation's own shape
    assert isinstance(t, MemRefType)
    dims = _dim_sources(func, alloc) if alloc is not None and alloc.parent is func.entry \
        else None
    plan.buffers.append(BufferSpec(-1, dims is not None, t.element.name, tuple(t.shape),
                                   dims or (), shares))
    plan.buffer_base.append(root)
    if dims is not None:
        plan.buffer_of_alloc[alloc] = idx
    return idx


def _single_alloc(root: Value, sources: set[Value]) -> Operation | None:
    """The one ``mem.alloc`` whose memory ``root`` holds (itself, or the only source of
    a loop/if result that is never freed), or ``None``."""
    if isinstance(root, OpResult) and isinstance(root.op, mem.AllocOp):
        return root.op
    if len(sources) != 1:
        return None
    (src,) = sources
    if not isinstance(src, OpResult) or not isinstance(src.op, mem.AllocOp) or \
            any(u.name == "mem.dealloc" for u, _ in src.uses):
        return None
    return src.op


def origins(func: FuncOp, v: Value, seen: set[Value], views: bool = False
            ) -> set[Value] | None:
    """The allocations (``mem.alloc`` results) and parameters ``v`` may hold, through
    loop-carried values and if results (and through view ops if ``views``: the values
    whose memory ``v`` may point into); ``None`` if it may hold anything else."""
    if views:
        v = root_of(v)
    if v in seen:
        return set()
    seen.add(v)
    if isinstance(v, OpResult) and isinstance(v.op, mem.AllocOp) or _is_param(func, v):
        return {v}
    carried = _carried_from(v)
    if not carried:
        return None
    out: set[Value] = set()
    for src in carried:
        found = origins(func, src, seen, views)
        if found is None:
            return None
        out |= found
    return out


def _is_param(func: FuncOp, v: Value) -> bool:
    return isinstance(v, BlockArgument) and v.block is func.entry


def _carried_from(v: Value) -> list[Value]:
    """The values a loop/if result or a loop block argument may take."""
    if isinstance(v, OpResult) and isinstance(v.op, loop.IfOp):
        return [_yielded(r, v.index) for r in (v.op.then_region, v.op.else_region)]
    if isinstance(v, OpResult) and isinstance(v.op, loop.ForOp):
        return [v.op.inits[v.index], _yielded(v.op.body, v.index)]
    if isinstance(v, OpResult) and isinstance(v.op, loop.WhileOp):
        return [_yielded(v.op.before, v.index + 1)]  # operand 0 is the condition
    if isinstance(v, BlockArgument):
        op = v.block.parent_op
        if isinstance(op, loop.ForOp) and v.index > 0:
            return [op.inits[v.index - 1], _yielded(op.body, v.index - 1)]
        if isinstance(op, loop.WhileOp) and v.block is op.before.blocks[0]:
            return [op.inits[v.index], _yielded(op.after, v.index)]
        if isinstance(op, loop.WhileOp):
            return [_yielded(op.before, v.index + 1)]
    return []


def _yielded(region: Region, index: int) -> Value:
    return region.blocks[0].terminator.operand_values[index]


def _dim_sources(func: FuncOp, alloc: Operation) -> tuple[tuple[int, int], ...] | None:
    """Where each dynamic dim of ``alloc`` comes from, if the runtime can compute it
    before the call: a parameter's dim (``mem.dim``) or an integer parameter."""
    out = []
    for v in alloc.operand_values:
        if isinstance(v, BlockArgument) and v.block is func.entry:
            out.append((v.index, -1))
        elif isinstance(v, OpResult) and isinstance(v.op, mem.DimOp):
            src = v.op.source
            if not (isinstance(src, BlockArgument) and src.block is func.entry):
                return None
            out.append((src.index, v.op.attributes["axis"]))
        else:
            return None
    return tuple(out)


def _elem(t: object) -> str:
    if isinstance(t, ScalarType):
        return t.name
    if isinstance(t, MemRefType):
        return t.element.name
    return str(t)
