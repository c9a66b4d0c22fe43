"""The ops of a block in program order, with positions found in O(log n).

Passes ask "where is this op in its block?" for every op they insert before, move,
erase or compare; a scan of the block per question made them quadratic in the
program's length (a 10,000-statement function has a 20,000-op block).  Like MLIR's
order indices, every op in a block carries an integer *order key*, strictly increasing
along the block with wide gaps: the position of an op is a binary search of its key,
inserting an op takes a key between its neighbours' (when two neighbours have no key
left between them, the smallest window around them that has room is renumbered), and
:meth:`OpSequence.before` compares two ops of one block in O(1).

The list of ops itself stays a plain Python list (``Block.ops``) for reading; every
change goes through :class:`OpSequence`, so the keys never go stale.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import Protocol


class Operation(Protocol):
    """What this module needs of an op (``pyasc.ir.core.Operation``, not imported: the
    core imports this module)."""

    order_key: int

GAP = 1 << 20
"""Key distance between neighbours after a renumbering: ~20 insertions at one place
before the next renumbering."""


class OpSequence:
    """A list of ops and the parallel, strictly increasing list of their order keys."""

    __slots__ = ("items", "keys")

    def __init__(self, ops: Iterable[Operation] = ()) -> None:
        self.items: list[Operation] = []
        self.keys: list[int] = []
        self.reset(ops)

    def reset(self, ops: Iterable[Operation]) -> None:
        """Replace the contents (keys renumbered ``GAP`` apart)."""
        self.items = list(ops)
        self.keys = list(range(0, GAP * len(self.items), GAP))
        for op, key in zip(self.items, self.keys, strict=True):
            op.order_key = key

    def index(self, op: Operation) -> int:
        """The position of ``op``; ``ValueError`` if it is not in the sequence."""
        i = bisect_left(self.keys, op.order_key)
        if i < len(self.items) and self.items[i] is op:
            return i
        raise ValueError("op is not in this sequence")

    def insert(self, i: int, op: Operation) -> None:
        """Insert ``op`` at position ``i`` (``len`` appends)."""
        keys = self.keys
        n = len(keys)
        i = max(0, min(i, n))
        if i == n:
            key = keys[-1] + GAP if n else 0
        elif i == 0:
            key = keys[0] - GAP
        else:
            if keys[i] - keys[i - 1] < 2:
                self._spread(i)  # no room between the neighbours
                keys = self.keys
            key = (keys[i - 1] + keys[i]) // 2
        self.items.insert(i, op)
        self.keys.insert(i, key)
        op.order_key = key

    def _spread(self, i: int) -> None:
        """Make room before position ``i``: renumber the smallest window around it
        (doubling) whose key range leaves a gap of at least 2 per op, so repeated
        insertions at one place cost O(log n) amortized, not a whole renumbering."""
        keys, n = self.keys, len(self.keys)
        width = 2
        while True:
            a, b = max(0, i - width), min(n, i + width)
            if a == 0 or b == n:
                self.reset(self.items)  # the window reached an end: renumber all
                return
            lo, hi = keys[a - 1], keys[b]
            step = (hi - lo) // (b - a + 1)
            if step >= 2:
                for j in range(a, b):
                    keys[j] = lo + step * (j - a + 1)
                    self.items[j].order_key = keys[j]
                return
            width *= 2

    def pop(self, i: int) -> Operation:
        """Remove and return the op at position ``i``."""
        del self.keys[i]
        return self.items.pop(i)


def before(a: Operation, b: Operation) -> bool:
    """True if ``a`` comes before ``b``; both must be in the same block."""
    return a.order_key < b.order_key
