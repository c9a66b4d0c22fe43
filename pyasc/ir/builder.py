"""A builder: an insertion point plus a current source location.

There is no global builder; the frontend and the passes each own one and pass it along.

    b = Builder.at_end(block)
    with b.location(Location("k.py", 3, 5)):
        s = b.insert(arith.AddOp.new(x, y)).result
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from pyasc.ir.core import UNKNOWN_LOC, Block, Location, Operation

OpT = TypeVar("OpT", bound=Operation)


class Builder:
    """Inserts operations into a block at a position, stamping the current location."""

    def __init__(self, block: Block, index: int | None = None,
                 loc: Location = UNKNOWN_LOC) -> None:
        self.block = block
        self.index = len(block.ops) if index is None else index
        self.loc = loc
        self._records: list[list[Operation]] = []

    @classmethod
    def at_end(cls, block: Block, loc: Location = UNKNOWN_LOC) -> Builder:
        return cls(block, None, loc)

    @classmethod
    def before(cls, op: Operation) -> Builder:
        assert op.parent is not None
        return cls(op.parent, op.parent.index_of(op), op.loc)

    @classmethod
    def after(cls, op: Operation) -> Builder:
        assert op.parent is not None
        return cls(op.parent, op.parent.index_of(op) + 1, op.loc)

    def insert(self, op: OpT) -> OpT:
        """Insert ``op`` at the insertion point (which then moves past it)."""
        if not op.loc.known and self.loc.known:
            op.loc = self.loc
        self.block.insert(self.index, op)
        self.index += 1
        for record in self._records:
            record.append(op)
        return op

    @contextmanager
    def recording(self) -> Iterator[list[Operation]]:
        """Collect every op inserted inside the ``with`` (in any block), so that a
        construct abandoned half-built can be removed (:func:`discard_ops`)."""
        record: list[Operation] = []
        self._records.append(record)
        try:
            yield record
        finally:  # nested recordings end innermost first (lists compare by value:
            # ``remove`` could take an equal outer one)
            assert self._records[-1] is record
            self._records.pop()

    @contextmanager
    def location(self, loc: Location) -> Iterator[Builder]:
        """Temporarily set the location stamped on inserted ops."""
        saved, self.loc = self.loc, loc
        try:
            yield self
        finally:
            self.loc = saved

    @contextmanager
    def at(self, block: Block, index: int | None = None) -> Iterator[Builder]:
        """Temporarily move the insertion point (e.g. into a loop body)."""
        saved = (self.block, self.index)
        self.block = block
        self.index = len(block.ops) if index is None else index
        try:
            yield self
        finally:
            self.block, self.index = saved


def discard_ops(ops: list[Operation]) -> None:
    """Remove ``ops`` (and what their regions hold) from their blocks and drop their
    operand uses, whatever order they use each other in: the ops of a construct
    abandoned half-built, some of them in blocks never attached to an op."""
    dropped: set[int] = set()
    for op in reversed(ops):
        for inner in op.walk():
            if id(inner) not in dropped:
                dropped.add(id(inner))
                inner.drop_operand_uses()
        if op.parent is not None:
            op.parent.detach(op)
