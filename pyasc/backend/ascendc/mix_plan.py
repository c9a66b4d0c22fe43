"""MIX kernels: a cube matmul and the elementwise epilogue fused after it.

After kernels are formed, a static-shape ``ascend.cube_matmul`` whose only user is a
fusion group that plans as a vector kernel and is an *epilogue* of it becomes one MIX
kernel (``__mix__(1, 2)``: one cube core and two vector cores per block, reference
section 8).  An epilogue is recognized from the group's analysis, not from a list of
patterns: every value is elementwise over the matmul result's shape (the ``flat`` or
``rows`` schedule without row reductions), the result is one of its array inputs (class
``full``), every other input is a same-shape array (``full``), a per-row column
(``col``, e.g. ``(M, 1)``), a per-column row (``row``, e.g. a bias ``(N,)``) or a
scalar, and every output is a ``full`` array.  The cube part writes each ``baseM x
baseN`` block of C through ``Fixpipe`` into one of two GM workspace slots of its core
and hands it to the vector cores with ``CrossCoreSetFlag``; each vector core runs the
group's tile program (``vec_lower``, the vector kernel's own lowering) on half of the
block's rows and gives the slot back (``emit_mix``).

An epilogue that is only ``max(C, 0)`` and/or a cast of a float32 result to float16 or
bfloat16 needs no vector core at all: Fixpipe applies ReLU (``reluEn``) and the
conversion (``F322F16``/``F322BF16``, RINT like numpy) on the way out, so the cube kernel
does it (``FixpipeEpilogue``).

With run-time shapes (``dynamic_shape=True``) the cube part is ``cube_dynamic``'s one
plan for every shape and the vector part's sizes are kernel arguments too (C's rows and
row length; a block's ``curN`` and row count are computed in the kernel, as for static
shapes); the host (``host_dynamic.launch_mix_dynamic``) checks that the epilogue's
space is C's shape and that the cube kernel's limits hold, else it runs the unfused
pair.  ``PYASC_DISABLE_PASSES=fusion`` keeps the separate kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from pyasc.backend.ascendc.analysis import COL, FULL, ROW, SCALAR, NotVectorizable
from pyasc.backend.ascendc.cores import MIX
from pyasc.backend.ascendc.cube_dynamic import is_dynamic, plan_at, plan_dynamic
from pyasc.backend.ascendc.cube_match import QUANT, CubeMatmulOp
from pyasc.backend.ascendc.cube_plan import CubeKernel, plan_cube_kernel
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.vec_alloc import MAX_TILE_ROWS, choose_tile
from pyasc.backend.ascendc.vec_kernel import VectorKernel, plan_vector_kernel
from pyasc.errors import OutOfMemoryError
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import DYN, TensorType, element_type

SLOTS = 2
"""Workspace slots per cube core: the cube writes one while the vector cores read the
other (flags ``READY + slot`` cube -> vector, ``FREE + slot`` vector -> cube)."""
READY, FREE = 0, 2
PASS_NAME = "fusion"
"""Disabling fusion (``PYASC_DISABLE_PASSES``) disables MIX kernels too."""


@dataclass
class MixKernel:
    """A cube matmul and its epilogue as one MIX kernel."""

    core: ClassVar[str] = MIX
    name: str
    cube: CubeKernel
    vec: VectorKernel
    c_arg: int                 # the position of the matmul result among vec's inputs
    rows: int                  # rows of C as the cube writes it (batch * M; DYN: run time)
    cols: int                  # its row length (N; DYN: run time)

    @property
    def dynamic(self) -> bool:
        """Run-time shapes: C's sizes and the launch's block_dim are kernel arguments."""
        return self.cube.dynamic

    @property
    def block_dim(self) -> int:
        """The launch's numBlocks: cube cores, each with two vector cores (8.6)."""
        return self.cube.block_dim

    @property
    def slot_elems(self) -> int:
        """Elements of the workspace per cube core (its two slots)."""
        t = self.cube.tile
        return SLOTS * t.base_m * t.base_n

    @property
    def workspace_elems(self) -> int:
        """Elements of the whole workspace (static shapes only: ``block_dim`` is known)."""
        assert not self.dynamic
        t = self.cube.tile
        return self.block_dim * SLOTS * t.base_m * t.base_n


