"""The ``Compute`` stage of a vector kernel: tensor views, scalars and the AscendC calls.

Consecutive per-row instructions share one ``for (r ...)`` loop over the tile's rows.  A
loop that reads per-row results with ``GetValue`` is preceded by a vector -> scalar
synchronisation (``SetFlag/WaitFlag<HardEvent::V_S>``), as scalar reads of UB written by
the vector unit need.  Counts: ``n`` elements in the tile (``rows * pitch`` in the
row-wise schedule), ``rows`` per-row values, ``cols`` elements in a row; ``Compare`` and
``Select`` counts are rounded up to whole 256-byte repeats (the buffers are sized for it),
UB -> UB ``DataCopy`` counts to whole 32-byte blocks (``tile32``/``col32``).
"""

from __future__ import annotations

from contextlib import nullcontext

from pyasc.backend.ascendc.analysis import COL, FULL
from pyasc.backend.ascendc.cwriter import CWriter
from pyasc.backend.ascendc.tiles import ColElem, Instr, Ref, storage_type
from pyasc.backend.ascendc.vec_kernel import VectorKernel

# Padded counts -> the bytes they round up to (a vector repeat, a DMA block).
_PADDED = {"tile256": 256, "col256": 256, "tile32": 32, "col32": 32}


def _count(ins: Instr) -> str:
    if ins.count in _PADDED:
        src = ins.srcs[0] if ins.api == "Compare" else ins.dst
        size = src.buf.itemsize if isinstance(src, Ref) else 4
        per = _PADDED[ins.count] // size
        n = "n" if ins.count.startswith("tile") else "rows"
        return f"({n} + {per - 1}) / {per} * {per}"
    return {"tile": "n", "col": "rows", "cols": "cols", "pitch": "pitch", "one": "1"}[
        ins.count or "tile"]


# A row reduction over zero columns: numpy's identity for a sum (0).  ReduceSum/Max/Min
# take no count of 0: they would write whatever the scratch holds.  max/min of nothing
# have no identity: the host raises numpy's ValueError before launching such a kernel
# (host_vector._check_rows_of_nothing); their 0 here only keeps a direct launch defined.
_EMPTY_ROW = {"ReduceSum": "0", "ReduceMax": "0", "ReduceMin": "0"}


def render(ins: Instr) -> str:
    """One instruction as its AscendC call."""
    args = [render_operand(ins.dst)] if ins.dst is not None else []
    args += [render_operand(s) for s in ins.srcs]
    args += list(ins.extra)
    if ins.count is not None:
        args.append(_count(ins))
    return f"{ins.api}({', '.join(args)});"


def _views(w: CWriter, k: VectorKernel) -> None:
    """``LocalTensor`` variables for every buffer the compute stage touches."""
    out_bufs = {o.buf for o in k.written if o.buf is not None}
    in_bufs = {i.vv.buf for i in k.array_inputs}
    for i in k.array_inputs:
        b = i.vv.buf
        assert b is not None
        t = storage_type(b.dtype)
        if i.vv.cls in (FULL, COL):
            w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.DeQue<{t}>();")
        else:
            w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.Get<{t}>();")
    for b in k.prog.buffers:
        if b in out_bufs:
            t = storage_type(b.dtype)
            w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.AllocTensor<{t}>();")
    owner = {b.phys: b for b in k.prog.buffers if b in in_bufs}
    used = _used(k.prog.instrs)
    for b in k.prog.buffers:
        if b in out_bufs or b in in_bufs or id(b) not in used:
            continue
        t = storage_type(b.dtype)
        home = owner.get(b.phys)
        if home is not None:  # the queue buffer of an input that is no longer read
            w.line(f"LocalTensor<{t}> {b.name} = {home.name};")
        else:
            w.line(f"LocalTensor<{t}> {b.name} = {b.phys}.Get<{t}>();")


def _used(instrs: list[Instr]) -> set[int]:
    """Ids of the buffers some instruction writes or reads (one pass, not one per
    buffer: a kernel of a long chain has thousands of both)."""
    used = {id(i.dst.buf) for i in instrs if isinstance(i.dst, Ref)}
    used.update(id(b) for i in instrs for b in i.reads())
    return used


