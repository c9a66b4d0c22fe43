"""Physical UB buffers of a vector kernel and the tile size that fills the budget.

Virtual buffers of the tile program get physical ones by a linear scan over the
instructions: a temporary takes a free ``TBuf`` of the same kind and element size, or the
queue buffer of an input that is no longer read (same element type); inputs get a
``TQue<VECIN, 2>`` each, outputs a ``TQue<VECOUT, 2>`` each (double buffering), row
vectors and accumulators a ``TBuf``.  :func:`choose_tile` then picks the largest tile
(a multiple of 256 elements) whose buffers fit the SoC's ``InitBuffer`` budget, or
raises E50003 when even the smallest tile does not fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pyasc.backend.ascendc.tiles import Buf, Ref, TileProgram
from pyasc.errors import OutOfMemoryError
from pyasc.ir.core import Location

TILE_QUANTUM = 256        # elements: keeps every padded Compare count inside the tile
MAX_TILE_ROWS = 4095      # DataCopyPad blockCount limit
RESULT_BYTES = 32         # the UB slot a per-block partial result is written from
MAX_PIPE_BUFFERS = 64     # InitBuffer buffers of one TPipe, queue depths counted (QBUF_MAX_LEN)
_ROUND = 32


@dataclass
class PhysBuf:
    """One ``TQue`` (``depth`` 2) or ``TBuf`` of the kernel."""

    name: str
    kind: str        # tile | col | row | mask | colmask | acc | rtmp | res
    itemsize: int
    role: str        # in | out | calc | acc | rtmp | res
    depth: int = 1

    def elements(self, tile: int, colcap: int) -> int:
        """Capacity in elements for a tile of ``tile`` elements."""
        if self.kind == "rtmp":  # float needs the most bytes; half views get twice as many
            return reduce_tmp_elems(tile, 4)
        return {"tile": tile, "row": tile, "acc": tile, "mask": tile // 8, "col": colcap,
                "colmask": colcap // 8, "res": RESULT_BYTES // self.itemsize}[self.kind]

    def bytes(self, tile: int, colcap: int) -> int:
        return self.depth * _round(self.elements(tile, colcap) * self.itemsize)


def _round(n: int) -> int:
    return (n + _ROUND - 1) // _ROUND * _ROUND


def reduce_tmp_elems(count: int, size: int) -> int:
    """``ReduceMax/Min`` sharedTmpBuffer elements without index (ReduceMax docs)."""
    per_blk, per_rep = 32 // size, 256 // size
    first = max(1, math.ceil(count / per_rep)) * 2
    return (first + per_blk - 1) // per_blk * per_blk


def colcap(tile: int, unit: int, max_rows: int = MAX_TILE_ROWS) -> int:
    """Capacity of a per-row buffer: the most rows a tile holds (at most ``max_rows``),
    padded to 128."""
    rows = min(max_rows, max(1, tile // unit))
    return (rows + 127) // 128 * 128


def _liveness(prog: TileProgram, loops: Sequence[tuple[int, int]] = ()
              ) -> dict[Buf, tuple[int, int]]:
    live: dict[Buf, list[int]] = {}
    for i, ins in enumerate(prog.instrs):
        touched = list(ins.reads()) + ([ins.dst.buf] if isinstance(ins.dst, Ref) else [])
        for b in touched:
            span = live.setdefault(b, [i, i])
            span[0], span[1] = min(span[0], i), max(span[1], i)
    end = len(prog.instrs)
    for b in prog.buffers:
        if b.role in ("out", "acc"):
            live.setdefault(b, [0, end])[1] = end
        if b.role in ("in", "acc"):
            live.setdefault(b, [0, 0])[0] = -1
    for start, stop in loops:  # a value set before a loop and read in it lives through it
        for span in live.values():
            if span[0] < start <= span[1] < stop:
                span[1] = stop
    return {b: (s[0], s[1]) for b, s in live.items()}


def _io_buffer(b: Buf, streamed: str) -> PhysBuf | None:
    """The physical buffer of a kernel input or output (``None`` for temporaries).

    Row-wise kernels load a row vector once (``TBuf``).  Streamed kernels name the kind
    kept per line (``streamed``): long-rows kernels (``"col"``) stream row vectors per
    column tile like the full inputs (``TQue``) and keep each row's column inputs and
    results in ``TBuf`` s, moved with explicit pipe flags; column-reduction kernels
    (``"row"``) keep a block's row inputs and results so."""
    line = streamed or "row"
    if b.role == "in":
        queued = b.kind != line
        role = "in" if queued else f"{line}in"
        return PhysBuf(f"{b.name}{'Que' if queued else 'Buf'}_", b.kind, b.itemsize, role,
                       2 if queued else 1)
    if b.role == "out" and streamed and b.kind == line:
        return PhysBuf(f"{b.name}Buf_", b.kind, b.itemsize, f"{line}out", 1)
    if b.role in ("out", "acc"):
        return PhysBuf(f"{b.name}{'Que' if b.role == 'out' else 'Buf'}_", b.kind,
                       b.itemsize, b.role, 2 if b.role == "out" else 1)
    return None


