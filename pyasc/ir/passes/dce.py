"""``dce``: dead code elimination.

Removes, until nothing changes:

* ops whose results are unused and that are effect-free (see ``effects``), including
  whole ``loop.for/while/if`` and ``fusion.scope`` ops whose regions have no effects;
* buffers that are only ever written: an allocation (``mem.alloc``,
  ``mem.contiguous``) whose uses, through views, are all the destination of writes (or
  its ``mem.dealloc``), together with those writes, views and deallocation;
* unused loop-carried values of ``loop.for``: a result that is unused and whose
  iteration argument only feeds (through effect-free ops of the body, or the same kind
  of slot of a nested loop) the yielded values of such results.  A Python loop
  variable still bound after a nest (``for i: for j: ...``) is carried through every
  loop of it; left there, the nest is not a perfect one, which ``layout`` can reorder.

Kept: ``func.assert``, ``mem.store/write/copy/fill`` into live buffers, ``func.call``
and every op the pass knows nothing about.
"""

from __future__ import annotations

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.ops.loop import ForOp, YieldOp
from pyasc.ir.passes.effects import is_dead, is_effect_free
from pyasc.ir.passes.manager import Pass, PassContext, register_pass


def _dest_index(op: Operation) -> int | None:
    names = type(op).operands
    return names.index("dest") if "dest" in names else None


def _write_only_users(buffer: Value) -> list[Operation] | None:
    """Views and writes that are the only uses of ``buffer``, or None if it is read."""
    found: list[Operation] = []
    stack = [buffer]
    while stack:
        v = stack.pop()
        for user, idx in v.uses:
            if user.has_trait("view") and idx == 0:
                stack.extend(user.result_values)
            elif not (user.has_trait("frees") or (
                    user.has_trait("writes") and idx == _dest_index(user)
                    and not user.has_trait("checks"))):
                return None
            found.append(user)
    return found


def _erase_dead_buffer(op: Operation) -> bool:
    users = _write_only_users(op.result)
    if users is None:
        return False
    # Writes first (they use the views), then views, the most derived ones first.
    for user in users:
        if not user.result_values:
            user.erase()
    for user in reversed([u for u in users if u.result_values]):
        user.erase()
    op.erase()
    return True


_FOR_INITS = ForOp.operands.index("inits*")  # operand index of a loop's first init


def _only_feeds_dead(v: Value, dead: set[int], term: Operation,
                     sinks: dict[Operation, bool]) -> bool:
    return all(idx in dead if user is term else
               _through_loop(user, idx - _FOR_INITS, dead, term, sinks)
               if isinstance(user, ForOp) and idx >= _FOR_INITS else sinks.get(user, False)
               for user, idx in v.uses)


def _through_loop(inner: ForOp, slot: int, dead: set[int], term: Operation,
                  sinks: dict[Operation, bool]) -> bool:
    """Whether a value that is ``inner``'s init ``slot`` is dead with it: the inner
    loop's result ``slot`` only feeds dead slots (a Python loop variable carried through
    a nest of loops: ``for i: for j: ...`` with ``j`` live after the nest), and the slot
    is dead inside ``inner`` once that result is unused."""
    return _only_feeds_dead(inner.outputs[slot], dead, term, sinks) and \
        slot in _dead_slots(inner, frozenset({slot}))


def _dead_slots(op: ForOp, assume: frozenset[int] = frozenset()) -> set[int]:
    """Loop-carried slots whose results are unused (or in ``assume``) and whose values
    only flow, through effect-free ops of the body or the same slots of nested loops,
    into the yielded values of such slots."""
    block = op.body.block
    term = block.terminator
    dead = {i for i, r in enumerate(op.outputs) if not r.uses or i in assume}
    while dead:
        # sinks[o]: o's results only feed dead slots; users come later, so walk backwards.
        sinks: dict[Operation, bool] = {}
        for inner in reversed(block.ops[:-1]):
            sinks[inner] = (not inner.region_list and is_effect_free(inner) and all(
                _only_feeds_dead(r, dead, term, sinks) for r in inner.result_values))
        alive = {i for i in dead
                 if not _only_feeds_dead(op.iter_args[i], dead, term, sinks)}
        if not alive:
            break
        dead -= alive
    return dead


def _drop_unused_carried(op: ForOp) -> bool:
    """Rebuild ``op`` without its dead loop-carried values."""
    dead = _dead_slots(op)
    if not dead:
        return False
    keep = [i for i in range(len(op.inits)) if i not in dead]
    block = op.body.block
    term = block.terminator
    block.append(YieldOp([term.operand_values[i] for i in keep], loc=term.loc))
    term.erase()
    for inner in reversed(block.ops[:-1]):  # what fed the dead slots is now unused
        if is_dead(inner):
            inner.erase()
    new = ForOp.empty(op.lower, op.upper, op.step, [op.inits[i] for i in keep],
                      iv_name=op.induction_var.name_hint, loc=op.loc)
    new.attributes = dict(op.attributes)
    new_block = new.body.block
    op.induction_var.replace_all_uses_with(new.induction_var)
    for j, i in enumerate(keep):
        new_block.args[j + 1].name_hint = op.iter_args[i].name_hint
        op.iter_args[i].replace_all_uses_with(new_block.args[j + 1])
    for i in dead:  # left only as inits of nested loops' slots, dead with this one
        op.iter_args[i].replace_all_uses_with(op.inits[i])
    for inner in list(block.ops):
        new_block.append(block.detach(inner))
    op.parent.insert(op.parent.index_of(op), new)
    for j, i in enumerate(keep):
        new.outputs[j].name_hint = op.outputs[i].name_hint
        op.outputs[i].replace_all_uses_with(new.outputs[j])
    op.erase()
    return True


def drop_unused_carried(op: ForOp) -> bool:
    """Rebuild ``op`` without its dead loop-carried values (for passes that leave some);
    returns True if it did."""
    return _drop_unused_carried(op)


def _sweep(op: Operation) -> bool:
    """One bottom-up pass over everything nested in ``op``."""
    changed = False
    for region in op.region_list:
        for block in region.blocks:
            for inner in reversed(list(block.ops)):  # users before their definitions
                if inner.parent is not block:
                    continue  # erased with a dead buffer
                changed |= _sweep(inner)
                if is_dead(inner):
                    inner.erase()
                    changed = True
                elif isinstance(inner, ForOp):
                    changed |= _drop_unused_carried(inner)
                elif inner.has_trait("allocates") and is_effect_free(inner):
                    changed |= _erase_dead_buffer(inner)
    return changed


def eliminate_dead_code(op: Operation) -> bool:
    """Run DCE on everything nested in ``op``; returns True if anything changed."""
    changed = False
    while _sweep(op):
        changed = True
    return changed


@register_pass
class DCE(Pass):
    """Erase unused effect-free ops, write-only buffers and unused loop-carried values."""

    name = "dce"
    description = "dead code elimination"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        eliminate_dead_code(module)
