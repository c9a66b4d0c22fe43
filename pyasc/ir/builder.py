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
        return op

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
