"""Loops of window reductions (pooling) as one vector kernel: recognition.

A two-level loop nest ``for i: for j: out[..., i, j] = reduce(x[..., rows(i), cols(j)])``
(the seed's adaptive pool, ``pyasc.ops.adaptive_avg_pool2d``, a max/avg pool written with
loops) is a scalar kernel otherwise: every element read with ``GetValue``.  Its windows
are separable: the rows of window ``(i, j)`` depend on ``i`` alone and its columns on
``j`` alone, with bounds of any form (``i * stride``, ``floor(i * h / oh)``, clamped by
the slice) and coefficients known only at run time.  :func:`match_pool_loop` recognizes
that from the IR alone:

* an outer ``loop.for`` over ``i`` and, as its only loop, an inner one over ``j`` (step
  1, no carried values; the inner bounds do not depend on ``i``); besides scalar index
  arithmetic the inner body holds one window of ``x`` (``mem.subview`` + snapshot, or a
  ``tensor.slice``), one reduction of it over its last two axes (``sum``, ``max`` or
  ``min``, possibly inside a fused group), optionally divided or multiplied by a scalar
  (any expression of ``i`` and ``j``; ``np.mean``'s count, ``float(rows * cols)`` of
  the window's own sizes, is recognized as such), and one write of the result
  to ``out[..., i, j]`` (``mem.write`` into a view, or ``mem.store`` for 2-D arrays);
* ``x`` is a C-contiguous buffer or tensor of rank >= 2, ``out`` a buffer the function
  allocates (so they cannot alias) of the same rank and element type; the row bounds
  depend on ``i`` only, the column bounds on ``j`` only, every other offset, size and
  step on neither (the host checks at run time that they select whole leading axes with
  unit steps, and runs the scalar form of the loop when they do not).

The scalar index arithmetic the kernel needs (window bounds, the divisor) is kept as
values of the nest; ``host_pool`` re-computes it on the host into small tables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pyasc.ir.core import BlockArgument, Location, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import MemRefType, ScalarType, TensorType

T = TypeVar("T")

REDUCTIONS: dict[type[Operation], str] = {
    tensor.SumOp: "sum", tensor.ReduceMaxOp: "max", tensor.ReduceMinOp: "min"}
POST_OPS: dict[type[Operation], str] = {arith.DivOp: "div", arith.MulOp: "mul"}
# element types per reduction (sums: float32 only, numpy accumulates half sums wider)
DTYPES: dict[str, tuple[str, ...]] = {"sum": ("f32",), "max": ("f32", "f16"),
                                      "min": ("f32", "f16")}
_SCALAR_DIALECTS = (arith.__name__, m.__name__)


class NotAPoolLoop(Exception):
    """The nest is something else than a loop of window reductions."""


@dataclass
class PoolLoop:
    """A matched nest (module docstring).  ``row``/``col`` are ``(offset, size)`` of the
    window along the last two axes, nest values; ``lead`` the window's leading
    ``(offset, size)`` pairs; ``steps`` its steps; ``out_lead`` the written view's."""

    nest: loop.ForOp
    inner: loop.ForOp
    src: Value
    dst: Value
    kind: str
    post: str | None
    scale: Value | None
    row: tuple[Value, Value]
    col: tuple[Value, Value]
    lead: list[tuple[Value, Value]]
    steps: list[Value]
    out_lead: list[tuple[Value, Value, Value]]
    dtype: ScalarType
    rank: int
    loc: Location

    @property
    def ivs(self) -> tuple[Value, Value]:
        return self.nest.induction_var, self.inner.induction_var


def outer_value(v: Value) -> Value:
    """``v`` seen from outside fused groups: a group's block argument is its operand."""
    while isinstance(v, BlockArgument) and isinstance(v.block.parent_op, FusionGroupOp):
        v = v.block.parent_op.inputs[v.index]
    return v


def _through_group(v: Value) -> Value:
    """A group's result as the value its body yields (in body terms)."""
    if isinstance(v, OpResult) and isinstance(v.op, FusionGroupOp):
        term = v.op.body.blocks[0].terminator
        assert term is not None
        return term.operand_values[v.index]
    return v


def is_scalar_op(op: Operation) -> bool:
    """Pure scalar arithmetic the host can re-compute."""
    return type(op).__module__ in _SCALAR_DIALECTS and not op.region_list and \
        all(isinstance(v.type, ScalarType) for v in [*op.operand_values, *op.result_values])


