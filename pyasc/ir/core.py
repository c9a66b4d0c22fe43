"""The IR's data structures: locations, SSA values, operations, blocks and regions.

An :class:`Operation` subclass is one op: it declares its operand, result, attribute and
region names as class variables and implements :meth:`Operation.verify_op`.  Everything
else (printing, parsing, cloning, use lists, walking) is generic and lives here or in
``printer``/``parser``, so adding an op is writing one small class.

The printer is a layer above this module (it reads these classes): ``str(op)`` calls
the printer :func:`install_printer` was given, which ``pyasc.ir.ops`` does when it is
imported (every op family, and so every op built from one, imports that package first).

Regions hold blocks; pyasc's control flow is structured, so the verifier requires every
region to have exactly one block.  Locations and attribute values are defined in
``attributes`` (re-exported here), the accessors made from an op's declared names in
``op_spec``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

from pyasc.errors import InternalCompilerError
from pyasc.ir.attributes import (  # noqa: F401 - the IR's public names, defined there
    UNKNOWN_LOC,
    AttrDef,
    AttrValue,
    DenseArray,
    Location,
    attr,
)
from pyasc.ir.op_spec import check_count, install_accessors
from pyasc.ir.order import OpSequence
from pyasc.ir.types import Type

# ---------------------------------------------------------------------------- values


class Value:
    """An SSA value: has a type, an optional name hint and its uses."""

    __slots__ = ("type", "name_hint", "uses")

    def __init__(self, type_: Type, name_hint: str | None = None) -> None:
        self.type = type_
        self.name_hint = name_hint
        # (user, operand index) -> None: an ordered set, so that dropping one use of a
        # value with thousands of users is O(1) (iterate it like a list of pairs)
        self.uses: dict[tuple[Operation, int], None] = {}

    def replace_all_uses_with(self, new: Value) -> None:
        """Make every user of this value use ``new`` instead."""
        for op, idx in list(self.uses):
            op.set_operand(idx, new)

    @property
    def owner(self) -> Operation | Block:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name_hint or ''}: {self.type}>"


class OpResult(Value):
    """A value produced by an operation."""

    __slots__ = ("op", "index")

    def __init__(self, type_: Type, op: Operation, index: int) -> None:
        super().__init__(type_)
        self.op = op
        self.index = index

    @property
    def owner(self) -> Operation:
        return self.op


class BlockArgument(Value):
    """A value defined as an argument of a block (function parameters, loop variables)."""

    __slots__ = ("block", "index")

    def __init__(self, type_: Type, block: Block, index: int, name_hint: str | None = None):
        super().__init__(type_, name_hint)
        self.block = block
        self.index = index

    @property
    def owner(self) -> Block:
        return self.block


# ---------------------------------------------------------------------------- operations

OP_REGISTRY: dict[str, type[Operation]] = {}
"""Op classes by name; filled when the op modules are imported (see ``pyasc.ir.ops``)."""


class Operation:
    """Base of all ops.  Subclasses set ``name`` and the declarations below.

    Declarations:
      * ``operands`` / ``results``: names; one name may end with ``*`` (variadic);
      * ``attrs``: ``{name: AttrDef}``;
      * ``regions``: region names;
      * ``traits``: flags such as ``"pure"``, ``"terminator"``, ``"commutative"``.
    The generated accessor for a name returns a value, or a list for a variadic name.
    """

    name: ClassVar[str] = ""
    operands: ClassVar[tuple[str, ...]] = ()
    results: ClassVar[tuple[str, ...]] = ()
    attrs: ClassVar[dict[str, AttrDef]] = {}
    regions: ClassVar[tuple[str, ...]] = ()
    traits: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and cls.name:
            if cls.name in OP_REGISTRY and OP_REGISTRY[cls.name] is not cls:
                raise ValueError(f"op {cls.name} registered twice")
            OP_REGISTRY[cls.name] = cls
        install_accessors(cls, "operands", "_operands")
        install_accessors(cls, "results", "_results")
        for i, rname in enumerate(cls.__dict__.get("regions", ())):
            if not hasattr(cls, rname):
                setattr(cls, rname, property(lambda self, i=i: self._regions[i]))

    def __init__(
        self,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        attributes: dict[str, AttrValue] | None = None,
        regions: Sequence[Region] = (),
        loc: Location | None = None,
    ) -> None:
        self._operands: list[Value] = []
        for v in operands:
            self._append_operand(v)
        self._results = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        self.attributes: dict[str, AttrValue] = dict(attributes or {})
        self._regions: list[Region] = []
        for r in regions:
            self.add_region(r)
        self.loc = loc or UNKNOWN_LOC
        self.parent: Block | None = None
        self.order_key = 0  # position key in the parent block (``pyasc.ir.order``)

    # -- operands and results
    @property
    def operand_values(self) -> list[Value]:
        return list(self._operands)

    @property
    def result_values(self) -> list[OpResult]:
        return list(self._results)

    @property
    def result(self) -> OpResult:
        """The single result (error if the op has zero or several)."""
        if len(self._results) != 1:
            raise ValueError(f"{self.name} has {len(self._results)} results")
        return self._results[0]

    @property
    def region_list(self) -> list[Region]:
        return list(self._regions)

    def _append_operand(self, v: Value) -> None:
        if not isinstance(v, Value):
            raise TypeError(f"operand of {self.name} must be a Value, got {v!r}")
        v.uses[(self, len(self._operands))] = None
        self._operands.append(v)

    def set_operand(self, idx: int, new: Value) -> None:
        old = self._operands[idx]
        del old.uses[(self, idx)]
        new.uses[(self, idx)] = None
        self._operands[idx] = new

    def drop_operand_uses(self) -> None:
        for i, v in enumerate(self._operands):
            del v.uses[(self, i)]
        self._operands = []

    def add_region(self, region: Region) -> Region:
        region.parent = self
        self._regions.append(region)
        return region

    # -- structure
    @property
    def parent_op(self) -> Operation | None:
        return self.parent.parent.parent if self.parent and self.parent.parent else None

    def walk(self) -> Iterator[Operation]:
        """This op and every nested op, pre-order."""
        yield self
        for region in self._regions:
            for block in region.blocks:
                for op in list(block.ops):
                    yield from op.walk()

    def has_trait(self, trait: str) -> bool:
        return trait in self.traits

    def is_ancestor_of(self, other: Operation) -> bool:
        op: Operation | None = other
        while op is not None:
            if op is self:
                return True
            op = op.parent_op
        return False

    def erase(self) -> None:
        """Remove from the parent block; results must be unused."""
        for r in self._results:
            if r.uses:
                raise ValueError(f"cannot erase {self.name}: result still used")
        for inner in list(self.walk())[::-1]:
            inner.drop_operand_uses()
        if self.parent is not None:
            self.parent.detach(self)

    def clone(self, mapping: dict[Value, Value] | None = None) -> Operation:
        """Deep copy; operands are looked up in ``mapping`` (updated with new results)."""
        mapping = {} if mapping is None else mapping
        operands = [mapping.get(v, v) for v in self._operands]
        new = type(self).__new__(type(self))
        Operation.__init__(new, operands, [r.type for r in self._results],
                           dict(self.attributes), (), self.loc)
        for old_r, new_r in zip(self._results, new._results, strict=True):
            new_r.name_hint = old_r.name_hint
            mapping[old_r] = new_r
        for region in self._regions:
            new.add_region(region.clone(mapping))
        return new

    # -- verification
    def verify_structure(self) -> None:
        """Checks derived from the declarations; raises ``ValueError``."""
        check_count(self, "operand", self.operands, len(self._operands))
        check_count(self, "result", self.results, len(self._results))
        if len(self._regions) != len(self.regions):
            raise ValueError(f"expected {len(self.regions)} regions, got {len(self._regions)}")
        for key, adef in self.attrs.items():
            if key not in self.attributes:
                if not adef.optional:
                    raise ValueError(f"missing attribute '{key}'")
            elif not adef.accepts(self.attributes[key]):
                raise ValueError(f"attribute '{key}' has invalid value {self.attributes[key]!r}")
        unknown = set(self.attributes) - set(self.attrs)
        if unknown:
            raise ValueError(f"unknown attributes {sorted(unknown)}")

    def verify_op(self) -> None:
        """Op-specific type checks; raise ``ValueError`` with a message.  Override."""

    def __repr__(self) -> str:
        return f"<op {self.name} at {self.loc}>"

    def __str__(self) -> str:
        if not _PRINTER:  # only an op class defined outside pyasc.ir.ops can get here
            raise InternalCompilerError(f"no IR printer installed to print '{self.name}'; "
                                        "import pyasc.ir.ops first")
        return _PRINTER[0](self)


_PRINTER: list[Callable[[Operation], str]] = []
"""The text format's printer used by ``str(op)`` (empty until :func:`install_printer`)."""


