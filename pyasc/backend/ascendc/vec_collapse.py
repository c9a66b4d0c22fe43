"""A group whose operands broadcast over leading or trailing axes, as a 2-D group.

``x / w`` with ``x`` of shape ``(N, C, h, w)`` and ``w`` of shape ``(h, w)`` fits no
vector class of ``analysis``: ``w`` is neither the whole space (``full``), nor one
value per row (``col``), nor one row repeated over the rows (``row``: only the *last*
axis).  But in C order the space is ``N * C`` planes of ``h * w`` elements and ``w`` is
one plane repeated over them: seen as the 2-D space ``(P, Q) = (N * C, h * w)``, ``w``
is a ``row`` value, which the ``rows`` schedule loads once per block (streamed per tile
when a plane does not fit one, the ``longrows`` schedule).  :func:`collapse` builds that
2-D group (a detached clone of the body with 2-D types, for the planner only) when every
array of the group is ``full``, all-ones, such a *plane* operand over the same
trailing axes ``S[j:]`` (``1 <= j <= rank - 2``), or a *channel* operand, ones from
``j`` on (``(1, C, 1, 1)`` over NCHW, ``j = 2``: one value per plane, a ``col`` value
``(P, 1)``), and the body is elementwise work and reductions of full values over
exactly ``S[j:]`` (row reductions of the 2-D form; no fill or broadcast inside: those
keep their own axes).  Batch-norm's per-channel statistics and normalization on NCHW
are such groups.  The host then
broadcasts each operand to its class's shape and reshapes it (``(P, Q)``, ``(1, Q)``;
no copy when the operand already has that shape: a C-contiguous reshape is a view),
launches the 2-D kernel and reshapes its results back (:func:`collapse_operands`,
:func:`expand_results`).  Exact for every run-time shape: broadcasting commutes with
elementwise work, the plane operand is broadcast over ``S[j:]`` first, and a group with
a reduction collapses under run-time shapes only when each reduction's source depends
on every array input (its numpy shape is then the whole space: no copies are summed).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyasc.backend.ascendc.analysis import (
    FULL,
    REDUCTIONS,
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
    classes: list[str]               # per group input: full | plane | channel | scalar
    kinds: dict[Value, str] = field(default_factory=dict)  # every value's (module doc)


def _product(dims: tuple[int, ...]) -> int:
    out = 1
    for d in dims:
        if d == DYN:
            return DYN
        out *= d
    return out


def _ext(t: TensorType, space: tuple[int, ...]) -> tuple[int, ...]:
    return (1,) * (len(space) - t.rank) + tuple(t.shape)


def _spans(a: int, b: int) -> bool:
    """Extent ``a`` of an operand along an axis of extent ``b``: equal (or run-time)."""
    return (a == b or DYN in (a, b)) and not (a == 1 and b != 1)


def _plane_split(t: Type, space: tuple[int, ...]) -> int | None:
    """``j`` when ``t`` is ``(.., S[j:])``: ones (or nothing) before, ``S``'s trailing axes
    from ``j`` on (at least two, the first not 1 in ``S``), else None."""
    if not isinstance(t, TensorType):
        return None
    k = len(space)
    ext = _ext(t, space)
    j = next((a for a, d in enumerate(ext) if d != 1), k)
    if not 1 <= j <= k - 2 or space[j] == 1:
        return None
    return j if all(_spans(a, b) for a, b in zip(ext[j:], space[j:], strict=True)) else None


def _channel_split(t: Type, space: tuple[int, ...]) -> int | None:
    """The least ``j`` for which ``t`` is a *channel* value: ones from axis ``j`` on and,
    before it, each axis 1 or ``S``'s (``(1, C, 1, 1)`` over NCHW: 2); else None."""
    if not isinstance(t, TensorType):
        return None
    ext = _ext(t, space)
    m = 1 + max((a for a, d in enumerate(ext) if d != 1), default=-1)
    if not 1 <= m <= len(space) - 1:
        return None
    ok = all(a == 1 or _spans(a, b) for a, b in zip(ext[:m], space[:m], strict=True))
    return m if ok else None


def _elementwise(op) -> bool:  # noqa: ANN001
    if isinstance(op, arith.ConstantOp):
        return not isinstance(op.result.type, TensorType)
    return type(op).__module__ in (arith.__name__, m.__name__) and not op.region_list \
        and len(op.result_values) == 1


