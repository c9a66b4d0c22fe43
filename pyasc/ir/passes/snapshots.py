"""Tensor-level preparation for ``lower-to-loops``: fusion scopes and buffer snapshots.

* :func:`inline_fusion_scopes` replaces every ``fusion.scope`` by its body (fusion is a
  separate, later concern; after lowering a scope is only a grouping).
* :func:`reusable_snapshots` decides which ``mem.to_tensor`` ops may use their buffer
  directly instead of copying it.  Rule: let ``S`` be the snapshot, ``B`` its block and
  ``L`` the last op of ``B`` that contains (at any depth) a use of the snapshot or of a
  value that may alias it (results of ``tensor.slice``/``transpose``/``reshape`` taking
  an alias, and results of a ``fusion.group`` taking one whose yielded value is a view
  chain of a group input: only those can share its buffer; transitively).  The
  buffer is reused iff no op in ``B`` strictly after ``S`` up to and including ``L``
  contains, at any depth, a write to any buffer (an op with the ``writes`` trait —
  ``mem.store/write/copy/fill`` — or a ``func.call``).  ``L`` itself is included
  because it may read the value while it writes (``a[1:] = a[:-1]``), and a loop
  containing a use and a write is included whole because a later iteration reads
  again after an earlier iteration's write.  No alias analysis: a write to *any*
  buffer counts, but for one case of ``L``: a ``mem.write`` into a fresh allocation
  (``cols[:, i] = x[..., i:]`` into ``np.empty``) of a snapshot of a function argument
  or of another allocation cannot overlap what it reads, so ``L`` itself is then left
  out (the slice is copied once, not into a temporary first).
"""

from __future__ import annotations

from pyasc.ir.core import Block, BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import func, mem, tensor
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.effects import base_buffer

_VIEW_OPS = (tensor.SliceOp, tensor.TransposeOp, tensor.ReshapeOp)


def inline_fusion_scopes(fn: FuncOp) -> None:
    """Move the body of every ``fusion.scope`` in ``fn`` in front of it and drop it."""
    for op in list(fn.walk()):
        if isinstance(op, func.FusionScopeOp):
            _inline_scope(op)


def _inline_scope(scope: func.FusionScopeOp) -> None:
    block = scope.parent
    assert block is not None
    body = scope.body.blocks[0]
    term = body.terminator
    assert term is not None
    for op in list(body.ops[:-1]):
        body.detach(op)
        block.insert(block.index_of(scope), op)
    for result, value in zip(scope.result_values, term.operand_values, strict=True):
        result.replace_all_uses_with(value)
    scope.erase()


class _WriteIndex:
    """Answers "does any op of this block range write?" in O(1) after O(n) setup."""

    def __init__(self) -> None:
        self._writes: dict[Operation, bool] = {}
        self._prefix: dict[Block, list[int]] = {}
        self._pos: dict[Block, dict[Operation, int]] = {}

    def writes(self, op: Operation) -> bool:
        if op not in self._writes:
            self._writes[op] = (op.has_trait("writes") or isinstance(op, func.CallOp)
                                or any(self.writes(inner) for region in op.region_list
                                       for b in region.blocks for inner in b.ops))
        return self._writes[op]

    def position(self, block: Block, op: Operation) -> int:
        if block not in self._pos:
            self._pos[block] = {o: i for i, o in enumerate(block.ops)}
            counts = [0]
            for o in block.ops:
                counts.append(counts[-1] + self.writes(o))
            self._prefix[block] = counts
        return self._pos[block][op]

    def any_write(self, block: Block, first: int, last: int) -> bool:
        """True if an op at positions ``first..last`` (inclusive) of ``block`` writes."""
        counts = self._prefix[block]
        return counts[last + 1] - counts[first] > 0


def _ancestor_in(block: Block, op: Operation) -> Operation:
    anc = block.ancestor_of(op)
    assert anc is not None, "use is not nested in the snapshot's block"
    return anc


def _transitive_users(value: Value) -> list[Operation]:
    users: list[Operation] = []
    work = [value]
    while work:
        v = work.pop()
        for user, _ in v.uses:
            users.append(user)
            if isinstance(user, _VIEW_OPS) and user.operand_values[0] is v:
                work.append(user.result)
            elif isinstance(user, func.FusionGroupOp):
                work += _aliasing_results(user)
    return users


def _aliasing_results(group: func.FusionGroupOp) -> list[Value]:
    """Results of ``group`` that may share an input's buffer: those yielding a group
    input or a view of one (any other result is computed into a fresh buffer, whether
    the group is lowered as one nest or inlined op by op)."""
    body = group.body.blocks[0]
    out: list[Value] = []
    for result, y in zip(group.result_values, body.ops[-1].operand_values, strict=True):
        while isinstance(y, OpResult) and isinstance(y.op, _VIEW_OPS):
            y = y.op.operand_values[0]
        if y in body.args:
            out.append(result)
    return out


def reusable_snapshots(fn: FuncOp) -> set[Operation]:
    """The ``mem.to_tensor`` ops of ``fn`` that may alias their buffer (see module doc)."""
    index = _WriteIndex()
    reuse: set[Operation] = set()
    for op in fn.walk():
        if not isinstance(op, mem.ToTensorOp):
            continue
        block = op.parent
        assert block is not None
        start = index.position(block, op)
        users = _transitive_users(op.result)
        last = max((index.position(block, _ancestor_in(block, u)) for u in users),
                   default=start)
        end = last - 1 if _writes_elsewhere(block.ops[last], op) else last
        if last <= start or not index.any_write(block, start + 1, end):
            reuse.add(op)
    return reuse


def _writes_elsewhere(last: Operation, snapshot: mem.ToTensorOp) -> bool:
    """Whether ``last`` is a ``mem.write`` into a fresh allocation that the snapshot's
    buffer cannot share (an argument of the function, or another allocation)."""
    if not isinstance(last, mem.WriteOp):
        return False
    dest = base_buffer(last.dest)
    src = base_buffer(snapshot.operand_values[0])
    if not (isinstance(dest, OpResult) and isinstance(dest.op, mem.AllocOp)) or src is dest:
        return False
    if isinstance(src, OpResult):
        return isinstance(src.op, mem.AllocOp)
    return isinstance(src, BlockArgument) and isinstance(src.block.parent_op, FuncOp)