def assign(prog: TileProgram, loops: Sequence[tuple[int, int]] = (),
           streamed: str = "") -> list[PhysBuf]:
    """Give every virtual buffer a physical one (sets ``Buf.phys``); returns them all.

    ``loops`` are the instruction ranges that repeat (per tile); ``streamed`` (the
    buffer kind a streamed kernel keeps per line, ``_io_buffer``) also keeps temporaries
    out of input queues, whose tensors exist only inside the stage that dequeues them."""
    live = _liveness(prog, loops)
    phys: list[PhysBuf] = []
    occupant: dict[str, Buf] = {}
    for b in prog.buffers:
        p = _io_buffer(b, streamed)
        if p is None:
            continue
        b.phys = p.name
        phys.append(p)
        occupant[p.name] = b
    order = sorted((b for b in prog.buffers if b.role == "calc" and b in live),
                   key=lambda b: live[b][0])
    for b in order:
        start = live[b][0]
        slot = _free_slot(b, start, phys, occupant, live, streamed)
        if slot is None:
            count = sum(1 for p in phys if p.role == "calc" and p.kind == b.kind)
            slot = PhysBuf(f"tmp{b.kind.capitalize()}{count}_", b.kind, b.itemsize, "calc")
            phys.append(slot)
        b.phys = slot.name
        occupant[slot.name] = b
    for b in prog.buffers:  # never touched (a value nobody computes): give it a slot
        if not b.phys:
            b.phys = _fresh(b, phys).name
    if prog.reduce_tmp_types:
        phys.append(PhysBuf("reduceTmpBuf_", "rtmp", 4, "rtmp"))
    return phys


def _fresh(b: Buf, phys: list[PhysBuf]) -> PhysBuf:
    p = PhysBuf(f"tmp{b.kind.capitalize()}{len(phys)}_", b.kind, b.itemsize, "calc")
    phys.append(p)
    return p


def _free_slot(b: Buf, start: int, phys: list[PhysBuf], occupant: dict[str, Buf],
               live: dict[Buf, tuple[int, int]], streamed: str = "") -> PhysBuf | None:
    best: PhysBuf | None = None
    roles = ("calc",) if streamed else ("calc", "in")
    for p in phys:
        if p.kind != b.kind or p.itemsize != b.itemsize or p.role not in roles:
            continue
        cur = occupant[p.name]
        if p.role == "in" and cur.dtype != b.dtype:
            continue
        if live.get(cur, (0, -1))[1] <= start:
            if p.role == "in":
                return p  # reusing a dead input buffer saves a whole tile of UB
            best = best or p
    return best


def pipe_buffers(phys: list[PhysBuf]) -> int:
    """Buffers the kernel's ``InitBuffer`` calls take from the TPipe (a queue: its depth)."""
    return sum(p.depth for p in phys)


def total_bytes(phys: list[PhysBuf], tile: int, unit: int,
                max_rows: int = MAX_TILE_ROWS) -> int:
    """UB bytes the kernel's ``InitBuffer`` calls take for a tile of ``tile`` elements
    (of at most ``max_rows`` rows)."""
    cap = colcap(tile, unit, max_rows)
    return sum(p.bytes(tile, cap) for p in phys)


def bytes_per_element(phys: list[PhysBuf]) -> int:
    """Bytes one more tile element costs (tile-sized buffers, all copies)."""
    return sum(p.depth * p.itemsize for p in phys if p.kind in ("tile", "row", "acc"))


_SPLIT_HINT = ("split the computation into smaller fused groups (fusion_scope): each "
               "kernel then holds fewer buffers")


def choose_tile(phys: list[PhysBuf], budget: int, unit: int, min_tile: int,
                want: int | None, loc: Location, what: str, soc_name: str,
                max_rows: int = MAX_TILE_ROWS, hint: str = _SPLIT_HINT) -> int:
    """The largest tile (multiple of 256) that fits ``budget`` (the InitBuffer budget of
    the SoC ``soc_name``), at most ``want``; per-row buffers hold ``max_rows`` rows.

    Raises E50003 (``OutOfMemoryError``) naming the SoC, with ``hint``, when ``min_tile``
    elements do not fit.
    """
    min_tile = max(TILE_QUANTUM, -(-min_tile // TILE_QUANTUM) * TILE_QUANTUM)
    need = total_bytes(phys, min_tile, unit, max_rows)
    if need > budget:
        raise OutOfMemoryError(
            f"{what} needs {need} bytes of Unified Buffer for its smallest tile "
            f"({min_tile} elements in {len(phys)} buffers) but the InitBuffer budget of "
            f"{soc_name} is {budget} bytes", filename=loc.file, lineno=loc.line or None,
            col_offset=max(loc.col - 1, 0), hint=hint)
    lo, hi = min_tile // TILE_QUANTUM, max(min_tile // TILE_QUANTUM, budget // TILE_QUANTUM)
    while lo < hi:  # largest k with total_bytes(k * 256) <= budget
        mid = (lo + hi + 1) // 2
        if total_bytes(phys, mid * TILE_QUANTUM, unit, max_rows) <= budget:
            lo = mid
        else:
            hi = mid - 1
    tile = lo * TILE_QUANTUM
    if want is not None:
        tile = max(min_tile, min(tile, -(-want // TILE_QUANTUM) * TILE_QUANTUM))
    return tile