class Deps:
    """Which induction variables (``i``, ``j``) a nest value depends on; None when it
    is not scalar index arithmetic the host can re-compute."""

    def __init__(self, nest: loop.ForOp, inner: loop.ForOp) -> None:
        self.ivs = {nest.induction_var: "i", inner.induction_var: "j"}
        self.inside = {r for op in nest.walk() for r in op.result_values}
        self.memo: dict[Value, frozenset[str] | None] = {}

    def of(self, v: Value) -> frozenset[str] | None:
        v = outer_value(v)
        if v in self.ivs:
            return frozenset(self.ivs[v])
        if v not in self.inside:
            return frozenset()
        if v not in self.memo:
            self.memo[v] = None  # a cycle cannot occur in SSA; this guards the recursion
            op = v.op  # type: ignore[attr-defined]
            deps: frozenset[str] | None = frozenset()
            if not is_scalar_op(op):
                deps = None
            for o in op.operand_values if deps is not None else ():
                d = self.of(o)
                deps = None if d is None else deps | d
                if deps is None:
                    break
            self.memo[v] = deps
        return self.memo[v]

    def within(self, v: Value, allowed: str) -> bool:
        d = self.of(v)
        return d is not None and d <= frozenset(allowed)


def _loops(nest: Operation) -> tuple[loop.ForOp, loop.ForOp]:
    if not isinstance(nest, loop.ForOp) or nest.inits or constant_value(nest.step) != 1:
        raise NotAPoolLoop("not a counted loop")
    inner = [op for op in nest.body.blocks[0].ops if not is_scalar_op(op)
             and not isinstance(op, loop.YieldOp)]
    if len(inner) != 1 or not isinstance(inner[0], loop.ForOp) or inner[0].inits or \
            constant_value(inner[0].step) != 1:
        raise NotAPoolLoop("not a nest of two loops")
    return nest, inner[0]


_ALLOWED = (mem.SubviewOp, mem.ToTensorOp, tensor.SliceOp, FusionGroupOp, mem.WriteOp,
            mem.StoreOp, loop.YieldOp, *REDUCTIONS, *POST_OPS)


def _the_write(inner: loop.ForOp) -> Operation:
    writes = []
    for op in inner.body.blocks[0].ops:
        if not (is_scalar_op(op) or isinstance(op, _ALLOWED)):
            raise NotAPoolLoop(op.name)
        if isinstance(op, FusionGroupOp) and any(
                not (is_scalar_op(o) or isinstance(o, (*REDUCTIONS, *POST_OPS)) or
                     o.name == "fusion.yield") for o in op.body.blocks[0].ops):
            raise NotAPoolLoop("a group doing other work")
        if isinstance(op, mem.WriteOp | mem.StoreOp):
            writes.append(op)
    if len(writes) != 1:
        raise NotAPoolLoop("not one write")
    return writes[0]


def _reduction(v: Value) -> tuple[Operation, str | None, Value | None]:
    """The reduction op producing the written value, and the post op with its scalar."""
    v = _through_group(v)
    post = scale = None
    if isinstance(v, OpResult) and type(v.op) in POST_OPS:
        a, b = v.op.operand_values
        if not isinstance(b.type, ScalarType) or isinstance(a.type, ScalarType) and \
                not isinstance(a, OpResult):
            raise NotAPoolLoop("a post-operation that is not by a scalar")
        post, scale, v = POST_OPS[type(v.op)], b, _through_group(outer_value(a))
    if not (isinstance(v, OpResult) and type(v.op) in REDUCTIONS):
        raise NotAPoolLoop("not a window reduction")
    return v.op, post, scale


def _window(red: Operation) -> Operation:
    t = outer_value(red.operand_values[0])
    if isinstance(t, OpResult) and isinstance(t.op, mem.ToTensorOp):
        t = t.op.operand_values[0]
    if isinstance(t, OpResult) and isinstance(t.op, mem.SubviewOp | tensor.SliceOp) and \
            not t.op.attributes.get("drop"):
        return t.op
    raise NotAPoolLoop("not a reduction of a window")


def _source_ok(src: Value, fn: FuncOp) -> bool:
    t = src.type
    if isinstance(t, TensorType):
        return True
    return isinstance(t, MemRefType) and t.is_contiguous


def _written(write: Operation, ivs: tuple[Value, Value], rank: int
             ) -> tuple[Value, list[tuple[Value, Value, Value]]]:
    """The written buffer and the leading (offset, size, step) of the written view."""
    if isinstance(write, mem.StoreOp):
        if rank != 2 or [outer_value(x) for x in write.indices] != list(ivs):
            raise NotAPoolLoop("a store elsewhere than out[i, j]")
        return write.dest, []
    view = write.operand_values[1]
    if not (isinstance(view, OpResult) and isinstance(view.op, mem.SubviewOp)):
        raise NotAPoolLoop("a write into something else than a view")
    offs, sizes, steps = view.op.parts()
    if view.op.attributes.get("drop") != (rank - 2, rank - 1) or \
            [outer_value(x) for x in offs[-2:]] != list(ivs):
        raise NotAPoolLoop("a write elsewhere than out[..., i, j]")
    return view.op.source, list(zip(offs[:-2], sizes[:-2], steps[:-2], strict=True))


