"""Loops of window reductions (pooling) as one vector kernel: recognition.

A loop nest ``for i: for j: out[..., i, j] = reduce(x[..., rows(i), cols(j)])`` (the
seed's adaptive pool, ``pyasc.ops.adaptive_avg_pool2d``, a max/avg pool written with
loops) is a scalar kernel otherwise: every element read with ``GetValue``.  Its windows
are separable: the rows of window ``(i, j)`` depend on ``i`` alone and its columns on
``j`` alone, with bounds of any form (``i * stride``, ``floor(i * h / oh)``, clamped by
the slice) and coefficients known only at run time.  :func:`match_pool_loop` recognizes
that from the IR alone:

* loops over leading axes (``for ch``, ``for b: for ch``; any number, none by default)
  around a loop over ``i`` whose only loop is one over ``j`` (all step 1, no carried
  values; no loop's bounds depend on another's variable); a loop over a leading axis
  indexes that axis of both ``x`` and ``out`` (``x[ch, rows, cols]``, ``out[ch, i, j]``)
  as the ``...`` spelling's whole axis does: the host checks at run time that it runs
  over the whole axis;
* besides scalar index arithmetic the inner body holds one window of ``x``
  (``mem.subview`` + snapshot, or a ``tensor.slice``), one reduction of it over its last
  two axes (``sum``, ``max`` or ``min``, possibly inside a fused group), optionally
  divided or multiplied by a scalar (any expression of ``i`` and ``j``; ``np.mean``'s
  count, ``float(rows * cols)`` of the window's own sizes, is recognized as such), and
  one write of the result to ``out[..., i, j]`` (``mem.write`` into a view, or
  ``mem.store``);
* ``x`` is a C-contiguous buffer or tensor of rank >= 2, ``out`` a buffer the function
  allocates (so they cannot alias) of the same rank and element type (float32 or
  float16); the row bounds depend on ``i`` only, the column bounds on ``j`` only, every
  other offset, size and step on none of the loop variables (the host checks at run
  time that they select whole leading axes with unit steps, and runs the scalar form of
  the loop when they do not).

Float16 sums accumulate in float32 (``PoolLoop.acc_dtype``): a float16 ``tensor.sum``
means that (one rounding at the end, as numpy's pairwise sum of halves and the vector
kernels do), and ``np.mean`` of a float16 window is spelled ``cast`` to float32, sum,
divide, ``cast`` back (``red_dtype`` float32); the kernel widens each input row and
narrows each output row once.

The scalar index arithmetic the kernel needs (window bounds, the divisor) is kept as
values of the nest; ``host_pool`` re-computes it on the host into small tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyasc.backend.ascendc.pool_match import (
    Deps,
    NotAPoolLoop,
    is_scalar_op,
    outer_value,
    same_value,
    through_group,
    top_level_matches,
)
from pyasc.ir.core import Location, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import MemRefType, ScalarType, TensorType, element_type, f32

REDUCTIONS: dict[type[Operation], str] = {
    tensor.SumOp: "sum", tensor.ReduceMaxOp: "max", tensor.ReduceMinOp: "min"}
POST_OPS: dict[type[Operation], str] = {arith.DivOp: "div", arith.MulOp: "mul"}
FLOATS = ("f32", "f16")  # the element types of x and out


@dataclass
class PoolLoop:
    """A matched nest (module docstring).  ``nest`` loops over output rows ``i``,
    ``inner`` over columns ``j``, ``top`` is the outermost loop (``nest`` or a loop over
    a leading axis), ``loops`` the loops over leading axes by the axis they index.
    ``row``/``col`` are ``(offset, size)`` of the window along the last two axes, nest
    values; ``lead`` the window's ``(offset, size)`` along every leading axis; ``steps``
    its steps; ``out_lead`` the written view's ``(offset, size, step)`` (none for a
    store).  ``acc_dtype`` is the type the kernel reduces in, ``red_dtype`` the type of
    the reduction's result and of the post-operation, ``dtype`` that of ``x`` and
    ``out``."""

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
    top: loop.ForOp
    acc_dtype: ScalarType
    red_dtype: ScalarType
    loops: dict[int, loop.ForOp] = field(default_factory=dict)

    @property
    def ivs(self) -> tuple[Value, Value]:
        return self.nest.induction_var, self.inner.induction_var


def _counted(op: Operation) -> bool:
    return isinstance(op, loop.ForOp) and not op.inits and constant_value(op.step) == 1


def _loops(nest: Operation) -> list[loop.ForOp]:
    """The nest's loops, outermost first: each but the last holds scalar arithmetic and
    the next loop only."""
    chain: list[loop.ForOp] = []
    op = nest
    while _counted(op):
        assert isinstance(op, loop.ForOp)
        chain.append(op)
        rest = [o for o in op.body.blocks[0].ops if not is_scalar_op(o)
                and not isinstance(o, loop.YieldOp)]
        if len(rest) != 1 or not isinstance(rest[0], loop.ForOp):
            break
        op = rest[0]
    if len(chain) < 2 or op is not chain[-1]:
        raise NotAPoolLoop("not a nest of counted loops")
    return chain


_ALLOWED = (mem.SubviewOp, mem.ToTensorOp, tensor.SliceOp, FusionGroupOp, mem.WriteOp,
            mem.StoreOp, loop.YieldOp, arith.CastOp, *REDUCTIONS, *POST_OPS)
_IN_GROUP = (arith.CastOp, *REDUCTIONS, *POST_OPS)


def _the_write(inner: loop.ForOp) -> Operation:
    writes = []
    for op in inner.body.blocks[0].ops:
        if not (is_scalar_op(op) or isinstance(op, _ALLOWED)):
            raise NotAPoolLoop(op.name)
        if isinstance(op, FusionGroupOp) and any(
                not (is_scalar_op(o) or isinstance(o, _IN_GROUP) or o.name == "fusion.yield")
                for o in op.body.blocks[0].ops):
            raise NotAPoolLoop("a group doing other work")
        if isinstance(op, mem.WriteOp | mem.StoreOp):
            writes.append(op)
    if len(writes) != 1:
        raise NotAPoolLoop("not one write")
    return writes[0]


def _cast_of(v: Value) -> Value | None:
    """The operand of ``v`` when ``v`` is an ``arith.cast`` (outside groups)."""
    if isinstance(v, OpResult) and isinstance(v.op, arith.CastOp):
        return outer_value(v.op.operand_values[0])
    return None


def _reduction(v: Value) -> tuple[Operation, str | None, Value | None, bool]:
    """The reduction op producing the written value, the post op with its scalar, and
    whether a cast narrows the result before the write (a float16 mean)."""
    v = through_group(v)
    narrowed = _cast_of(v)
    if narrowed is not None:
        v = through_group(narrowed)
    post = scale = None
    if isinstance(v, OpResult) and type(v.op) in POST_OPS:
        a, b = v.op.operand_values
        if not isinstance(b.type, ScalarType) or isinstance(a.type, ScalarType) and \
                not isinstance(a, OpResult) or b.type != element_type(v.type):
            raise NotAPoolLoop("a post-operation that is not by a scalar")
        post, scale, v = POST_OPS[type(v.op)], b, through_group(outer_value(a))
    if not (isinstance(v, OpResult) and type(v.op) in REDUCTIONS):
        raise NotAPoolLoop("not a window reduction")
    return v.op, post, scale, narrowed is not None


def _window(red: Operation) -> tuple[Operation, bool]:
    """The window's view op, and whether a cast widens it before the reduction."""
    t = outer_value(red.operand_values[0])
    widened = _cast_of(t)
    if widened is not None:
        t = widened
    if isinstance(t, OpResult) and isinstance(t.op, mem.ToTensorOp):
        t = t.op.operand_values[0]
    if isinstance(t, OpResult) and isinstance(t.op, mem.SubviewOp | tensor.SliceOp):
        return t.op, widened is not None
    raise NotAPoolLoop("not a reduction of a window")


