"""Side-effect queries shared by DCE and canonicalize: when may an unused op go away?
(And, for the frontend, :func:`written_arguments`: which parameters a function may
write into.)

An op is *effect-free* when running it can change nothing but its own results:

* ops with the ``pure``, ``view``, ``reads``, ``allocates`` or ``constant`` trait and
  none of ``writes``/``checks`` (an unused read or allocation is not observable);
* terminators of nested regions (``loop.yield``...), whose effect is their parent's;
* ops with regions (``loop.for/while/if``, ``fusion.scope/group``, ``tensor.map``)
  whose nested ops are all effect-free, where writes into buffers allocated inside the
  same op count as free (``func.func`` and ``builtin.module`` never are);
* anything else (``func.call``, ``func.assert``, ``mem.store``, unknown ops) is not.

``loop.for`` additionally needs a constant non-zero step: a zero step is a run-time
error, which removing the loop would hide.  ``loop.while`` is assumed to terminate (as
in MLIR); removing a dead infinite loop is allowed.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.rewrite import constant_value

_FREE_TRAITS = frozenset({"pure", "view", "reads", "allocates", "constant"})
_EFFECT_TRAITS = frozenset({"writes", "checks"})


def _nonzero_constant_step(op: Operation) -> bool:
    step = constant_value(op.operand_values[2])
    return isinstance(step, int) and step != 0


# Extra conditions for removing a region op, by op name.
_REGION_CONDITIONS: dict[str, Callable[[Operation], bool]] = {
    "loop.for": _nonzero_constant_step,
}


def base_buffer(v: Value) -> Value:
    """The buffer a memref value views: follows ``view`` ops to their source."""
    while isinstance(v, OpResult) and v.op.has_trait("view"):
        v = v.op.operand_values[0]
    return v


def _writes_inside(op: Operation, scope: Operation) -> bool:
    """True if ``op`` only writes (or frees) a buffer that ``scope`` allocates itself."""
    dest = op.operand_values[0] if op.has_trait("frees") else getattr(op, "dest", None)
    if not isinstance(dest, Value) or op.has_trait("checks"):
        return False
    base = base_buffer(dest)
    return (isinstance(base, OpResult) and base.op.name == "mem.alloc"
            and scope is not base.op and scope.is_ancestor_of(base.op))


def is_effect_free(op: Operation, scope: Operation | None = None) -> bool:
    """True if running ``op`` has no effect besides defining its results.

    ``scope`` is the outermost op under consideration (writes into buffers it allocates
    are local to it); it defaults to ``op``.
    """
    scope = op if scope is None else scope
    if op.has_trait("isolated") and not op.has_trait("pure"):
        return False  # functions and modules are never "dead"
    if op.traits & _EFFECT_TRAITS:
        return _writes_inside(op, scope)
    if op.has_trait("terminator"):
        return op is not scope
    regions = op.region_list
    if not regions:
        return bool(op.traits & _FREE_TRAITS)
    condition = _REGION_CONDITIONS.get(op.name)
    if condition is not None and not condition(op):
        return False
    return all(is_effect_free(inner, scope) for region in regions
               for block in region.blocks for inner in block.ops)


def is_dead(op: Operation) -> bool:
    """True if ``op``'s results are unused and it is effect-free (so it can be erased)."""
    return not any(r.uses for r in op.result_values) and is_effect_free(op)


_FRESH = frozenset({"mem.alloc", "mem.constant"})
"""Ops whose memref result is memory of its own (no argument's)."""


def written_arguments(func: Operation) -> frozenset[int]:
    """Indices of the memref parameters of ``func`` (a ``func.func``) that a write may
    reach (through views).  Conservative: a write into memory of unknown origin (a loop
    or ``if`` result, ``mem.contiguous``, which may return its source) counts as a write
    into every memref parameter."""
    from pyasc.ir.core import BlockArgument
    from pyasc.ir.types import MemRefType

    entry = func.entry  # type: ignore[attr-defined]
    memrefs = frozenset(a.index for a in entry.args if isinstance(a.type, MemRefType))
    written: set[int] = set()
    for op in func.walk():
        dest = getattr(op, "dest", None) if op.has_trait("writes") else None
        if not isinstance(dest, Value):
            continue
        base = base_buffer(dest)
        if isinstance(base, BlockArgument) and base.block is entry:
            written.add(base.index)
        elif not (isinstance(base, OpResult) and base.op.name in _FRESH):
            return memrefs
    return frozenset(written)