def install_printer(printer: Callable[[Operation], str]) -> None:
    """Make ``str(op)`` return ``printer(op)`` (``pyasc.ir.ops`` installs
    ``pyasc.ir.printer.print_op`` when imported; core never imports the printer)."""
    _PRINTER[:] = [printer]


# ---------------------------------------------------------------------------- blocks, regions


class Block:
    """A list of operations with typed arguments."""

    def __init__(self, arg_types: Sequence[Type] = (), arg_names: Sequence[str | None] = ()):
        names = list(arg_names) + [None] * (len(arg_types) - len(arg_names))
        self.args = [BlockArgument(t, self, i, n) for i, (t, n) in
                     enumerate(zip(arg_types, names, strict=True))]
        self._ops = OpSequence()
        self.parent: Region | None = None

    @property
    def ops(self) -> list[Operation]:
        """The ops in program order (read it; change it through the methods below)."""
        return self._ops.items

    @ops.setter
    def ops(self, ops: Sequence[Operation]) -> None:
        self._ops.reset(ops)

    def add_arg(self, type_: Type, name_hint: str | None = None) -> BlockArgument:
        arg = BlockArgument(type_, self, len(self.args), name_hint)
        self.args.append(arg)
        return arg

    def append(self, op: Operation) -> Operation:
        return self.insert(len(self.ops), op)

    def insert(self, index: int, op: Operation) -> Operation:
        if op.parent is not None:
            raise ValueError(f"{op.name} is already in a block")
        op.parent = self
        self._ops.insert(index, op)
        return op

    def ancestor_of(self, op: Operation) -> Operation | None:
        """The op of this block that is ``op`` or contains it (``None`` if outside)."""
        while op.parent is not self:
            parent = op.parent_op
            if parent is None:
                return None
            op = parent
        return op

    def index_of(self, op: Operation) -> int:
        """The position of ``op`` in this block, in O(log n) (``pyasc.ir.order``)."""
        if op.parent is self:
            try:
                return self._ops.index(op)
            except ValueError:
                pass
        raise ValueError(f"{op.name} is not in this block")

    def detach(self, op: Operation) -> Operation:
        """Remove ``op`` without touching its uses (for moving ops between blocks)."""
        self._ops.pop(self.index_of(op))
        op.parent = None
        return op

    @property
    def terminator(self) -> Operation | None:
        return self.ops[-1] if self.ops else None

    @property
    def parent_op(self) -> Operation | None:
        return self.parent.parent if self.parent else None


class Region:
    """An ordered list of blocks owned by an operation (one block in pyasc IR)."""

    def __init__(self, blocks: Sequence[Block] = ()) -> None:
        self.blocks: list[Block] = []
        self.parent: Operation | None = None
        for b in blocks:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The single block of a structured region."""
        if len(self.blocks) != 1:
            raise ValueError(f"region has {len(self.blocks)} blocks, expected 1")
        return self.blocks[0]

    def clone(self, mapping: dict[Value, Value]) -> Region:
        new = Region()
        for b in self.blocks:
            nb = Block([a.type for a in b.args], [a.name_hint for a in b.args])
            for old_a, new_a in zip(b.args, nb.args, strict=True):
                mapping[old_a] = new_a
            new.add_block(nb)
        for b, nb in zip(self.blocks, new.blocks, strict=True):
            for op in b.ops:
                nb.append(op.clone(mapping))
        return new