def _kind(v: Value, space: tuple[int, ...], need: dict[str, set[int]]) -> str | None:
    """``v``'s kind, recording the splits it allows (``need["exact"]``: one ``j``;
    ``need["least"]``: ``j`` at least this)."""
    cls = classify_type(v.type, space)
    if cls in (FULL, SCALAR):
        return cls
    j = _plane_split(v.type, space)
    if j is not None:
        need["exact"].add(j)
        return "plane"
    j = _channel_split(v.type, space)
    if j is not None:
        need["least"].add(j)
        return "channel"
    return None


def _reduction_kinds(ops: list, space: tuple[int, ...], kinds: dict[Value, str],
                     need: dict[str, set[int]]) -> bool:
    """The reductions of a collapsible body: of a full value over the trailing axes
    ``S[j:]`` (a row reduction of the 2-D form); a result without keepdims (``S[:j]``,
    "squeezed") meets only scalars and other squeezed values (``_squeezed_use``)."""
    k = len(space)
    for op in ops:
        if not isinstance(op, REDUCTIONS):
            continue
        axes = tuple(op.attributes["axes"])
        if classify_type(op.operand_values[0].type, space) != FULL or \
                not axes or axes != tuple(range(axes[0], k)) or axes[0] == 0:
            return False
        need["exact"].add(axes[0])
        if not op.attributes["keepdims"]:
            kinds[op.result] = "squeezed"
    return True


def _squeezed_use(op, kinds: dict[Value, str]) -> bool | None:  # noqa: ANN001
    """Whether elementwise ``op`` works on squeezed values (then its result is one);
    None when it mixes them with other arrays, which numpy aligns at the last axes."""
    arrays = [kinds.get(v) for v in op.operand_values if isinstance(v.type, TensorType)
              and kinds.get(v) != SCALAR]
    if "squeezed" not in arrays:
        return False
    return True if set(arrays) == {"squeezed"} else None


def _inputs_of(group: FusionGroupOp) -> dict[Value, frozenset[Value]]:
    """The group inputs each body value depends on."""
    block = group.body.blocks[0]
    deps: dict[Value, frozenset[Value]] = {a: frozenset({a}) for a in block.args}
    for op in body_ops(group):
        below = frozenset().union(*(deps.get(v, frozenset()) for v in op.operand_values))
        deps.update((r, below) for r in op.result_values)
    return deps


def _spans_known(group: FusionGroupOp, c: Collapse) -> bool:
    """With run-time sizes, the host broadcasts every operand to ``S``, which counts
    copies in a sum unless numpy's own source of each reduction spans ``S``: it does
    when the source depends on every array input (static sizes: always)."""
    if DYN not in c.space:
        return True
    deps = _inputs_of(group)
    arrays = {a for a, cls in zip(group.body.blocks[0].args, c.classes, strict=True)
              if cls != SCALAR}
    return all(arrays <= deps[op.operand_values[0]]
               for op in body_ops(group) if isinstance(op, REDUCTIONS))


def _choose_split(need: dict[str, set[int]], k: int) -> int | None:
    exact, least = need["exact"], need["least"]
    if len(exact) > 1 or not (exact or least):
        return None
    j = exact.pop() if exact else max(least)
    return j if 1 <= j <= k - 1 and all(m <= j for m in least) else None


def _results_fit(group: FusionGroupOp, c: Collapse) -> bool:
    """A channel result comes back from the ``(P, 1)`` kernel output by a reshape: its
    leading axes must be ``S[:j]`` itself."""
    term = group.body.blocks[0].terminator
    assert term is not None
    for v in term.operand_values:
        if c.kinds.get(v) == "channel":
            ext = _ext(v.type, c.space)  # type: ignore[arg-type]
            if v.type.rank != len(c.space) or \
                    any(a != b for a, b in zip(ext[:c.j], c.space[:c.j], strict=True)) \
                    or any(d != 1 for d in ext[c.j:]):
                return False
    return True


def collapse_plan(group: FusionGroupOp) -> Collapse | None:
    """How ``group`` collapses to 2-D (module docstring), or None."""
    ops = body_ops(group)
    if not ops or not all(_elementwise(op) or isinstance(op, REDUCTIONS) for op in ops):
        return None
    try:
        space = merge_space(ops)
    except NotVectorizable:
        return None
    if len(space) < 3:
        return None
    need: dict[str, set[int]] = {"exact": set(), "least": set()}
    kinds: dict[Value, str] = {}
    if not _reduction_kinds(ops, space, kinds, need):
        return None
    args = group.body.blocks[0].args
    for v in args:
        if (kind := _kind(v, space, need)) is None:
            return None
        kinds[v] = kind
    for op in ops:
        squeezed = False if isinstance(op, REDUCTIONS) else _squeezed_use(op, kinds)
        if squeezed is None:
            return None
        for r in op.result_values:
            kind = "squeezed" if squeezed else kinds.get(r) or _kind(r, space, need)
            if kind is None:
                return None
            kinds[r] = kind
    j = _choose_split(need, len(space))
    if j is None:
        return None
    c = Collapse(group, space, j, [kinds[a] for a in args], kinds)
    return c if _spans_known(group, c) and _results_fit(group, c) else None


