"""Column statistics of narrow tall matrices over every core: one split kernel per pass.

A ``cols`` kernel gives each block a range of 32-byte column ranges; ``(4097, 7)`` has
one, so its whole reduction runs in one block.  A kernel whose results are the column
reductions themselves splits the rows across blocks too (``VectorKernel.split_rows``:
the host adds the partial rows), but a mean (a divide after the sum), a variance (two
passes: the mean, then the squares of ``x - mean``) or a float16 sum (accumulated in
float32) did not.  Such a group whose results are all per-column values is run here as
one kernel per pass (:func:`stages`): pass ``L`` computes the full values of level
``L - 1`` and its column reductions, with the rows split across blocks; the host adds
the partial rows and computes the per-column ops (the divide, ``var + eps``) between the
passes, on ``C`` values each.  A float16 sum is a float32 sum of the widened values,
rounded once at the end: the partial rows stay float32, as in the one-block kernel.
``x`` is read once per pass, as by the one-block kernel; the sums add each row range in
order and then the partial rows: the order of ``split_rows`` (docs/math-accuracy.md).

The split is chosen when it gives at least two row blocks: at compile time for static
shapes, else by a host branch between the split passes and the one-block kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyasc.backend.ascendc.analysis import FULL, REDUCTIONS, NotVectorizable, analyze, body_ops
from pyasc.backend.ascendc.grouping import build_group
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.host_vector import MIN_BLOCK_ELEMENTS, launch_vector, space_dims
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.vec_kernel import VectorKernel, plan_vector_kernel
from pyasc.errors import OutOfMemoryError
from pyasc.ir.core import BlockArgument, Operation, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.ops.loop import IfOp, YieldOp
from pyasc.ir.types import DYN, element_type, f16, f32


@dataclass
class Stage:
    """One pass: its kernel (a ``split_rows`` cols kernel) and the original values its
    results stand for."""

    kernel: VectorKernel
    level: int
    results: list[Value]


def candidate(k: VectorKernel) -> bool:
    """A one-block-per-column-range cols kernel of a plain ``(rows, C)`` space whose
    results are all per-column values (nothing full-size is written)."""
    info = k.info
    if k.schedule != "cols" or k.split_rows or info.planes or \
            info.tail not in (-1, info.rank - 1):
        return False
    term = k.group.body.blocks[0].terminator
    assert term is not None
    return all(not isinstance(v, BlockArgument) and info.classes[v] != FULL
               for v in term.operand_values)


def _levels(group: FusionGroupOp) -> dict[Value, int]:
    """Pass of each value: inputs 0, a reduction's result one more than its source."""
    level: dict[Value, int] = {a: 0 for a in group.body.blocks[0].args}
    for op in body_ops(group):
        if isinstance(op, REDUCTIONS):
            n = level[op.operand_values[0]] + 1
        else:
            n = max((level.get(v, 0) for v in op.operand_values), default=0)
        for r in op.result_values:
            level[r] = n
    return level


def _widen_half_sums(group: FusionGroupOp) -> None:
    """``sum(x16)`` -> ``cast(sum(cast(x16, f32)), f16)``: one rounding, as the one-block
    kernel's float32 accumulator; the partial rows then stay float32."""
    block = group.body.blocks[0]
    for op in [o for o in body_ops(group) if isinstance(o, tensor.SumOp)]:
        src = op.operand_values[0]
        if element_type(src.type) != f16:
            continue
        at = block.index_of(op)
        wide = arith.CastOp.new(src, f32, loc=op.loc)
        red = tensor.SumOp.new(wide.result, tuple(op.attributes["axes"]),
                               op.attributes["keepdims"], loc=op.loc)
        narrow = arith.CastOp.new(red.result, f16, loc=op.loc)
        for i, new in enumerate((wide, red, narrow)):
            block.insert(at + i, new)
        op.result.replace_all_uses_with(narrow.result)
        op.erase()


def stages(original: FusionGroupOp, soc: SoC, name: Callable[[], str]
           ) -> tuple[FusionGroupOp, list[Stage]] | None:
    """A copy of ``original`` with its float16 sums widened and its passes as split
    kernels, or None when one of them is not a ``split_rows`` kernel (the copies are
    erased then: a detached op's operands would keep uses of the function's values)."""
    group = original.clone({})
    _widen_half_sums(group)
    out: list[Stage] = []
    try:
        cls_of = analyze(group).classes
        level = _levels(group)
        ops = body_ops(group)
        base = name()
        for n in sorted({level[op.result] for op in ops if isinstance(op, REDUCTIONS)}):
            reds = [op for op in ops if isinstance(op, REDUCTIONS) and level[op.result] == n]
            need = _full_deps(reds, cls_of)
            sub = build_group([op for op in ops if op in need or op in reds], "reduction",
                              [op.result for op in reds])
            out.append(Stage(plan_vector_kernel(sub, soc, f"{base}_pass{n}"), n,
                             [op.result for op in reds]))
            if not out[-1].kernel.split_rows:
                raise NotVectorizable("a pass that does not split its rows")
    except (NotVectorizable, OutOfMemoryError):
        for s in out:
            s.kernel.group.erase()
        group.erase()
        return None
    return group, out


