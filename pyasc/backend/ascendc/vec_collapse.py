"""A group whose operands broadcast trailing axes over leading ones, as a 2-D group.

``x / w`` with ``x`` of shape ``(N, C, h, w)`` and ``w`` of shape ``(h, w)`` fits no
vector class of ``analysis``: ``w`` is neither the whole space (``full``), nor one
value per row (``col``), nor one row repeated over the rows (``row``: only the *last*
axis).  But in C order the space is ``N * C`` planes of ``h * w`` elements and ``w`` is
one plane repeated over them: seen as the 2-D space ``(P, Q) = (N * C, h * w)``, ``w``
is a ``row`` value, which the ``rows`` schedule loads once per block (streamed per tile
when a plane does not fit one, the ``longrows`` schedule).  :func:`collapse` builds that
2-D group (a detached clone of the body with 2-D types, for the planner only) when every
array of the group is ``full``, all-ones, or such a *plane* operand over the same
trailing axes ``S[j:]`` (``1 <= j <= rank - 2``), and the body is elementwise work (no
reduction, fill or broadcast inside; those keep their own axes).  The host then
broadcasts each operand to its class's shape and reshapes it (``(P, Q)``, ``(1, Q)``;
no copy when the operand already has that shape: a C-contiguous reshape is a view),
launches the 2-D kernel and reshapes its results back (:func:`collapse_operands`,
:func:`expand_results`).  Exact for every run-time shape: broadcasting commutes with
elementwise work, and the plane operand is broadcast over ``S[j:]`` first.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.backend.ascendc.analysis import (
    FULL,
    SCALAR,
    NotVectorizable,
    body_ops,
    classify_type,
    merge_space,
)
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.vec_kernel import VectorKernel, plan_vector_kernel
from pyasc.ir.core import Block, Region, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.fusion import FusionGroupOp, FusionYieldOp
from pyasc.ir.types import DYN, TensorType, Type, element_type


@dataclass
class Collapse:
    """The 2-D form of a group: the space ``S`` splits at axis ``j`` into ``(P, Q)``."""

    original: FusionGroupOp
    space: tuple[int, ...]
    j: int
    classes: list[str]               # per group input: full | plane | scalar


def _product(dims: tuple[int, ...]) -> int:
    out = 1
    for d in dims:
        if d == DYN:
            return DYN
        out *= d
    return out


def _plane_split(t: Type, space: tuple[int, ...]) -> int | None:
    """``j`` when ``t`` is ``(.., S[j:])``: ones (or nothing) before, ``S``'s trailing axes
    from ``j`` on (at least two, the first not 1 in ``S``), else None."""
    if not isinstance(t, TensorType):
        return None
    k = len(space)
    ext = (1,) * (k - t.rank) + tuple(t.shape)
    j = next((a for a, d in enumerate(ext) if d != 1), k)
    if not 1 <= j <= k - 2 or space[j] == 1:
        return None
    same = all(a == b or DYN in (a, b) for a, b in zip(ext[j:], space[j:], strict=True))
    return j if same and all(not (a == 1 and b != 1)
                             for a, b in zip(ext[j:], space[j:], strict=True)) else None


def _elementwise(op) -> bool:  # noqa: ANN001
    if isinstance(op, arith.ConstantOp):
        return not isinstance(op.result.type, TensorType)
    return type(op).__module__ in (arith.__name__, m.__name__) and not op.region_list \
        and len(op.result_values) == 1


def collapse_plan(group: FusionGroupOp) -> Collapse | None:
    """How ``group`` collapses to 2-D (module docstring), or None."""
    ops = body_ops(group)
    if not ops or not all(_elementwise(op) for op in ops):
        return None
    try:
        space = merge_space(ops)
    except NotVectorizable:
        return None
    if len(space) < 3:
        return None
    classes, splits = [], set()
    values = [*group.body.blocks[0].args, *(r for op in ops for r in op.result_values)]
    for v in values:
        cls = classify_type(v.type, space)
        j = _plane_split(v.type, space) if cls not in (FULL, SCALAR) else None
        if cls not in (FULL, SCALAR) and j is None:
            return None
        if j is not None:
            splits.add(j)
        if v in group.body.blocks[0].args:
            classes.append("plane" if j is not None else cls)
    if len(splits) != 1:
        return None
    return Collapse(group, space, splits.pop(), classes)


def _flat_type(t: Type, c: Collapse) -> Type:
    if not isinstance(t, TensorType):
        return t
    q = _product(c.space[c.j:])
    cls = classify_type(t, c.space)
    if cls == FULL:
        return TensorType((_product(c.space[:c.j]), q), t.element)
    if cls == SCALAR:
        return TensorType((1, 1), t.element)
    return TensorType((1, q), t.element)


def collapse(c: Collapse) -> FusionGroupOp:
    """A detached 2-D clone of ``c.original`` (the planner's input)."""
    g = c.original
    old = g.body.blocks[0]
    block = Block([_flat_type(a.type, c) for a in old.args], [a.name_hint for a in old.args])
    mapping: dict[Value, Value] = dict(zip(old.args, block.args, strict=True))
    for op in old.ops:
        args = [mapping[v] if v in mapping else v for v in op.operand_values]
        if isinstance(op, FusionYieldOp):
            block.append(FusionYieldOp(args, [], loc=op.loc))
            break
        new = type(op)(args, [_flat_type(r.type, c) for r in op.result_values],
                       dict(op.attributes), loc=op.loc)
        block.append(new)
        mapping.update(zip(op.result_values, new.result_values, strict=True))
    types = [_flat_type(r.type, c) for r in g.result_values]
    # its operands are stand-ins: the clone is never inserted, and uses of the real
    # inputs would show up in every use-based analysis after planning (pool_taps)
    holders = Block([v.type for v in g.inputs], [v.name_hint for v in g.inputs]).args
    return FusionGroupOp(list(holders), types, dict(g.attributes), [Region([block])],
                         loc=g.loc)


def plan_collapsible(group: FusionGroupOp, soc: SoC, name: str
                     ) -> tuple[VectorKernel, Collapse | None]:
    """``group`` as a vector kernel, or as the kernel of its 2-D form when only that one
    plans (then with the :class:`Collapse` the host needs); raises NotVectorizable."""
    try:
        return plan_vector_kernel(group, soc, name), None
    except NotVectorizable:
        c = collapse_plan(group)
        if c is None:
            raise
    k = plan_vector_kernel(collapse(c), soc, name)
    if any(check.result is None for check in k.spans.checks):
        # no scalar twin for the 2-D form (never for elementwise work: only reductions
        # need a run-time span check)
        raise NotVectorizable("a 2-D form that needs a run-time span check", group.loc)
    return k, c


def _space_dims(hb: HostBuilder, c: Collapse, operands: list[Value]) -> list[Value]:
    """``S`` at run time: numpy's broadcast of the array operands' extents."""
    k = len(c.space)
    dims = []
    for axis, extent in enumerate(c.space):
        if extent != DYN:
            dims.append(hb.const(extent))
            continue
        acc = hb.const(1)
        for v in operands:
            t = v.type
            if isinstance(t, TensorType) and axis >= k - t.rank:
                acc = hb.broadcast_dim(acc, hb.dim(v, axis - (k - t.rank)))
        dims.append(acc)
    return dims


def collapse_operands(hb: HostBuilder, c: Collapse, operands: list[Value]
                      ) -> tuple[list[Value], list[Value]]:
    """The 2-D kernel's operands (each broadcast to its class's shape, then reshaped),
    and ``S``'s extents (to reshape the results back)."""
    dims = _space_dims(hb, c, operands)
    p, q = hb.product(dims[:c.j]), hb.product(dims[c.j:])
    out = []
    for v, cls in zip(operands, c.classes, strict=True):
        t = v.type
        if cls == SCALAR or not isinstance(t, TensorType):
            out.append(v)
            continue
        k = len(c.space)
        shape = c.space if cls == FULL else (1,) * c.j + c.space[c.j:]
        bdims = dims if cls == FULL else [hb.const(1)] * c.j + dims[c.j:]
        wide = v if t.shape == shape and DYN not in shape else \
            hb.broadcast(v, shape, element_type(t), bdims[:k])
        flat = _flat_type(TensorType(shape, t.element), c)
        assert isinstance(flat, TensorType)
        two = [p, q] if cls == FULL else [hb.const(1), q]
        out.append(hb.insert(tensor.ReshapeOp([wide, *hb.dyn_dims(flat.shape, two)],
                                              [flat])).result)
    return out, dims


def expand_results(hb: HostBuilder, c: Collapse, results: list[Value],
                   dims: list[Value]) -> list[Value]:
    """The 2-D kernel's results reshaped to the group's own result types."""
    out = []
    for v, r in zip(results, c.original.result_values, strict=True):
        t = r.type
        if not isinstance(t, TensorType) or v.type == t:
            out.append(v)
            continue
        shape_dims = [dims[len(c.space) - t.rank + a] for a in range(t.rank)]
        out.append(hb.insert(tensor.ReshapeOp([v, *hb.dyn_dims(t.shape, shape_dims)],
                                              [t])).result)
    return out


__all__ = ["Collapse", "collapse", "collapse_operands", "collapse_plan", "expand_results",
           "plan_collapsible"]