def reduce_tmp_views(w: CWriter, k: VectorKernel) -> None:
    """The views of the reduction scratch buffer, one per element type that uses it."""
    for dtype in sorted(k.prog.reduce_tmp_types):
        t = {"f16": "half", "f32": "float"}[dtype]
        w.line(f"LocalTensor<{t}> reduceTmp_{dtype} = reduceTmpBuf_.Get<{t}>();")


def emit_compute(w: CWriter, k: VectorKernel, rows: bool) -> None:
    """The kernel class's ``Compute`` method (``rows``: the row-wise schedule)."""
    with w.block(f"__aicore__ inline void Compute(int32_t {'rows' if rows else 'len'})"):
        if rows:
            w.line("const int32_t n = rows * static_cast<int32_t>(pitch_);")
            w.line("const int32_t cols = static_cast<int32_t>(cols_);")
            w.line("const int32_t pitch = static_cast<int32_t>(pitch_);")
        else:
            w.line("const int32_t n = len;")
        _views(w, k)
        reduce_tmp_views(w, k)
        for decl, _name, loc in k.prog.scalars:
            w.line(decl, loc)
        emit_instructions(w, k.prog.instrs)
        for o in k.written:
            if o.buf is not None:
                w.line(f"{o.buf.phys}.EnQue({o.buf.name});")
        for i in k.array_inputs:
            b = i.vv.buf
            assert b is not None
            if i.vv.cls in (FULL, COL):
                w.line(f"{b.phys}.FreeTensor({b.name});")


def emit_instructions(w: CWriter, instrs: list[Instr]) -> None:
    """The calls of a tile program (per-row runs in one loop over the tile's rows)."""
    i = 0
    while i < len(instrs):
        ins = instrs[i]
        if not ins.per_row:
            w.line(render(ins), ins.loc)
            i += 1
            continue
        j, written = i, set()
        while j < len(instrs) and instrs[j].per_row:
            # A row value read as a scalar must be complete (and synced) before the loop.
            if any(s.buf in written for s in instrs[j].srcs if isinstance(s, ColElem)):
                break
            if instrs[j].dst is not None:
                written.add(instrs[j].dst.buf)
            j += 1
        run = instrs[i:j]
        if any(x.needs_scalar_sync() for x in run):
            w.line("SetFlag<HardEvent::V_S>(EVENT_ID0);")
            w.line("WaitFlag<HardEvent::V_S>(EVENT_ID0);")
        _row_loop(w, run)
        i = j


def _row_loop(w: CWriter, run: list[Instr]) -> None:
    """One loop over the tile's rows; rows of no columns (``cols == 0``) skip it, and
    the row reductions in it give their identity for every row instead."""
    empty = [x for x in run if x.api in _EMPTY_ROW and x.count == "cols"
             and isinstance(x.dst, Ref)]
    guard = w.block("if (cols > 0)", run[0].loc, directive=False) if empty else nullcontext()
    with guard, w.block("for (int32_t r = 0; r < rows; ++r)", run[0].loc, directive=False):
        for x in run:
            w.line(render(x), x.loc)
    if empty:
        with w.block("else", run[0].loc, directive=False):
            for x in empty:
                t = storage_type(x.dst.buf.dtype)
                w.line(f"Duplicate({x.dst.buf.name}, static_cast<{t}>({_EMPTY_ROW[x.api]}), "
                       "rows);", x.loc)


def render_operand(op: Ref | ColElem | str) -> str:
    """An instruction operand in C++: a buffer (its row ``r`` inside a per-row loop), a
    per-row value read as a scalar, or literal text."""
    if isinstance(op, str):
        return op
    if isinstance(op, ColElem):
        return op.fmt.format(f"{op.buf.name}.GetValue(r)")
    if not op.row:
        return op.buf.name
    return f"{op.buf.name}[r]" if op.buf.kind == "col" else f"{op.buf.name}[r * pitch]"