def _full_deps(reds: list[Operation], cls_of: dict[Value, str]) -> set[Operation]:
    """The full-size ops the reductions read, transitively (recomputed in the pass)."""
    todo = [op.operand_values[0] for op in reds]
    need: set[Operation] = set()
    while todo:
        v = todo.pop()
        op = getattr(v, "op", None)
        if op is None or op in need or cls_of.get(v) != FULL or isinstance(op, REDUCTIONS):
            continue
        need.add(op)
        todo.extend(op.operand_values)
    return need


def worth_splitting(hb: HostBuilder, k: VectorKernel, dims: list[Value], cores: int) -> Value:
    """``i1``: the rows split into two or more row blocks (host_vector's cols tiling of
    a ``split_rows`` kernel) of 1024 elements or more on average: the one-block kernel
    would leave cores idle for work worth another launch."""
    rows, cols = hb.product(dims[:-1]), dims[-1]
    per = hb.round_up(hb.max(hb.ceil_div(cols, cores),
                             hb.ceil_div(MIN_BLOCK_ELEMENTS, hb.max(rows, 1))), k.unit)
    per = hb.min(per, k.tile)
    idle = hb.binary(arith.FloorDivOp, hb.const(cores), hb.max(hb.ceil_div(cols, per), 1))
    rows_per = hb.max(hb.ceil_div(rows, hb.max(idle, 1)), hb.ceil_div(MIN_BLOCK_ELEMENTS, per))
    blocks = hb.cmp("ge", hb.ceil_div(rows, hb.max(rows_per, 1)), 2)
    work = hb.cmp("ge", hb.mul(rows, hb.min(cols, per)), 2 * MIN_BLOCK_ELEMENTS)
    return hb.insert(arith.AndOp.new(blocks, work)).result


def static_worth(k: VectorKernel, cores: int) -> bool | None:
    """:func:`worth_splitting` for a static space (None: run-time shapes)."""
    space = k.info.space
    if DYN in space:
        return None
    rows = 1
    for d in space[:-1]:
        rows *= d
    cols = space[-1]
    per = -(-max(-(-cols // cores), -(-MIN_BLOCK_ELEMENTS // max(rows, 1))) // k.unit) * k.unit
    per = min(per, k.tile)
    idle = max(cores // max(-(-cols // per), 1), 1)
    rows_per = max(-(-rows // idle), -(-MIN_BLOCK_ELEMENTS // per), 1)
    return -(-rows // rows_per) >= 2 and rows * min(cols, per) >= 2 * MIN_BLOCK_ELEMENTS


def launch_stages(hb: HostBuilder, group: FusionGroupOp, passes: list[Stage],
                  inputs: list[Value], soc: SoC) -> list[Value]:
    """The passes on the host: each pass's kernel, then the per-column ops its results
    make computable (clones of the group's ops); the group's results."""
    env: dict[Value, Value] = dict(zip(group.body.blocks[0].args, inputs, strict=True))
    staged = {v.op for s in passes for v in s.results}
    level, cls_of = _levels(group), analyze(group).classes
    host_ops = [op for op in body_ops(group)
                if op not in staged and cls_of[op.result_values[0]] != FULL]
    done: set[Operation] = set()
    for s in passes:
        _clone(hb, [op for op in host_ops if level[op.result_values[0]] < s.level], env, done)
        args = [env[v] for v in s.kernel.group.inputs]
        types = [r.type for r in s.kernel.group.result_values]
        dims = space_dims(hb, s.kernel, args)
        outs = launch_vector(hb, s.kernel, args, soc, types, dims)
        env.update(zip(s.results, outs, strict=True))
    _clone(hb, host_ops, env, done)
    term = group.body.blocks[0].terminator
    assert term is not None
    return [env[v] for v in term.operand_values]


def _clone(hb: HostBuilder, ops: list[Operation], env: dict[Value, Value],
           done: set[Operation]) -> None:
    for op in ops:
        if op in done:
            continue
        done.add(op)
        new = hb.insert(op.clone(env))
        env.update(zip(op.result_values, new.result_values, strict=True))




Launch = Callable[[list[Value], list[Value]], list[Value]]
"""Runs a group on the host: (its operands, the space's extents) -> its results."""


def split_columns(hb: HostBuilder, k: VectorKernel, soc: SoC, kernels: list,
                  name: Callable[[], str], allowed: bool = True) -> Launch | None:
    """How to run ``k``'s group as split passes (their kernels added to ``kernels``;
    ``k`` dropped when a static shape never runs it), or None to run ``k`` itself."""
    if not allowed or not candidate(k):
        return None
    cores = soc.vector_blocks
    worth = static_worth(k, cores)
    if worth is False:
        return None
    split = stages(k.group, soc, name)
    if split is None:
        return None
    group, passes = split
    kernels.extend(s.kernel for s in passes)
    if worth:
        kernels.remove(k)
        return lambda inputs, dims: launch_stages(hb, group, passes, inputs, soc)
    types = [r.type for r in k.group.result_values]

    def either(inputs: list[Value], dims: list[Value]) -> list[Value]:
        branch = hb.insert(IfOp.empty(worth_splitting(hb, k, dims, cores), types, k.group.loc))
        then = HostBuilder(branch.then_region.blocks[0], k.group.loc)
        then.insert(YieldOp(launch_stages(then, group, passes, inputs, soc)))
        other = HostBuilder(branch.else_region.blocks[0], k.group.loc)
        other.insert(YieldOp(launch_vector(other, k, inputs, soc, types, dims)))
        return list(branch.result_values)
    return either


__all__ = ["Launch", "Stage", "candidate", "launch_stages", "split_columns", "stages",
           "static_worth", "worth_splitting"]
