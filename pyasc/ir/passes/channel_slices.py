"""A window slice over a whole run-time axis, times an operand of its shape, summed:
rewritten into the loop form ``channel-interchange`` moves out of the nest.

A multi-channel convolution written with window slices, the channel count
``C = x.shape[0]`` known at run time only (``dynamic_shape=True``)::

    for o in range(O):
        for i in range(H):
            for j in range(W):
                out[o, i, j] = np.sum(x[:, i:i + 3, j:j + 3] * w[o])

is a tensor sum over a view of run-time size (``batch_windows`` expands static windows
only).  Where ``w[o]`` has the window's shape, ``w.shape[1:] == (C, 3, 3)`` (numpy would
broadcast a size-one axis or raise otherwise), it computes what the loop form computes::

    acc = 0.0                                   # float32 for a float16 (or bf16) sum
    for c in range(C):
        for a in range(3):
            for b in range(3):
                acc += x[c, i + a, j + b] * w[o, c, a, b]
    out[o, i, j] = acc                          # (cast back to the sum's dtype)

so :func:`rewrite_slices` versions the nest: ``if w.shape[1] == C and w.shape[2] == 3
and w.shape[3] == 3: <the nest, each such sum its loop form> else: <the nest>`` (a
versioned ``loop.if``, whose branch the host picks; no condition when every size is
known equal).  The window is a ``mem.subview`` with unit steps whose first kept axis
is a whole run-time axis of its array (offset 0, size its ``mem.dim``), its other kept
axes of static sizes once ``batch_ranges`` decided numpy's clamping from the loops'
bounds; the other operand a unit-step view of the same rank (either side of the
product).  The elements are added in the loop's order (channel, row, column), not in
numpy's pairwise order (``docs/math-accuracy.md``); a float16 sum accumulates in
float32, as numpy's float16 sum does internally, and is rounded once at the end.

The AscendC backend runs this before ``channel-interchange`` (``backend/ascendc/
lower_channels.py``) and keeps a rewrite only where the interchanged loop then plans
as one channel kernel; the CPU backend does not run it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyasc.ir.builder import Builder, discard_ops
from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import arith, loop, mem, tensor
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes.batch_nest import constant_int, inline_groups, nest
from pyasc.ir.passes.batch_ranges import drop_dead_index_math, simplify_with_ranges
from pyasc.ir.passes.channel_interchange import match as interchange_match
from pyasc.ir.passes.invariance import inside
from pyasc.ir.passes.versioning import top_blocks
from pyasc.ir.types import ScalarType, bf16, f16, f32, index


@dataclass
class SliceSum:
    """One ``sum(window * other)`` of a nest's body: the sum, the product, the two views
    (``window`` the one over the whole run-time axis), their kept axes, the window's
    sizes (the run-time axis size first, then static ints) and the sizes of ``other``
    the versioning must test, each with the value it must equal."""

    total: tensor.SumOp
    product: Operation
    window: mem.SubviewOp
    other: mem.SubviewOp
    sizes: list[Value | int]
    tests: list[tuple[Value, Value | int]]


def _view(v: Value) -> mem.SubviewOp | None:
    """The unit-step view whose snapshot ``v`` is, else None."""
    if not (isinstance(v, OpResult) and isinstance(v.op, mem.ToTensorOp)):
        return None
    view = v.op.operand_values[0]
    if not (isinstance(view, OpResult) and isinstance(view.op, mem.SubviewOp)):
        return None
    if any(constant_int(s) != 1 for s in view.op.parts()[2]):
        return None
    return view.op


def _kept(view: mem.SubviewOp) -> list[int]:
    drop = set(view.attributes.get("drop") or ())
    return [a for a in range(len(view.parts()[0])) if a not in drop]


def _window_sizes(view: mem.SubviewOp) -> list[Value | int] | None:
    """``[C, n1, n2, ...]`` when the first kept axis of ``view`` is a whole run-time axis
    of its source (offset 0, size the source's ``mem.dim``) and the others are static."""
    offsets, sizes, _ = view.parts()
    kept = _kept(view)
    if not kept or constant_int(offsets[kept[0]]) != 0:
        return None
    whole = sizes[kept[0]]
    if not (isinstance(whole, OpResult) and isinstance(whole.op, mem.DimOp) and
            whole.op.operand_values[0] is view.source and
            whole.op.attributes["axis"] == kept[0]):
        return None
    static = [constant_int(sizes[a]) for a in kept[1:]]
    if any(n is None for n in static):
        return None
    return [whole, *static]  # type: ignore[list-item]


def _tests(other: mem.SubviewOp, want: list[Value | int],
           top: Operation) -> list[tuple[Value, Value | int]] | None:
    """The sizes of ``other`` to test against ``want`` (None: they cannot be equal, or a
    run-time size is computed inside the nest)."""
    sizes = [other.parts()[1][a] for a in _kept(other)]
    if len(sizes) != len(want):
        return None
    tests: list[tuple[Value, Value | int]] = []
    for have, need in zip(sizes, want, strict=True):
        n = constant_int(have)
        if have is need or (n is not None and n == need):
            continue
        if n is not None or inside(top, have):
            return None  # a static mismatch (numpy broadcasts or raises): as today
        tests.append((have, need))
    return tests


def match_sum(op: Operation, top: Operation) -> SliceSum | None:
    """``op`` as a :class:`SliceSum` of the nest ``top``, else None."""
    if not isinstance(op, tensor.SumOp) or op.attributes.get("keepdims"):
        return None
    prod = op.operand_values[0]
    rank = len(prod.type.shape)  # type: ignore[attr-defined]
    result = op.result_values[0].type
    if sorted(op.attributes.get("axes", ())) != list(range(rank)) or \
            result not in (f32, f16, bf16) or not isinstance(prod, OpResult) or \
            not isinstance(prod.op, arith.MulOp) or len(prod.uses) != 1 or \
            prod.type.element != result:  # type: ignore[attr-defined]
        return None
    a, b = prod.op.operand_values
    for win, oth in ((_view(a), _view(b)), (_view(b), _view(a))):
        if win is None or oth is None:
            continue
        sizes = _window_sizes(win)
        if sizes is None or len(sizes) != rank or inside(top, sizes[0]):  # type: ignore[arg-type]
            continue
        tests = _tests(oth, sizes, top)
        if tests is not None:
            return SliceSum(op, prod.op, win, oth, sizes, tests)
    return None


class _Emitter:
    """Builds the loop form of a :class:`SliceSum` in place of its sum; ``outer`` builds
    the constants the loops' bounds need before the nest."""

    def __init__(self, outer: Builder) -> None:
        self.outer = outer
        self.consts: dict[int, Value] = {}

    def const(self, n: int) -> Value:
        if n not in self.consts:
            self.consts[n] = self.outer.insert(arith.ConstantOp.new(n, index)).result
        return self.consts[n]

    def emit(self, m: SliceSum) -> None:
        total = m.total.result_values[0]
        elem = total.type
        acc_t = f32 if elem in (f16, bf16) else elem  # numpy's float16 sum: in float32
        assert isinstance(acc_t, ScalarType)
        b = Builder.before(m.total)
        init = b.insert(arith.ConstantOp.new(0.0, acc_t, loc=m.total.loc)).result
        loops = self._nest(b, [m.sizes[0], *(self.const(n) for n in m.sizes[1:])],  # type: ignore[arg-type]
                           init, m.total.loc)
        b = Builder.at_end(loops[-1].body.blocks[0], m.total.loc)
        ivs = [lp.induction_var for lp in loops]
        x, y = self._load(b, m.window, ivs), self._load(b, m.other, ivs)
        args = [x, y] if m.product.operand_values[0].op.operand_values[0] is \
            m.window.result_values[0] else [y, x]  # type: ignore[attr-defined]
        term = b.insert(arith.MulOp(args, [elem])).result  # the product's own rounding
        if acc_t != elem:
            term = b.insert(arith.CastOp.new(term, acc_t)).result
        acc = loops[-1].iter_args[0]
        b.insert(loop.YieldOp([b.insert(arith.AddOp([acc, term], [acc_t])).result]))
        result = loops[0].outputs[0]
        if acc_t != elem:
            result = Builder.after(loops[0]).insert(
                arith.CastOp.new(result, elem, loc=m.total.loc)).result  # type: ignore[arg-type]
        total.replace_all_uses_with(result)

    def _nest(self, b: Builder, uppers: list[Value], init: Value, loc) -> list[loop.ForOp]:  # noqa: ANN001
        """Loops from 0 to each of ``uppers`` carrying the sum from ``init`` (the first
        the channel loop), each inner one's result yielded by the one around it; the
        innermost body is left to fill."""
        loops: list[loop.ForOp] = []
        acc = init
        for k, upper in enumerate(uppers):
            lp = loop.ForOp.empty(self.const(0), upper, self.const(1), [acc],
                                  iv_name="c" if k == 0 else None, loc=loc)
            b.insert(lp)
            if loops:
                b.insert(loop.YieldOp([lp.outputs[0]]))
            loops.append(lp)
            acc = lp.iter_args[0]
            b = Builder.at_end(lp.body.blocks[0], loc)
        return loops

    def _load(self, b: Builder, view: mem.SubviewOp, ivs: list[Value]) -> Value:
        idx = list(view.parts()[0])
        for axis, iv in zip(_kept(view), ivs, strict=True):
            idx[axis] = iv if constant_int(idx[axis]) == 0 else \
                b.insert(arith.AddOp([idx[axis], iv], [index])).result
        elem = view.result_values[0].type.element  # type: ignore[attr-defined]
        return b.insert(mem.LoadOp([view.source, *idx], [elem])).result


def _erase_dead(block: Block) -> None:
    """Erase the pure ops (views and snapshots included) of ``block`` nothing uses."""
    for op in reversed(list(block.ops)):
        if not op.region_list and op.result_values and \
                not any(r.uses for r in op.result_values) and \
                (op.has_trait("pure") or isinstance(op, (mem.SubviewOp, mem.ToTensorOp))):
            op.erase()
    drop_dead_index_math(block)


def _fast_copy(top: loop.ForOp, outer: Builder) -> tuple[loop.ForOp, list] | None:
    """A detached copy of ``top`` whose one :class:`SliceSum` is its loop form, with the
    size tests, when ``channel-interchange`` then matches it; else None."""
    fast = top.clone({})
    assert isinstance(fast, loop.ForOp)
    loops = nest(fast)
    inner = loops[-1].body.blocks[0]
    inline_groups(inner)
    simplify_with_ranges(inner, loops)  # numpy's clamping of the window, decided
    found = [m for op in inner.ops if (m := match_sum(op, fast)) is not None]
    if len(found) != 1:
        fast.erase()
        return None
    _Emitter(outer).emit(found[0])
    _erase_dead(inner)
    if interchange_match(fast) is None:
        fast.erase()
        return None
    return fast, found[0].tests


def _condition(b: Builder, tests: list[tuple[Value, Value | int]]) -> Value | None:
    cond: Value | None = None
    for have, need in tests:
        if isinstance(need, int):
            need = b.insert(arith.ConstantOp.new(need, index)).result
        test = b.insert(arith.CmpOp.new("eq", have, need)).result
        cond = test if cond is None else b.insert(arith.AndOp([cond, test], [test.type])).result
    return cond


def _place(top: loop.ForOp, fast: loop.ForOp, outer: Builder, tests: list) -> None:
    """``if tests hold: fast else: top`` (or ``fast`` alone without tests) at ``top``."""
    cond = _condition(outer, tests)
    if cond is None:
        outer.insert(fast)
        top.erase()
        return
    branch = outer.insert(loop.IfOp.empty(cond, [], top.loc))
    branch.attributes["versioned"] = True
    assert top.parent is not None
    top.parent.detach(top)
    for block, nest_op in ((branch.then_region.blocks[0], fast),
                           (branch.else_region.blocks[0], top)):
        block.append(nest_op)
        block.append(loop.YieldOp([], loc=top.loc))


def rewrite_slices(fn: FuncOp, accept: Callable[[int], bool] | None = None
                   ) -> list[loop.ForOp]:
    """Rewrite the top-level nests of ``fn`` (and of its top-level versioned branches)
    holding one :class:`SliceSum` (module docstring); ``accept(k)``: whether to rewrite
    the ``k``-th such nest.  Returns the rewritten nests (their loop-form copies)."""
    done: list[loop.ForOp] = []
    seen = 0
    for op in [op for block in top_blocks(fn.entry) for op in block.ops]:
        if not isinstance(op, loop.ForOp) or op.inits:
            continue
        outer = Builder.before(op)
        with outer.recording() as made:
            found = _fast_copy(op, outer)
        if found is None:
            discard_ops(made)
            continue
        seen += 1
        if accept is not None and not accept(seen - 1):
            found[0].erase()
            discard_ops(made)
            continue
        outer.loc = op.loc
        _place(op, found[0], outer, found[1])
        done.append(found[0])
    return done


def slice_candidates(fn: FuncOp) -> int:
    """How many nests :func:`rewrite_slices` would rewrite (nothing changes; a cheap
    look first: a sum and a view over a whole run-time axis)."""
    ops = list(fn.walk())
    if not any(isinstance(op, tensor.SumOp) for op in ops) or \
            not any(isinstance(op, mem.SubviewOp) and _whole_axis(op) for op in ops):
        return 0
    seen: list[int] = []
    rewrite_slices(fn, lambda k: seen.append(k) is not None)  # (accepts none)
    return len(seen)


def _whole_axis(view: mem.SubviewOp) -> bool:
    kept = _kept(view)
    size = view.parts()[1][kept[0]] if kept else None
    return isinstance(size, OpResult) and isinstance(size.op, mem.DimOp) and \
        size.op.operand_values[0] is view.source


__all__ = ["SliceSum", "match_sum", "rewrite_slices", "slice_candidates"]