def _only_user(op: CubeMatmulOp) -> FusionGroupOp | None:
    users = {user for user, _ in op.result.uses}
    if len(users) != 1:
        return None
    user = users.pop()
    return user if isinstance(user, FusionGroupOp) else None


_HARMLESS = frozenset({"pure", "allocates", "reads"})


def _nothing_writes_between(fn: FuncOp, op: CubeMatmulOp, group: FusionGroupOp) -> bool:
    """The MIX kernel runs in the group's place: no op between the matmul and the group
    may write memory the matmul reads (a snapshot's buffer), so allow only ops that
    write nothing."""
    ops = fn.entry.ops
    between = ops[ops.index(op) + 1:ops.index(group)]
    return all(o.traits & _HARMLESS and not o.regions or isinstance(o, FusionGroupOp)
               for o in between)


def _same_shape(shape: tuple[int, ...], c: tuple[int, ...], dynamic: bool) -> bool:
    """``shape`` is C's shape: equal extents, or with a ``dynamic`` matmul a run-time
    ``?`` matching any (its host compares the run-time extents before it launches the
    MIX kernel; a static launch computes none)."""
    if not dynamic:
        return shape == c
    return len(shape) == len(c) and all(a == b or DYN in (a, b)
                                        for a, b in zip(shape, c, strict=True))


def _epilogue(group: FusionGroupOp, op: CubeMatmulOp,
              soc: SoC) -> tuple[VectorKernel, int] | None:
    """(the group as a vector kernel, the position of ``op``'s result among its inputs)
    when the group is an epilogue of it (module docstring)."""
    c = op.result
    ct = c.type
    assert isinstance(ct, TensorType)
    if list(group.inputs).count(c) != 1:
        return None
    try:  # unsized: C's rows may be too long for a vector kernel, not for a block's
        k = plan_vector_kernel(group, soc, "probe", sized=False)
    except (NotVectorizable, OutOfMemoryError):
        return None
    info = k.info
    if k.long is not None or info.schedule not in ("flat", "rows") or info.row_reductions:
        return None
    dynamic = is_dynamic(op)
    if not _same_shape(tuple(info.space), ct.shape, dynamic):
        return None
    if dynamic and k.spans.checks:  # results sliced to numpy's extents: unfused
        return None
    pos = list(group.inputs).index(c)
    # a 1-D B: the cube's C is M x 1, not the rows x N the row/column classes index
    column = len(op.logical_shapes()[1]) == 1
    for j, i in enumerate(k.inputs):
        if i.vv.cls not in (FULL, ROW, COL, SCALAR) or (j == pos and i.vv.cls != FULL) \
                or (column and i.vv.cls in (ROW, COL)):
            return None
        # a same-shape array, maybe without C's leading 1s (same layout)
        shape = tuple(getattr(i.arg.type, "shape", ()))
        if i.vv.cls == FULL and not _same_shape((1,) * (ct.rank - len(shape)) + shape,
                                                ct.shape, dynamic):
            return None
    if any(o.kind != FULL for o in k.outputs):
        return None
    try:  # rows of one block of C fit UB
        plan_mix_kernel(op, k, pos, soc, "probe")
    except OutOfMemoryError:
        return None
    return k, pos


@dataclass(frozen=True)
class FixpipeEpilogue:
    """What Fixpipe does on the way out instead of a vector core: ``reluEn``, and the
    conversion to ``out`` (a dtype name) when the epilogue casts C to it."""

    relu: bool
    out: str | None


def _fixpipe_step(op: Operation, x: Value) -> str | None:
    """``relu`` for ``max(x, 0)``, ``cast`` for a cast of ``x``, else None."""
    if type(op) is arith.MaxOp:
        a, b = op.operand_values
        other = b if a is x else a if b is x else None
        return "relu" if other is not None and constant_value(other) == 0 else None
    return "cast" if type(op) is arith.CastOp else None