def match_pool_loop(nest: Operation, fn: FuncOp) -> PoolLoop:
    """The pooling loop ``nest`` is (module docstring); raises :class:`NotAPoolLoop`."""
    outer, inner = _loops(nest)
    deps = Deps(outer, inner)
    if not (deps.within(inner.lower, "") and deps.within(inner.upper, "")):
        raise NotAPoolLoop("inner bounds depend on the outer loop")
    write = _the_write(inner)
    red, post, scale = _reduction(write.operand_values[0])
    view = _window(red)
    src, rank = view.operand_values[0], red.operand_values[0].type.rank  # type: ignore[attr-defined]
    if rank < 2 or red.attributes["axes"] != (rank - 2, rank - 1) or \
            red.attributes["keepdims"] or not _source_ok(src, fn):
        raise NotAPoolLoop("not a reduction over the window's last two axes")
    dst, out_lead = _written(write, (outer.induction_var, inner.induction_var), rank)
    if not (isinstance(dst, OpResult) and isinstance(dst.op, mem.AllocOp)) or \
            dst.type.rank != rank:  # type: ignore[attr-defined]
        raise NotAPoolLoop("the result is not a buffer of the function")
    dtype = src.type.element  # type: ignore[attr-defined]
    result = red.result_values[0].type
    if dst.type.element != dtype or getattr(result, "element", result) != dtype or \
            dtype.name not in DTYPES[REDUCTIONS[type(red)]]:  # type: ignore[attr-defined]
        raise NotAPoolLoop("element types the pool kernel does not take")
    offs, sizes, steps = view.parts()  # type: ignore[attr-defined]
    lead = list(zip(offs[:-2], sizes[:-2], strict=True))
    need = [(offs[-2], "i"), (sizes[-2], "i"), (offs[-1], "j"), (sizes[-1], "j")]
    need += [(v, "") for pair in lead for v in pair] + [(s, "") for s in steps]
    need += [(v, "") for trio in out_lead for v in trio]
    if scale is not None:
        need.append((scale, "ij"))
    if not all(deps.within(v, allowed) for v, allowed in need):
        raise NotAPoolLoop("window bounds that are not separable in (i, j)")
    if post == "div" and scale is not None and _is_count(scale, sizes[-2], sizes[-1], dtype):
        post, scale = "count", None  # np.mean: the kernel divides by rows(i) * cols(j)
    return PoolLoop(outer, inner, src, dst, REDUCTIONS[type(red)], post, scale,
                    (offs[-2], sizes[-2]), (offs[-1], sizes[-1]), lead, list(steps),
                    out_lead, dtype, rank, nest.loc)


def same_value(a: Value, b: Value, depth: int = 16) -> bool:
    """``a`` and ``b`` are the same scalar expression (the same ops, attributes and
    leaves; a fused group's copy of the index arithmetic equals the original)."""
    a, b = outer_value(a), outer_value(b)
    if a is b:
        return True
    if depth == 0 or not (isinstance(a, OpResult) and isinstance(b, OpResult)):
        return False
    if type(a.op) is not type(b.op) or a.index != b.index or \
            a.op.attributes != b.op.attributes or not is_scalar_op(a.op):
        return False
    xs, ys = a.op.operand_values, b.op.operand_values
    return len(xs) == len(ys) and all(same_value(x, y, depth - 1)
                                      for x, y in zip(xs, ys, strict=True))


def _is_count(scale: Value, rows: Value, cols: Value, dtype: ScalarType) -> bool:
    """``scale`` is ``float(rows * cols)``: the window's element count."""
    s = outer_value(scale)
    if not (isinstance(s, OpResult) and isinstance(s.op, arith.CastOp) and s.type == dtype):
        return False
    n = outer_value(s.op.operand_values[0])
    if not (isinstance(n, OpResult) and isinstance(n.op, arith.MulOp)):
        return False
    x, y = n.op.operand_values
    return same_value(x, rows) and same_value(y, cols) or \
        same_value(x, cols) and same_value(y, rows)


def top_level_matches(fn: FuncOp, match: Callable[[loop.ForOp, FuncOp], T]
                      ) -> dict[Operation, T]:
    """The top-level loop nests of ``fn`` that ``match`` takes (it raises
    :class:`NotAPoolLoop` for the others)."""
    found: dict[Operation, T] = {}
    for op in fn.entry.ops:
        if isinstance(op, loop.ForOp):
            try:
                found[op] = match(op, fn)
            except NotAPoolLoop:
                continue
    return found


def find_pool_loops(fn: FuncOp) -> dict[Operation, PoolLoop]:
    """The top-level loop nests of ``fn`` that are pooling loops."""
    return top_level_matches(fn, match_pool_loop)


__all__ = ["Deps", "NotAPoolLoop", "PoolLoop", "find_pool_loops", "match_pool_loop",
           "outer_value"]
