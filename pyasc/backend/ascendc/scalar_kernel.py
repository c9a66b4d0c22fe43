"""The plan of a scalar kernel: its GM arrays and what ``emit_scalar`` needs to write it.

:class:`ScalarKernel` is what ``scalar_plan`` produces from a region (see there) and the
emitters and the host side read; :class:`GmArray` is one ``GM_ADDR`` parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pyasc.backend.ascendc.cores import VECTOR
from pyasc.backend.ascendc.scalar_f64 import Demoted, HostScalars
from pyasc.backend.ascendc.tiles import RESERVED, user_base
from pyasc.ir.core import Location, Value
from pyasc.ir.ops import func, loop
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.types import ScalarType
from pyasc.ir.unique import UniqueNames

CACHE_LINE = 64
"""Bytes of a line of the scalar unit's data cache, which writes GM back by whole lines
(``DataCacheCleanAndInvalid`` docs): blocks must not write one line."""
LINE_INT64 = CACHE_LINE // 8

ARENA_BYTES = 1 << 20
"""Per-block GM workspace for temporaries of run-time size allocated inside loops (a
bump allocator reset at the end of each iteration; overflowing it raises E50003)."""

@dataclass
class GmArray:
    """One ``GM_ADDR`` parameter of a scalar kernel."""

    name: str
    value: Value | None          # the memref in the lowered function (None: status)
    elem: ScalarType
    source: str          # input | result | temp | const | scalar | status | arena | scratch
    index: int = -1              # input position, or result position

    @property
    def per_block(self) -> bool:
        """Whether each block has a slice of its own (``GetBlockIdx() * slice``)."""
        return self.source == "scratch"

    @property
    def slice(self) -> int:
        """Elements between two blocks' slices: the static size rounded up to whole
        64-byte cache lines (a per-block array)."""
        n = max(1, self.value.type.num_elements() or 1)  # type: ignore[union-attr]
        per_line = CACHE_LINE // self.elem.itemsize
        return -(-n // per_line) * per_line


@dataclass
class ScalarKernel:
    core: ClassVar[str] = VECTOR   # the scalar unit of a vector core (cores.py)
    name: str
    loc: Location
    fn: FuncOp                               # the region at loop level
    inputs: list[Value]                      # outside values, in parameter order
    outputs: list[Value]                     # region results (outside values)
    arrays: list[GmArray] = field(default_factory=list)
    locals: set[Value] = field(default_factory=set)
    arena: set[Value] = field(default_factory=set)   # temporaries in the GM workspace
    carriers: dict[Value, GmArray] = field(default_factory=dict)  # carried arrays in GM
    parallel: loop.ForOp | None = None
    # (GM array, axis) the split loop writes at row ``i``: blocks start at rows that begin
    # a 64-byte line of each (emit_control), so no line is written by two blocks
    split_rows: list[tuple[Value, int]] = field(default_factory=list)
    asserts: list[func.AssertOp] = field(default_factory=list)
    reason: str = ""
    dcache_flush: str | None = None   # DataCacheCleanAndInvalid arguments (soc.py)
    host_scalars: HostScalars | None = None  # parameters the host computes (scalar_f64)
    demoted: Demoted | None = None    # float64 inputs/results computed in float32

    def array_of(self, v: Value) -> GmArray | None:
        for a in self.arrays:
            if a.value is v:
                return a
        return None

    @property
    def status(self) -> GmArray | None:
        return next((a for a in self.arrays if a.source == "status"), None)

    @property
    def workspace(self) -> GmArray | None:
        return next((a for a in self.arrays if a.source == "arena"), None)

    @property
    def status_stride(self) -> int:
        """Status slots per block: the failed check's code, then the values it reports
        (a bounds check's index and axis size), padded to a 64-byte cache line so that
        no two blocks write one line."""
        used = 1 + max((len(op.values) for op in self.asserts), default=0)
        return -(-used // LINE_INT64) * LINE_INT64

    def check_codes(self) -> dict[str, tuple]:
        """``ascend.check_status`` attributes for the codes ``1..n`` the kernel may
        report: messages, kinds, values reported and source sites of each."""
        messages = [op.attributes["message"] for op in self.asserts]
        kinds = [op.attributes["kind"] for op in self.asserts]
        values = [len(op.values) for op in self.asserts]
        sites = [(op.loc.file or "", op.loc.line, op.loc.col) for op in self.asserts]
        if self.arena:
            messages.append(f"temporary arrays of kernel '{self.name}' need more than its "
                            f"{ARENA_BYTES} bytes of GM workspace per block")
            kinds.append("oom")
            values.append(0)
            sites.append(("", 0, 0))
        return {"messages": tuple(messages), "kinds": tuple(kinds), "values": tuple(values),
                "sites": tuple(sites)}



class _Names:
    def __init__(self) -> None:
        self.unique = UniqueNames(RESERVED)
        self.taken = self.unique.taken  # names taken elsewhere are added here

    def new(self, base: str) -> str:
        return self.unique.fresh(user_base(base))


__all__ = ["ARENA_BYTES", "CACHE_LINE", "LINE_INT64", "GmArray", "ScalarKernel"]