def _source_ok(src: Value) -> bool:
    t = src.type
    if isinstance(t, TensorType):
        return True
    return isinstance(t, MemRefType) and t.is_contiguous


def _lead_loops(view: Operation, rank: int, leads: list[loop.ForOp]) -> dict[int, loop.ForOp]:
    """The leading axes the window drops, each indexed by its own loop of ``leads``
    (``x[ch, rows, cols]``); every loop of ``leads`` indexes one."""
    drop = tuple(view.attributes.get("drop") or ())
    offs = view.parts()[0]  # type: ignore[attr-defined]
    by_iv = {lp.induction_var: lp for lp in leads}
    loops: dict[int, loop.ForOp] = {}
    for a in drop:
        lp = by_iv.get(outer_value(offs[a]))
        if a >= rank - 2 or lp is None or lp in loops.values():
            raise NotAPoolLoop("a window axis indexed by something else than its loop")
        loops[a] = lp
    if len(loops) != len(leads):
        raise NotAPoolLoop("a loop that indexes no leading axis of the window")
    return loops


def _written(write: Operation, ivs: tuple[Value, Value], rank: int,
             loops: dict[int, loop.ForOp]) -> tuple[Value, list[tuple[Value, Value, Value]]]:
    """The written buffer and the leading (offset, size, step) of the written view: the
    loops index the same leading axes of ``out`` as of ``x``."""
    lead_ivs = [loops[a].induction_var if a in loops else None for a in range(rank - 2)]
    if isinstance(write, mem.StoreOp):
        if [outer_value(x) for x in write.indices] != [*lead_ivs, *ivs]:
            raise NotAPoolLoop("a store elsewhere than out[c, i, j]")
        return write.dest, []
    view = write.operand_values[1]
    if not (isinstance(view, OpResult) and isinstance(view.op, mem.SubviewOp)):
        raise NotAPoolLoop("a write into something else than a view")
    offs, sizes, steps = view.op.parts()
    drop = tuple(sorted(view.op.attributes.get("drop") or ()))
    if drop != tuple(sorted([*loops, rank - 2, rank - 1])) or \
            [outer_value(x) for x in offs[-2:]] != list(ivs) or \
            any(outer_value(offs[a]) is not lp.induction_var for a, lp in loops.items()):
        raise NotAPoolLoop("a write elsewhere than out[..., i, j]")
    return view.op.source, list(zip(offs[:-2], sizes[:-2], steps[:-2], strict=True))