def _fixpipe_epilogue(group: FusionGroupOp, op: CubeMatmulOp) -> FixpipeEpilogue | None:
    """The group as Fixpipe work: a chain from C of at most one ``max(., 0)`` and at
    most one cast to a dtype Fixpipe converts the accumulator to (``QUANT``) with the
    same rounding as numpy's ``astype`` (RINT).  ReLU before or after the rounding is
    the same value (the rounding keeps signs and zero)."""
    block = group.body.blocks[0]
    term = block.terminator
    assert term is not None
    if list(group.inputs) != [op.result] or len(term.operand_values) != 1:
        return None
    chain = [o for o in block.ops if o.name != "fusion.yield"
             and not isinstance(o, arith.ConstantOp)]
    x: Value = block.args[0]
    steps: list[str] = []
    for o in chain:
        step = _fixpipe_step(o, x)
        if step is None or step in steps or x not in o.operand_values:
            return None
        steps.append(step)
        x = o.result
    if x is not term.operand_values[0] or not steps:
        return None
    a = op.lhs.type
    assert isinstance(a, TensorType)
    out = element_type(x.type).name if "cast" in steps else None
    if out is not None and ((a.element.name, out) not in QUANT
                            or element_type(op.result.type).name != "f32"):
        return None
    return FixpipeEpilogue("relu" in steps, out)


@dataclass
class Fused:
    """The epilogues found in a function: ``mix[group]`` launches in the group's place
    (its cube op is skipped), ``fixpipe`` cube ops absorb their group."""

    mix: dict[FusionGroupOp, tuple[CubeMatmulOp, VectorKernel, int]]
    fixpipe: dict[FusionGroupOp, tuple[CubeMatmulOp, FixpipeEpilogue]]

    def fixpipe_of(self, op: Operation) -> tuple[FixpipeEpilogue, FusionGroupOp] | None:
        """What Fixpipe does for cube op ``op``, and the group it does (None: plain)."""
        return next(((f, g) for g, (c, f) in self.fixpipe.items() if c is op), None)

    def skipped(self, op: Operation) -> bool:
        """The cube op of a MIX kernel: launched with its group."""
        return any(op is c for c, _, _ in self.mix.values())


def find_epilogues(fn: FuncOp, soc: SoC, enabled: bool) -> Fused:
    """The MIX kernels and Fixpipe-ReLU cube kernels of ``fn``'s top level."""
    fused = Fused({}, {})
    if not enabled or soc.cube is None:
        return fused
    for op in fn.entry.ops:
        if not isinstance(op, CubeMatmulOp):
            continue
        group = _only_user(op)
        if group is None or not _nothing_writes_between(fn, op, group):
            continue
        fix = _fixpipe_epilogue(group, op)
        if fix is not None:
            fused.fixpipe[group] = (op, fix)
            continue
        found = _epilogue(group, op, soc)
        if found is not None:
            fused.mix[group] = (op, *found)
    return fused


def plan_mix_kernel(op: CubeMatmulOp, vec: VectorKernel, c_arg: int, soc: SoC,
                    name: str) -> MixKernel:
    """The cube plan of ``op`` (``cube_dynamic``'s for run-time shapes) and ``vec``
    retiled for blocks of C: a tile of UB holds at least one row of a block (``baseN``
    columns; a run-time row length may fill them), at most half a block."""
    dynamic = is_dynamic(op)
    cube = plan_dynamic(op, soc, name) if dynamic else plan_cube_kernel(op, soc, name)
    vec.name = name
    # C as the cube lays it out: batch * M rows of N (a 1-D B: M rows of 1)
    rows, cols = (DYN, DYN) if dynamic else (cube.batch * cube.m, cube.n)
    t = cube.tile
    pitch = -(-(t.base_n if dynamic else min(cols, t.base_n)) // vec.unit) * vec.unit
    half = -(-(t.base_m if dynamic else min(rows, t.base_m)) // 2)
    what = f"the epilogue of the MIX kernel {name}"
    vec.tile = choose_tile(vec.phys, soc.init_buffer_bytes, vec.unit, pitch, pitch * half,
                           vec.group.loc, what, soc.name, max_rows=MAX_TILE_ROWS)
    return MixKernel(name, cube, vec, c_arg, rows, cols)


def mix_at(k: MixKernel, m: int, n: int, kk: int, batch: tuple[int, ...],
           cores: int) -> MixKernel:
    """MIX kernel ``k`` of run-time shapes as the static kernel one call runs
    (``cube_dynamic.plan_at``), for ``mix_cost``."""
    cube = plan_at(k.cube, m, n, kk, batch, cores)
    return replace(k, cube=cube, rows=cube.batch * m, cols=n)


__all__ = ["FREE", "PASS_NAME", "READY", "SLOTS", "FixpipeEpilogue", "Fused", "MixKernel",
           "find_epilogues", "mix_at", "plan_mix_kernel"]
