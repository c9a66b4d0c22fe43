"""Planning one vector kernel: lowering, outputs, physical buffers, tile size, parameters.

:func:`plan_vector_kernel` turns a ``fusion.group`` into a :class:`VectorKernel`, the
complete description the C++ emitter (``emit_vector``) and the host-program builder
(``host_vector``) share.  Kernel parameters, in order: one ``GM_ADDR`` per array input,
one per array output (per-block partial results of whole-array reductions included),
the scalar inputs by value, then the tiling parameters computed by the host:
``n, perBlock`` (flat and reduce schedules) or ``rows, cols, rowsPerBlock`` (rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from pyasc.backend.ascendc.analysis import (
    COL,
    FULL,
    PARTIAL,
    ROW,
    SCALAR,
    GroupInfo,
    NotVectorizable,
    analyze,
)
from pyasc.backend.ascendc.cores import VECTOR
from pyasc.backend.ascendc.grouping import value_name
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.tiles import Buf, Instr, Ref, TileProgram, ctype
from pyasc.backend.ascendc.vec_alloc import (
    MAX_PIPE_BUFFERS,
    RESULT_BYTES,
    PhysBuf,
    assign,
    choose_tile,
    pipe_buffers,
)
from pyasc.backend.ascendc.vec_arith import ARITH_RULES, select
from pyasc.backend.ascendc.vec_cols import ColsLowering
from pyasc.backend.ascendc.vec_longrows import LongLowering, LongPlan
from pyasc.backend.ascendc.vec_lower import Partial, VecLowering, VVal
from pyasc.backend.ascendc.vec_math import MATH_RULES
from pyasc.backend.ascendc.vec_pow import POW_RULES
from pyasc.backend.ascendc.vec_spans import Spans, analyze_spans
from pyasc.errors import OutOfMemoryError
from pyasc.ir.core import BlockArgument, Value
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import DYN, element_type, f16, u8

RULES = {**ARITH_RULES, **MATH_RULES, **POW_RULES}

TILING_PARAMS = {"flat": ("n", "perBlock"), "reduce": ("n", "perBlock"),
                 "rows": ("rows", "cols", "rowsPerBlock"),
                 "longrows": ("rows", "cols", "rowsPerBlock"),
                 "cols": ("rows", "cols", "colsPerBlock", "rowsPerBlock", "planes")}


@dataclass
class KernelInput:
    arg: BlockArgument
    vv: VVal


@dataclass
class KernelOutput:
    """Result ``index`` of the group: a buffer the kernel writes, or another result."""

    index: int
    kind: str                  # full | col | row | partial | passthrough | same
    buf: Buf | None = None
    partial: Partial | None = None
    source: int = -1           # passthrough: input position; same: earlier result index
    squeezed: bool = False


@dataclass
class VectorKernel:
    core: ClassVar[str] = VECTOR   # runs on the vector cores (cores.py)
    name: str
    group: FusionGroupOp
    info: GroupInfo
    prog: TileProgram
    inputs: list[KernelInput]
    outputs: list[KernelOutput]
    phys: list[PhysBuf] = field(default_factory=list)
    tile: int = 0
    unit: int = 8              # row pitch alignment in elements (32 bytes for every dtype)
    spans: Spans = field(default_factory=Spans)  # what sizes the space at run time
    long: LongPlan | None = None   # the long-rows schedule's stages (vec_longrows)
    # A row-wise kernel of run-time row length: its long-rows twin, which the host runs
    # instead when a row does not fit the tile (``host_vector.launch_vector``).
    alt: VectorKernel | None = None
    twin: bool = False   # this kernel is another one's ``alt`` (named after it)
    # A cols kernel whose results are its column reductions themselves (one pass, no
    # row ops after them): the host may split the rows across blocks too, each block
    # writing its partial row, and finish over them (``host_vector``).
    split_rows: bool = False

    @property
    def schedule(self) -> str:
        if self.info.schedule == "cols":
            return "cols"
        return "longrows" if self.long is not None else self.info.schedule

    @property
    def array_inputs(self) -> list[KernelInput]:
        return [i for i in self.inputs if i.vv.cls != SCALAR]

    @property
    def scalar_inputs(self) -> list[KernelInput]:
        return [i for i in self.inputs if i.vv.cls == SCALAR]

    @property
    def written(self) -> list[KernelOutput]:
        return [o for o in self.outputs if o.kind in (FULL, COL, ROW, PARTIAL)]

    def param_names(self) -> list[str]:
        names = [i.vv.buf.name for i in self.array_inputs]  # type: ignore[union-attr]
        names += [out_param(o) for o in self.written]
        names += [i.vv.expr.rstrip("_") for i in self.scalar_inputs]
        return names + list(TILING_PARAMS[self.schedule])

    def param_types(self) -> list[str]:
        n_gm = len(self.array_inputs) + len(self.written)
        scalars = [ctype(i.vv.dtype) for i in self.scalar_inputs]
        return ["GM_ADDR"] * n_gm + scalars + ["int64_t"] * len(TILING_PARAMS[self.schedule])

    def max_tile_rows(self) -> int:
        from pyasc.backend.ascendc.vec_alloc import MAX_TILE_ROWS

        return min(MAX_TILE_ROWS, max(1, self.tile // self.unit))


def out_param(o: KernelOutput) -> str:
    if o.kind == PARTIAL:
        assert o.partial is not None
        return o.partial.acc.name + "Part"
    assert o.buf is not None
    return o.buf.name


def plan_vector_kernel(group: FusionGroupOp, soc: SoC, name: str,
                       sized: bool = True) -> VectorKernel:
    """Analyze, lower and size ``group`` (raises ``NotVectorizable`` or E50003).

    A ``rows`` group whose row does not fit one UB tile gets the long-rows schedule
    (``vec_longrows``: the row streamed through UB in column tiles) instead.  Without
    ``sized`` the kernel is returned unsized, for a caller that tiles it itself (a MIX
    epilogue works on rows of one block of C, however long C's rows are)."""
    info = analyze(group)
    spans = analyze_spans(group, info)
    for arg, outer in zip(group.body.blocks[0].args, group.inputs, strict=True):
        arg.name_hint = arg.name_hint or value_name(outer)
    if info.schedule == "cols":
        return plan_streamed(group, info, spans, soc, name, ColsLowering)
    low = VecLowering(group, info, soc, RULES)
    low.run()
    inputs = [KernelInput(a, low.get(a)) for a in group.body.blocks[0].args]
    outputs = _outputs(low, group)
    kernel = VectorKernel(name, group, info, low.prog, inputs, outputs, spans=spans)
    kernel.phys = assign(low.prog)
    for o in kernel.written:
        if o.kind == PARTIAL:
            assert o.partial is not None
            kernel.phys.append(PhysBuf(o.partial.acc.name + "Res_", "res",
                                       o.partial.acc.itemsize, "res"))
    _check_pipe(kernel)
    if not sized:
        kernel.unit = _unit(kernel)
        return kernel
    try:
        _size(kernel, soc)
    except OutOfMemoryError:
        if not _streamable(kernel):
            raise
        return plan_long_rows(group, info, spans, soc, name)
    if _streamable(kernel, dynamic=True):
        try:
            kernel.alt = plan_long_rows(group, info, spans, soc, name + "_long")
            kernel.alt.twin = True
        except (NotVectorizable, OutOfMemoryError):
            pass  # the host then checks that a row fits (E50003 at run time)
    return kernel


def _check_pipe(kernel: VectorKernel) -> None:
    """A TPipe hands out at most 64 buffers (reference 1.1, ``tpipe_impl.h``): a group
    needing more is not one kernel (grouping then plans smaller ones)."""
    if pipe_buffers(kernel.phys) > MAX_PIPE_BUFFERS:
        raise NotVectorizable(f"{pipe_buffers(kernel.phys)} UB buffers (a TPipe holds "
                              f"{MAX_PIPE_BUFFERS})", kernel.group.loc)


def _streamable(kernel: VectorKernel, dynamic: bool = False) -> bool:
    """A row-wise kernel of rank 2 or more whose row length is static (a row too long
    for one UB tile) or, with ``dynamic``, known at run time only."""
    return kernel.schedule == "rows" and kernel.info.rank >= 2 and \
        (kernel.info.space[-1] == DYN) == dynamic


def plan_long_rows(group: FusionGroupOp, info, spans: Spans, soc: SoC,  # noqa: ANN001
                   name: str) -> VectorKernel:
    """``group`` (a ``rows`` group) as a long-rows kernel: each row streamed through UB
    in column tiles, one pass per reduction level (``vec_longrows``)."""
    return plan_streamed(group, info, spans, soc, name, LongLowering)


def plan_streamed(group: FusionGroupOp, info, spans: Spans, soc: SoC,  # noqa: ANN001
                  name: str, lowering: type[LongLowering]) -> VectorKernel:
    """A kernel whose data streams through UB once per reduction level: a long-rows
    one (``LongLowering``: each row in column tiles) or a column-reduction one
    (``ColsLowering``: a block's columns in row tiles)."""
    cols = lowering is ColsLowering
    low = lowering(group, info, soc, RULES)
    plan, outputs = low.run_long(lambda cls: _outputs(low, group, cls))
    outputs.sort(key=lambda o: o.index)
    inputs = [KernelInput(a, low.get(a)) for a in group.body.blocks[0].args]
    kernel = VectorKernel(name, group, info, low.prog, inputs, outputs, spans=spans,
                          long=plan)
    kernel.phys = assign(low.prog, plan.loops(), streamed="row" if cols else "col")
    _check_pipe(kernel)
    sizes = [b.itemsize for b in low.prog.buffers if b.kind in ("tile", "row")]
    kernel.unit = 32 // min(sizes) if sizes else 8
    what = f"the fused {group.attributes['kind']} kernel at this line (" + \
        ("its columns streamed in row tiles)" if cols else
         "its rows streamed in column tiles)")
    kernel.tile = choose_tile(kernel.phys, soc.init_buffer_bytes, kernel.unit, 256, None,
                              group.loc, what, soc.name, max_rows=1)
    kernel.split_rows = cols and not info.planes and info.tail in (-1, info.rank - 1) \
        and _partial_rows(low, group, plan)
    return kernel


def _partial_rows(low: LongLowering, group: FusionGroupOp, plan: LongPlan) -> bool:
    """Whether every result of a cols kernel is a column reduction as it stands (one
    pass, accumulated in its own type): then a block's accumulator over a range of
    the rows is a partial result the host can finish."""
    term = group.body.blocks[0].terminator
    assert term is not None
    if plan.reads != 1:
        return False
    for v in term.operand_values:
        op = None if isinstance(v, BlockArgument) else v.op
        if op not in low.info.col_reductions or \
                low._acc_type(op) != element_type(v.type):  # type: ignore[arg-type]
            return False
    return True


def _outputs(low: VecLowering, group: FusionGroupOp,
             phase: str | None = None) -> list[KernelOutput]:
    """The kernel's results.  With ``phase`` (long-rows kernels) only those whose values
    are final in that phase: ``COL`` results after the last pass, the rest (``FULL``)
    in the output pass."""
    term = group.body.blocks[0].terminator
    assert term is not None
    args = list(group.body.blocks[0].args)
    outs: list[KernelOutput] = []
    seen: dict[Value, int] = {}
    for j, v in enumerate(term.operand_values):
        if phase is not None and _phase(low, v) != phase:
            continue
        if v in seen:
            outs.append(KernelOutput(j, "same", source=seen[v]))
            continue
        seen[v] = j
        if isinstance(v, BlockArgument):
            outs.append(KernelOutput(j, "passthrough", source=args.index(v)))
        elif v in low.partials:
            partial = low.partials[v]
            if not partial.tree:  # a tree fold needs no ReduceX scratch
                low.prog.reduce_tmp_types.add(partial.acc.dtype.name)
            outs.append(KernelOutput(j, PARTIAL, partial=partial))
        else:
            vv = low.get(v)
            cls = low.info.classes[v]
            single = len(term.operand_values) == 1
            buf = _output_buffer(low, vv, v.name_hint or ("out" if single else f"out{j}"))
            outs.append(KernelOutput(j, cls, buf, squeezed=v in low.info.squeezed))
    return outs


def _phase(low: VecLowering, v: Value) -> str:
    line = getattr(low, "line_class", COL)   # the per-line class of a streamed kernel
    return line if not isinstance(v, BlockArgument) and low.info.classes[v] == line else FULL


def _output_buffer(low: VecLowering, vv: VVal, hint: str) -> Buf:
    """The buffer holding an output: the value's own temporary when possible."""
    assert vv.buf is not None
    if vv.is_mask:  # booleans leave as bytes: select 1/0 in half, cast to uint8
        wide = low.temp(vv, f16, "flag")
        select(low, wide, vv, VVal(SCALAR, f16, expr=low.literal(1, f16)),
               VVal(SCALAR, f16, expr=low.literal(0, f16)))
        out = low.new_vec(vv.cls, u8, hint)  # bytes, not a mask: new_vec(u8) is a tile
        assert out.buf is not None
        low.cast(out, wide, "CAST_NONE")
        out.buf.role = "out"
        return out.buf
    if vv.buf.role == "calc":
        vv.buf.role = "out"
        vv.buf.name = low.prog.unique(hint)  # no text was written yet: renaming is free
        return vv.buf
    # An input buffer (a value no op changed: a cast to its own type, a broadcast within
    # its class) leaves through a copy; DataCopy takes every element type, Muls(x, 1)
    # only the arithmetic ones.  Whole 32-byte blocks: the buffers are tile-sized.
    copy = low.new_vec(vv.cls, vv.dtype, hint)
    count = {FULL: "tile32", COL: "col32"}.get(vv.cls)
    if count is None:
        raise NotVectorizable(f"a {vv.cls} value as a kernel result", low.loc)
    assert copy.buf is not None
    low.prog.emit(Instr("DataCopy", Ref(copy.buf), (Ref(vv.buf),), (), count, False, low.loc))
    copy.buf.role = "out"
    return copy.buf


def _unit(kernel: VectorKernel) -> int:
    """Elements per 32-byte block of the narrowest tile or row buffer."""
    sizes = [b.itemsize for b in kernel.prog.buffers if b.kind in ("tile", "row")]
    return 32 // min(sizes) if sizes else 8


def _size(kernel: VectorKernel, soc: SoC) -> None:
    kernel.unit = _unit(kernel)
    space = kernel.info.space
    static = all(d != DYN for d in space)
    want: int | None = None
    min_tile = 256
    if kernel.schedule == "rows":
        cols = space[-1]
        if cols != DYN:
            pitch = -(-cols // kernel.unit) * kernel.unit
            min_tile = pitch
            if static:
                rows = 1
                for d in space[:-1]:
                    rows *= d
                want = pitch * rows
    elif static:
        total = 1
        for d in space:
            total *= d
        want = max(1, total)
    what = f"the fused {kernel.group.attributes['kind']} kernel at this line"
    try:
        kernel.tile = choose_tile(kernel.phys, soc.init_buffer_bytes, kernel.unit,
                                  min_tile, want, kernel.group.loc, what, soc.name)
    except OutOfMemoryError:
        if kernel.schedule == "rows" and kernel.info.rank == 1:  # split it instead
            raise NotVectorizable("a 1-D array reduced as one row longer than the UB",
                                  kernel.group.loc) from None
        raise


def result_slot(partial: Partial) -> int:
    """Elements per block in the partial-result buffer (one 32-byte block each)."""
    return RESULT_BYTES // partial.acc.itemsize