def _types(kind: str, src: Value, dst: Value, red: Operation, widened: bool,
           narrowed: bool) -> tuple[ScalarType, ScalarType, ScalarType]:
    """``(dtype, acc_dtype, red_dtype)`` (module docstring); float16 windows are widened
    and their results narrowed together, or summed as float16 (in float32)."""
    dtype = src.type.element  # type: ignore[attr-defined]
    red_in = element_type(red.operand_values[0].type)
    red_t = element_type(red.result_values[0].type)
    ok = dtype.name in FLOATS and dst.type.element == dtype and red_in == red_t  # type: ignore[attr-defined]
    if widened or narrowed:  # np.mean of float16: sum in float32, round the quotient once
        ok = ok and widened and narrowed and dtype.name == "f16" and red_t == f32
    else:
        ok = ok and red_t == dtype
    if not ok:
        raise NotAPoolLoop("element types the pool kernel does not take")
    acc = f32 if kind == "sum" else red_t
    return dtype, acc, red_t


def _check_separable(deps: Deps, p: PoolLoop) -> None:
    """Row bounds of ``i``, column bounds of ``j``, the divisor of both, the rest of
    neither (a loop's variable only as the offset of the axis it indexes)."""
    need = [(p.row[0], "i"), (p.row[1], "i"), (p.col[0], "j"), (p.col[1], "j")]
    need += [(v, "") for a, (off, size) in enumerate(p.lead)
             for v in ((size,) if a in p.loops else (off, size))]
    need += [(s, "") for s in p.steps]
    need += [(v, "") for a, trio in enumerate(p.out_lead)
             for v in (trio[1:] if a in p.loops else trio)]
    if p.scale is not None:
        need.append((p.scale, "ij"))
    if not all(deps.within(v, allowed) for v, allowed in need):
        raise NotAPoolLoop("window bounds that are not separable in (i, j)")


def match_pool_loop(nest: Operation, fn: FuncOp) -> PoolLoop:
    """The pooling loop ``nest`` is (module docstring); raises :class:`NotAPoolLoop`."""
    chain = _loops(nest)
    *leads, outer, inner = chain
    deps = Deps(outer, inner, chain[0], leads)
    if not all(deps.within(v, "") for f in chain for v in (f.lower, f.upper)):
        raise NotAPoolLoop("loop bounds that depend on another loop")
    write = _the_write(inner)
    red, post, scale, narrowed = _reduction(write.operand_values[0])
    view, widened = _window(red)
    src = view.operand_values[0]
    rank, rr = src.type.rank, red.operand_values[0].type.rank  # type: ignore[attr-defined]
    if rr < 2 or red.attributes["axes"] != (rr - 2, rr - 1) or \
            red.attributes["keepdims"] or not _source_ok(src):
        raise NotAPoolLoop("not a reduction over the window's last two axes")
    loops = _lead_loops(view, rank, leads)
    dst, out_lead = _written(write, (outer.induction_var, inner.induction_var), rank, loops)
    if not (isinstance(dst, OpResult) and isinstance(dst.op, mem.AllocOp)) or \
            dst.type.rank != rank:  # type: ignore[attr-defined]
        raise NotAPoolLoop("the result is not a buffer of the function")
    kind = REDUCTIONS[type(red)]
    dtype, acc, red_t = _types(kind, src, dst, red, widened, narrowed)
    offs, sizes, steps = view.parts()  # type: ignore[attr-defined]
    p = PoolLoop(outer, inner, src, dst, kind, post, scale, (offs[-2], sizes[-2]),
                 (offs[-1], sizes[-1]), list(zip(offs[:-2], sizes[:-2], strict=True)),
                 list(steps), out_lead, dtype, rank, nest.loc, chain[0], acc, red_t, loops)
    _check_separable(deps, p)
    if post == "div" and scale is not None and _is_count(scale, sizes[-2], sizes[-1], red_t):
        p.post, p.scale = "count", None  # np.mean: the kernel divides by rows(i) * cols(j)
    return p


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


def find_pool_loops(fn: FuncOp) -> dict[Operation, PoolLoop]:
    """The top-level loop nests of ``fn`` that are pooling loops."""
    return top_level_matches(fn, match_pool_loop)


__all__ = ["NotAPoolLoop", "PoolLoop", "find_pool_loops", "match_pool_loop"]