def _flat_type(t: Type, c: Collapse, kind: str) -> Type:
    if not isinstance(t, TensorType):
        return t
    p, q = _product(c.space[:c.j]), _product(c.space[c.j:])
    shapes = {FULL: (p, q), SCALAR: (1, 1), "plane": (1, q), "channel": (p, 1),
              "squeezed": (p,)}
    return TensorType(shapes[kind], t.element)


def collapse(c: Collapse) -> FusionGroupOp:
    """A detached 2-D clone of ``c.original`` (the planner's input)."""
    g = c.original
    old = g.body.blocks[0]
    block = Block([_flat_type(a.type, c, c.kinds[a]) for a in old.args],
                  [a.name_hint for a in old.args])
    mapping: dict[Value, Value] = dict(zip(old.args, block.args, strict=True))
    for op in old.ops:
        args = [mapping[v] if v in mapping else v for v in op.operand_values]
        if isinstance(op, FusionYieldOp):
            block.append(FusionYieldOp(args, [], loc=op.loc))
            break
        attrs = dict(op.attributes)
        if isinstance(op, REDUCTIONS):  # over S[j:]: the 2-D form's last axis
            attrs["axes"] = (1,)
        new = type(op)(args, [_flat_type(r.type, c, c.kinds[r]) for r in op.result_values],
                       attrs, loc=op.loc)
        block.append(new)
        mapping.update(zip(op.result_values, new.result_values, strict=True))
    term = old.terminator
    assert term is not None
    types = [_flat_type(v.type, c, c.kinds[v]) for v in term.operand_values]
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


def _class_shape(c: Collapse, kind: str, dims: list[Value], one: Value
                 ) -> tuple[tuple[int, ...], list[Value]]:
    """The shape (static, and at run time) an operand of ``kind`` is broadcast to."""
    j, k = c.j, len(c.space)
    if kind == FULL:
        return c.space, dims
    if kind == "channel":
        return c.space[:j] + (1,) * (k - j), [*dims[:j], *[one] * (k - j)]
    return (1,) * j + c.space[j:], [*[one] * j, *dims[j:]]


def collapse_operands(hb: HostBuilder, c: Collapse, operands: list[Value]
                      ) -> tuple[list[Value], list[Value]]:
    """The 2-D kernel's operands (each broadcast to its class's shape, then reshaped),
    and ``S``'s extents (to reshape the results back)."""
    dims = _space_dims(hb, c, operands)
    p, q, one = hb.product(dims[:c.j]), hb.product(dims[c.j:]), hb.const(1)
    out = []
    for v, cls in zip(operands, c.classes, strict=True):
        t = v.type
        if cls == SCALAR or not isinstance(t, TensorType):
            out.append(v)
            continue
        shape, bdims = _class_shape(c, cls, dims, one)
        wide = v if t.shape == shape and DYN not in shape else \
            hb.broadcast(v, shape, element_type(t), bdims)
        flat = _flat_type(TensorType(shape, t.element), c, cls)
        assert isinstance(flat, TensorType)
        two = {FULL: [p, q], "channel": [p, one]}.get(cls, [one, q])
        out.append(hb.insert(tensor.ReshapeOp([wide, *hb.dyn_dims(flat.shape, two)],
                                              [flat])).result)
    return out, dims


def expand_results(hb: HostBuilder, c: Collapse, results: list[Value],
                   dims: list[Value]) -> list[Value]:
    """The 2-D kernel's results reshaped to the group's own result types (a channel or
    squeezed result: ``S[:j]``'s extents, then ones)."""
    term = c.original.body.blocks[0].terminator
    assert term is not None
    out = []
    for v, r, y in zip(results, c.original.result_values, term.operand_values, strict=True):
        t = r.type
        if not isinstance(t, TensorType) or v.type == t:
            out.append(v)
            continue
        if c.kinds.get(y) in ("channel", "squeezed"):
            shape_dims = [dims[a] if a < c.j else hb.const(1) for a in range(t.rank)]
        else:
            shape_dims = [dims[len(c.space) - t.rank + a] for a in range(t.rank)]
        out.append(hb.insert(tensor.ReshapeOp([v, *hb.dyn_dims(t.shape, shape_dims)],
                                              [t])).result)
    return out


__all__ = ["Collapse", "collapse", "collapse_operands", "collapse_plan", "expand_results",
           "plan_collapsible"]
