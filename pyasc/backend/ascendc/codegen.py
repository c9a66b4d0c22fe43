"""The AscendC backend's driver: a Program becomes kernels (C++) plus a host program.

:func:`lower_program` groups the entry function (``grouping``), partitions it
(``partition``), plans each group as a stencil, vector or cube kernel (falling back to
a scalar kernel when no vector schedule fits) and each remaining device region as a
scalar kernel, and builds the host program: the function with every kernel region
replaced by its launch sequence.  ``render`` writes the C++ text.
:func:`generate_ascendc` returns the C++ source alone.  Kernels are named
``<function>_<k>`` in launch order; one ``.cpp`` holds all kernels of a program (what
ascend-sim builds and ``fn.ascendc`` shows).  A kernel object holds the kernels of one
core type (``cores``): ``AscendProgram.objects`` has one source per core type present,
each rendered alone for its own ``--cce-aicore-arch``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyasc.backend.ascendc.copy_loops import find_copy_loops
from pyasc.backend.ascendc.cube_match import CubeMatmulOp, rewrite_cube_matmuls
from pyasc.backend.ascendc.cube_reshape import PASS_NAME as SEE_THROUGH
from pyasc.backend.ascendc.cube_reshape import see_through_reshapes
from pyasc.backend.ascendc.f64_setup import hoist_f64_setup
from pyasc.backend.ascendc.fit import check_fit
from pyasc.backend.ascendc.group_items import GroupLowering
from pyasc.backend.ascendc.grouping import form_groups, merge_adjacent
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.host_scalar import launch_scalar
from pyasc.backend.ascendc.host_xpose import lower_transpose_copy
from pyasc.backend.ascendc.loop_conv import OPTION as KEEP_SUM_ORDER
from pyasc.backend.ascendc.loop_conv import PASS_NAME as LOOP_CONVS
from pyasc.backend.ascendc.loop_conv import rewrite_loop_convs
from pyasc.backend.ascendc.loop_conv_fill import emit_convs
from pyasc.backend.ascendc.loop_conv_rewrite import rewrite_loop_nests
from pyasc.backend.ascendc.lower_channels import (
    find_channel_loops,
    interchange_channels,
    lower_channels,
    merge_channel_groups,
    start_ops,
)
from pyasc.backend.ascendc.lower_conv import find_convs, lower_conv, lower_conv_mix
from pyasc.backend.ascendc.lower_cube import lower_copy, lower_cube, lower_mix
from pyasc.backend.ascendc.lower_pool import lower_pool, lower_taps
from pyasc.backend.ascendc.mix_plan import PASS_NAME as MIX_PASS
from pyasc.backend.ascendc.mix_plan import find_epilogues
from pyasc.backend.ascendc.partition import (
    BranchItem,
    CopyItem,
    CubeItem,
    GroupItem,
    HostItem,
    Item,
    ScalarItem,
    partition,
)
from pyasc.backend.ascendc.pool_kernel import plan_pool_kernel
from pyasc.backend.ascendc.pool_loops import find_pool_loops
from pyasc.backend.ascendc.pool_reshape import rewrite_reshape_pools
from pyasc.backend.ascendc.pool_taps import find_tap_loops
from pyasc.backend.ascendc.render import Kernel, KernelObject, kernel_objects, program_source
from pyasc.backend.ascendc.scalar_f64 import DEMOTE_OPTION
from pyasc.backend.ascendc.scalar_plan import (
    escaping_values,
    external_values,
    is_scalar_constant,
    outline,
    plan_scalar_kernel,
)
from pyasc.backend.ascendc.soc import SoC, get_soc
from pyasc.backend.ascendc.split_reduce import split_reductions
from pyasc.backend.ascendc.stencil_kernel import (
    MAX_STENCIL_OPS,
)
from pyasc.backend.ascendc.unsupported import unsupported
from pyasc.backend.ascendc.vec_bf16 import widen_tensor_bf16
from pyasc.backend.ascendc.vec_f64 import demote_tensor_f64
from pyasc.backend.ascendc.vec_kernel import VectorKernel, plan_vector_kernel
from pyasc.backend.base import Program
from pyasc.errors import PyascPerformanceWarning
from pyasc.ir.core import Location, Operation, OpResult, Value
from pyasc.ir.ops import mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.ops.loop import IfOp
from pyasc.ir.passes import PassContext, PassManager, disabled_passes, run_pipeline
from pyasc.ir.passes.effects import base_buffer
from pyasc.ir.passes.versioning import top_blocks
from pyasc.ir.types import TensorType

VECTOR_EXPANDED = ("math.atan",)
"""Math ops expanded into arithmetic (``expand-math``) before kernels are formed: the
vector unit has no instruction for them, but has one for each op of the expansion."""

@dataclass
class AscendProgram:
    """The result of lowering one Program for one SoC."""

    host: ModuleOp
    entry: str
    source: str
    filename: str
    kernels: list[Kernel]
    soc: SoC
    files: dict[str, str] = field(default_factory=dict)   # #line base name -> path
    scalar_regions: list[tuple[Location, str]] = field(default_factory=list)
    objects: list[KernelObject] = field(default_factory=list)  # one per core type

    @property
    def kernel_names(self) -> list[str]:
        return [k.name for k in self.kernels]

    @property
    def cores(self) -> dict[str, str]:
        """``{kernel name: core type}``."""
        return {k.name: k.core for k in self.kernels}


@dataclass
class _Found:
    """What the backend recognized in the function before partitioning it: copy loops,
    pool loops, tap loops, tap pools' divisions, matmul epilogues, convolutions whose
    im2col is built in L1 (and the ids of their column copies and the host ops they make
    needless, which are not run)."""

    copies: dict
    pools: dict
    taps: dict
    divisions: set
    fused: Any
    convs: dict
    in_l1: set
    needless: set
    channels: dict = field(default_factory=dict)


class _Lowering(GroupLowering):
    def __init__(self, program: Program, soc: SoC) -> None:
        self.program, self.soc = program, soc
        module = program.module.clone()
        assert isinstance(module, ModuleOp)
        self.module = module
        self.fn = module.get(program.entry)
        if len(list(module.functions)) != 1:
            raise unsupported("a program of several functions (callees are inlined by the "
                              "frontend)", self.fn.loc)
        self.host = ModuleOp.empty()
        fn = self.fn
        self.hfn = FuncOp.empty(fn.sym_name, fn.function_type.inputs,
                                fn.function_type.results,
                                [a.name_hint for a in fn.entry.args], loc=fn.loc)
        self.host.append(self.hfn)
        self.env: dict[Value, Value] = dict(zip(fn.entry.args, self.hfn.entry.args, strict=True))
        self.hb = HostBuilder(self.hfn.entry, fn.loc)
        self.kernels: list[Kernel] = []
        self.stencils = True  # stencil kernels planned (PYASC_DISABLE_PASSES=stencil-windows)
        self.regions: list[tuple[Location, str]] = []

    def run(self) -> None:
        self.stencils = "stencil-windows" not in disabled_passes()
        if self.stencils and "channel-interchange" not in disabled_passes():
            # a run-time channel loop inside a conv's nest over outputs: moved out, where
            # that makes the loop one channel kernel (lower_channels)
            interchange_channels(self.module, self.fn.sym_name, self.soc, self._prepare,
                                 self._probe)
        self._prepare(self.module, self.fn)
        form_groups(self.fn, self._probe)
        if self.stencils:
            # a stencil's per-element work (a bilateral filter's 121 windows) spans several
            # groups of MAX_GROUP_OPS; as one stencil kernel its accumulators stay in UB
            for block in top_blocks(self.fn.entry):
                merge_adjacent(block, self._stencil_probe, MAX_STENCIL_OPS)
            merge_channel_groups(self.fn, self.soc)  # a channel's taps: one group
        PassManager(["cse"]).run(self.module, PassContext())  # merged groups repeat ops
        if not self.soc.float64:
            hoist_f64_setup(self.fn, lambda g: plan_vector_kernel(g, self.soc, "probe"))
        # groups whose inputs are windows of one array become stencil kernels
        run_pipeline(self.module, ["stencil-windows"])
        copies = find_copy_loops(self.fn, self.soc)
        # loops of window reductions (pooling) become pool kernels (with the stencils)
        pools = find_pool_loops(self.fn) if self.stencils else {}
        taps = find_tap_loops(self.fn) if self.stencils else {}
        # a tap pool's division is its kernel's when the SoC has the kernel's APIs
        divisions = {t.group for t in taps.values() if t.group is not None and
                     plan_pool_kernel(t, self.soc, "probe") is not None}
        # a matmul and its elementwise epilogue: one MIX kernel (or Fixpipe's ReLU/cast)
        fused = find_epilogues(self.fn, self.soc, MIX_PASS not in disabled_passes())
        # an im2col copy loop and the matmul reading its columns: the im2col in L1
        cubes = [op for op in self.fn.entry.ops if isinstance(op, CubeMatmulOp)]
        convs = find_convs(copies, cubes, {c: (v, j) for c, v, j in fused.mix.values()},
                           self.soc)
        channels = find_channel_loops(self.fn, self.soc) if self.stencils else {}
        self.found = _Found(copies, pools, taps, divisions, fused, convs,
                            {id(m.copy) for m, _ in convs.values()},
                            {op for m, _ in convs.values() for op in m.host_ops} |
                            {op for cs in channels.values() for op in start_ops(cs)}, channels)
        self._lower_items(partition(self.fn, lambda op: isinstance(op, CubeMatmulOp),
                                    lambda op: op in copies or op in pools or op in taps or
                                    op in channels))
        PassManager(["canonicalize", "cse"]).run(self.host, PassContext())

    def _prepare(self, module: ModuleOp, fn: FuncOp) -> None:
        """What runs before grouping (on the module, or on a trial copy of it)."""
        # loops over rows with independent iterations become batch tensor work, which
        # the vector planner can take (``batch-loops``); the rest stay scalar kernels
        demote = self.program.options.get(DEMOTE_OPTION) == "demote" and not self.soc.float64
        run_pipeline(module, ["batch-loops"], {"float64_arrays": demote})
        convs = LOOP_CONVS not in disabled_passes()
        keep_order = self.program.options.get(KEEP_SUM_ORDER) is False
        pending = rewrite_loop_nests(fn, self.soc, keep_order) if convs else []
        if pending:
            # a conv nest batch-loops left scalar reads a matmul now; its epilogue batches
            run_pipeline(module, ["batch-loops"], {"float64_arrays": demote})
            emit_convs(pending)
        if demote:
            demote_tensor_f64(fn)  # float64 array work stays on the vector unit
        if self.soc.has_element("bf16"):
            widen_tensor_bf16(fn)  # bfloat16 arithmetic: float32 ops, rounded
        if convs:  # a batched convolution (a stencil's sum): an im2col and a matmul
            rewrite_loop_convs(fn, self.soc, keep_order)
        rewrite_cube_matmuls(fn, self.soc)  # before grouping: casts it reads through
        if SEE_THROUGH not in disabled_passes():
            # a reshaped cube result's epilogue in the cube's shape (conv2d's bias)
            see_through_reshapes(fn)
        # no vector instruction computes atan: its polynomial is arithmetic that has one
        run_pipeline(module, ["expand-math"], {"only": VECTOR_EXPANDED,
                                               "float64": self.soc.float64})
        if self.stencils:  # x.reshape(h // 2, 2, w // 2, 2).max(axis=(1, 3)): a pool
            rewrite_reshape_pools(fn, lambda p: plan_pool_kernel(p, self.soc, "probe") is not None)
        # x.sum(axis=(0, 2)): a row reduction, then a column one (vector schedules)
        split_reductions(fn)

    def _lower_items(self, items: list[Item]) -> None:
        """Each partition item as host ops and kernel launches, in order."""
        copies, pools, taps = self.found.copies, self.found.pools, self.found.taps
        divisions, fused = self.found.divisions, self.found.fused
        convs, in_l1 = self.found.convs, self.found.in_l1
        for item in items:
            if isinstance(item, BranchItem):
                self._branch(item)
            elif isinstance(item, HostItem | GroupItem) and item.op in self.found.needless:
                continue  # a fill or padded copy the conv kernel does not read (lower_conv),
                # the fill of a channel kernel's accumulators (it writes them all), or the
                # post group its epilogue computes
            elif isinstance(item, HostItem):
                if not lower_transpose_copy(self, item.op):  # a copy of a transposed view
                    self.hb.insert(item.op.clone(self.env))
            elif isinstance(item, GroupItem) and item.op in fused.mix:
                op, vec, c_arg = fused.mix[item.op]
                if op in convs:
                    lower_conv_mix(self, *convs[op], vec, c_arg, item.op)
                else:
                    lower_mix(self, op, vec, c_arg, item.op)
            elif isinstance(item, GroupItem) and item.op in fused.fixpipe:
                self.env[item.op.result_values[0]] = self.env[fused.fixpipe[item.op][0].result]
            elif isinstance(item, GroupItem) and item.op in divisions:
                continue  # the division of a tap pool's kernel (lower_taps)
            elif isinstance(item, GroupItem):
                self._group(item.op)
            elif isinstance(item, CubeItem) and fused.skipped(item.op):
                continue  # launched with its epilogue (lower_mix)
            elif isinstance(item, CubeItem) and item.op in convs:
                fix = fused.fixpipe_of(item.op)
                lower_conv(self, *convs[item.op], fix[0] if fix else None)
            elif isinstance(item, CubeItem):
                assert isinstance(item.op, CubeMatmulOp)
                lower_cube(self, item.op, *(fused.fixpipe_of(item.op) or (None, None)))
            elif isinstance(item, CopyItem) and item.op in pools:
                lower_pool(self, pools[item.op], item.op)
            elif isinstance(item, CopyItem) and item.op in taps:
                lower_taps(self, taps[item.op], item.op)
            elif isinstance(item, CopyItem) and item.op in self.found.channels:
                lower_channels(self, self.found.channels[item.op])
            elif isinstance(item, CopyItem) and id(copies.get(item.op)) in in_l1:
                continue  # the column matrix of a conv kernel's im2col in L1 (lower_conv)
            elif isinstance(item, CopyItem):
                lower_copy(self, copies[item.op])
            elif isinstance(item, ScalarItem) and any(op in divisions for op in item.ops):
                rest = [op for op in item.ops if op not in divisions]
                if rest:
                    self._scalar(ScalarItem(rest))
            else:
                self._scalar(item)

    def _branch(self, item: BranchItem) -> None:
        """A versioned loop's ``if`` on the host: the condition is scalar math on shapes
        and sizes, so the host picks the branch and launches that branch's kernels (the
        batched fast copy, or the unchanged loop that raises where it always did)."""
        op = item.op
        self.hb.b.loc = op.loc
        host = self.hb.insert(IfOp.empty(self.env[op.cond], [r.type for r in op.outputs],
                                         op.loc))
        outer = self.hb
        for region, items in zip(host.region_list, (item.then_items, item.else_items),
                                 strict=True):
            self.hb = HostBuilder(region.blocks[0], op.loc)
            self._lower_items(items)  # ends with the branch's yield (a host op)
        self.hb = outer
        self.env.update(zip(op.result_values, host.result_values, strict=True))

    def _name(self) -> str:
        twins = sum(1 for k in self.kernels if isinstance(k, VectorKernel) and k.twin)
        return f"{self.fn.sym_name}_{len(self.kernels) - twins}"

    def _scalar(self, item: ScalarItem) -> None:
        inputs = [v for v in external_values(item.ops) if not is_scalar_constant(v)]
        outputs = escaping_values(item.ops)
        fn = outline(item.ops, inputs, outputs)
        self._launch_scalar(fn, inputs, outputs, _reason(item.ops), item.ops[0].loc,
                            item.ops)

    def _launch_scalar(self, fn: FuncOp, inputs: list[Value], outputs: list[Value],
                       reason: str, loc: Location, region: list[Operation] | None = None,
                       hb: HostBuilder | None = None, warn: bool = True) -> list[Value]:
        def distinct(i: int, j: int) -> bool:
            return _distinct(inputs[i], inputs[j])

        def private(i: int) -> bool:
            return region is not None and _private(inputs[i], region)

        k = plan_scalar_kernel(self._name(), fn, inputs, outputs, distinct, reason,
                               self.program.options, private, self.soc)
        self.kernels.append(k)
        self.regions.append((loc, reason))
        if warn:
            _warn(loc, reason, self.soc)
        hb = hb or self.hb
        hb.b.loc = loc
        results = launch_scalar(hb, k, [self.env[v] for v in inputs], self.soc)
        self.env.update(zip(outputs, results, strict=True))
        return results


def _distinct(a: Value, b: Value) -> bool:
    """True when two inputs of a scalar kernel cannot be the same memory."""
    if isinstance(a.type, TensorType) or isinstance(b.type, TensorType):
        return True  # array values reach kernels as their own copies
    ra, rb = base_buffer(a), base_buffer(b)
    if ra is rb:
        return False
    fresh = [isinstance(r, OpResult) and isinstance(r.op, mem.AllocOp) for r in (ra, rb)]
    return any(fresh)  # two parameters may be the same array


def _private(v: Value, region: list[Operation]) -> bool:
    """True when ``v`` is a buffer allocated outside ``region`` that nothing after the
    region uses (directly or through views): the kernel may treat it as its own."""
    if not (isinstance(v, OpResult) and isinstance(v.op, mem.AllocOp)):
        return False
    block = region[0].parent
    ops = list(block.ops)  # type: ignore[union-attr]
    first = ops.index(region[0])
    todo = [v]
    while todo:
        for user, _ in todo.pop().uses:
            top: Operation | None = user
            while top is not None and top.parent is not block:
                top = top.parent_op
            if top is None or (top not in region and ops.index(top) > first):
                return False
            if user.has_trait("view"):
                todo.extend(user.result_values)
    return True


def _reason(ops: list[Operation]) -> str:
    for op in ops:
        for inner in op.walk():
            if inner.name.startswith("loop."):
                return "a loop with array work"
    return f"'{ops[0].name}' has no vector schedule"


def _warn(loc: Location, reason: str, soc: SoC) -> None:
    warnings.warn_explicit(
        f"pyasc: this code runs as scalar AscendC on {soc.name} (GetValue/SetValue on the "
        f"scalar unit, not the vector unit): {reason}", PyascPerformanceWarning,
        loc.file or "<unknown>", loc.line or 0)


def lower_program(program: Program, soc: str | SoC | None = None) -> AscendProgram:
    """Kernels, source and host program of ``program`` for ``soc`` (default 910B1)."""
    target = soc if isinstance(soc, SoC) else get_soc(soc)
    low = _Lowering(program, target)
    low.run()
    check_fit(low.kernels, target)
    filename = f"{program.entry}.cpp"
    w = program_source(low.kernels, filename, target, program.source_file)
    objects = kernel_objects(low.kernels, w, filename, target, program.source_file)
    return AscendProgram(low.host, program.entry, w.text(), filename, low.kernels, target,
                         w.files, low.regions, objects)


def lower_variants(program: Program, socs: Sequence[SoC]) -> list[AscendProgram]:
    """``program`` lowered (and so fit-checked) for each SoC of ``socs``, in order.

    The first SoC's performance warnings are issued as usual; another SoC's only for
    code that is scalar there but vector on the first, and they name that SoC."""
    first = lower_program(program, socs[0])
    on_first = {(loc.file or "<unknown>", loc.line or 0) for loc, _ in first.scalar_regions}
    variants = [first]
    for soc in socs[1:]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PyascPerformanceWarning)
            variants.append(lower_program(program, soc))
        for w in caught:
            if not issubclass(w.category, PyascPerformanceWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            elif (w.filename, w.lineno) not in on_first:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return variants


def generate_ascendc(program: Program, soc: str | SoC | None = "Ascend910B1") -> str:
    """The AscendC source (one ``.cpp``) of ``program`` for ``soc``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        return lower_program(program, soc).source


__all__ = ["AscendProgram", "KernelObject", "PyascPerformanceWarning", "generate_ascendc",
           "lower_program", "lower_variants"]
