"""Statement rules for control flow: ``if``, ``for``, ``while``, jumps and ``with``.

``if`` on a compile-time condition compiles only the taken branch.  ``for`` runs over
``range(...)`` (a counted ``loop.for``; a ``loop.while`` when the body may ``break`` or
``return``), over the first axis of an array, or is unrolled over a compile-time tuple.

A loop that surely runs its body (a ``for`` of known non-zero trip count, a ``while``
whose first test is known true) leaves defined the names first assigned in it that are
assigned at the end of the body and before each ``break``/``continue``
(``names.assigned_before_jumps``); ``while True:`` is left only by ``break``, so a name
is defined after it when every ``break`` comes after its assignment (break captures,
see ``control``).  Other names first assigned in a loop are undefined after it.
``with fusion_scope():`` becomes a ``fusion.scope`` whose body yields the names it
assigns that are read elsewhere in the function.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from contextlib import nullcontext

from pyasc.errors import PyascError, UnsupportedSyntaxError
from pyasc.frontend import indexmath
from pyasc.frontend.conditional import branch_condition, discard, select_value
from pyasc.frontend.control import (
    CAPTURE,
    ZERO_TIMES,
    after_loop,
    as_i1,
    capture_at_break,
    captured_after,
    carried_loop,
    finish_loop,
    index_value,
    inits_of,
    iv_scalar,
    jump_state,
    loop_condition,
    lower_if,
    rebind,
    restore_flags,
    save_flags,
)
from pyasc.frontend.deferred import maybe_skipped
from pyasc.frontend.fusion import fusion_scope
from pyasc.frontend.iteration import Product, iteration, nested_loops
from pyasc.frontend.lowering import BRK, CONT, RET, RV, Lowering, stmt_rule
from pyasc.frontend.merge import (
    MISSING,
    Plan,
    Same,
    Slot,
    TupleShape,
    identical,
    materialize,
    rebuild,
)
from pyasc.frontend.names import assigned_before_jumps, jumps
from pyasc.frontend.sequences import unrolled
from pyasc.frontend.truth import logical_not
from pyasc.frontend.values import Buffer, RangeValue, Scalar, Tensor, Undefined
from pyasc.ir.core import Block, Region, Value
from pyasc.ir.ops import func, loop
from pyasc.ir.types import index


@stmt_rule(ast.If)
def lower_if_stmt(lw: Lowering, node: ast.If) -> None:
    """``if``/``elif``/``else``: compile-time conditions pick a branch."""
    cond = branch_condition(lw, node.test)
    if isinstance(cond, bool):
        lw.body(node.body if cond else node.orelse)
        return
    lower_if(lw, cond.value, lambda: lw.body(node.body), lambda: lw.body(node.orelse))


@stmt_rule(ast.Break)
def lower_break(lw: Lowering, node: ast.Break) -> None:
    """``break`` sets the loop's break flag (and stores the loop's captures)."""
    capture_at_break(lw)
    lw.scope[BRK] = True


@stmt_rule(ast.Continue)
def lower_continue(lw: Lowering, node: ast.Continue) -> None:
    """``continue`` sets the iteration's continue flag."""
    lw.scope[CONT] = True


@stmt_rule(ast.Return)
def lower_return(lw: Lowering, node: ast.Return) -> None:
    """``return`` records the value and sets the returned flag."""
    lw.scope[RV] = None if node.value is None else lw.expr(node.value)
    lw.scope[RET] = True


# ---------------------------------------------------------------------------- for


@stmt_rule(ast.For)
def lower_for(lw: Lowering, node: ast.For) -> None:
    """``for`` over ranges, arrays, enumerate/zip, or tuples (unrolled)."""
    with lw.em.b.location(lw.src.location(node.iter)):
        try:
            value = lw.expr(node.iter)
            if isinstance(value, Product):  # np.ndindex, itertools.product: a nest
                lw.body(nested_loops(lw, node, value))
                return
            it = iteration(lw, value)
        except PyascError as exc:
            raise lw.src.locate(exc, node.iter) from exc.__cause__
    if isinstance(it, list):
        _unroll(lw, node, it, _binder(lw, node.target, lambda v: v))
        return
    rng, item = it
    bind = _binder(lw, node.target, item)
    values = unrolled(lw, node, rng)  # a loop growing a list or indexing one of arrays
    if values is not None:
        _unroll(lw, node, values, bind)
    elif jumps(node.body):
        _for_as_while(lw, node, rng, bind)
    else:
        _counted_for(lw, node, rng, bind)


def _binder(lw: Lowering, target: ast.expr, item: Callable[[object], object]
            ) -> Callable[[object], None]:
    return lambda iv: lw.assign(target, item(iv))


def _unroll(lw: Lowering, node: ast.For, items: list, bind: Callable) -> None:
    if jumps(node.body) or any(isinstance(n, ast.Continue) for n in ast.walk(node)):
        raise lw.error(UnsupportedSyntaxError, "break/continue/return in a loop that is "
                       "unrolled (over a tuple, or growing or indexing a list of arrays)",
                       node, hint="loop over range(len(...)) into a preallocated array")
    for item in items:
        bind(item)
        lw.body(node.body)
    lw.body(node.orelse)


def _iv_bounds(rng: RangeValue) -> tuple[int | None, int | None]:
    """Bounds of the loop variable inside the body (known when the step is)."""
    if not isinstance(rng.step, int):
        return None, None
    lo_start, hi_start = indexmath.bound(rng.start, "lo"), indexmath.bound(rng.start, "hi")
    lo_stop, hi_stop = indexmath.bound(rng.stop, "lo"), indexmath.bound(rng.stop, "hi")
    if rng.step > 0:
        return lo_start, None if hi_stop is None else hi_stop - 1
    return None if lo_stop is None else lo_stop + 1, hi_start


def _trip_count(rng: RangeValue) -> int | None:
    if all(isinstance(x, int) for x in (rng.start, rng.stop, rng.step)):
        return len(range(rng.start, rng.stop, rng.step))
    return None


def _body(lw: Lowering, block: Block, fn: Callable[[], None]) -> dict[str, object]:
    """Lower one iteration's statements into ``block`` (``continue`` starts unset)."""
    with lw.em.b.at(block):
        lw.scope[CONT] = False
        fn()
    return lw.scope


SURE_RUN = "may be unassigned when the loop ends (a branch, break or continue skips it)"
"""Why a name first assigned in a loop that surely runs is undefined after it."""


def _keep_after(lw: Lowering, node: ast.For, rng: RangeValue) -> Callable[[str], bool]:
    """Names first assigned in a ``for`` kept after it (see the module docstring)."""
    if not _trip_count(rng):
        return _never
    targets = frozenset(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return _sure_after(lw, node, targets)


def _sure_after(lw: Lowering, node: ast.For | ast.While, start: frozenset[str]
                ) -> Callable[[str], bool]:
    """For a loop that surely runs: names read after it and assigned before each of its
    jumps (the carried-values plan checks the end of the body)."""
    used = lw.loads.outside(node)
    assigned = assigned_before_jumps(node.body, start)
    return lambda name: name in used and (assigned is None or name in assigned)


def _never(name: str) -> bool:
    return False


def _counted_for(lw: Lowering, node: ast.For, rng: RangeValue, bind: Callable) -> None:
    saved = save_flags(lw)
    bounds = [index_value(lw, x) for x in (rng.start, rng.stop, rng.step)]
    lo, hi = _iv_bounds(rng)
    if _trip_count(rng) == 0:
        lw.scope.update(saved)
        lw.body(node.orelse)
        return

    def build(blocks: list[Block], plan: Plan) -> dict[str, object]:
        rebind(lw, plan, blocks[0].args[1:])
        iv = iv_scalar(blocks[0].args[0], lo, hi)
        return _body(lw, blocks[0], lambda: (bind(iv), lw.body(node.body)))

    with maybe_skipped(lw) if _trip_count(rng) is None else nullcontext():
        body = carried_loop(lw, lambda plan: [Block([index, *plan.types()])], build,
                            _keep_after(lw, node, rng))
    inits = inits_of(lw, body.plan, body.pre)
    with lw.em.b.at(body.blocks[0]):
        _yield(lw, body.plan, body.end)
    op = lw.em.op(loop.ForOp([*bounds, *inits], body.plan.types(),
                             regions=[Region(body.blocks)]))
    finish_loop(lw, body.plan, body.undefined, body.pre, op.result_values, saved,
                SURE_RUN if _trip_count(rng) else ZERO_TIMES)
    lw.body(node.orelse)


def _yield(lw: Lowering, plan: Plan, path: dict[str, object]) -> None:
    lw.em.op(loop.YieldOp([v for n, s in plan.shapes.items()
                           for v in materialize(lw.em, s, path.get(n, MISSING))]))


def _for_as_while(lw: Lowering, node: ast.For, rng: RangeValue, bind: Callable) -> None:
    """``for`` with ``break``/``return``: a while loop over a hidden counter."""
    counter = lw.unit.fresh("iv")
    lo, hi = _iv_bounds(rng)
    stop, step = rng.stop, rng.step
    lw.scope[counter] = rng.start

    def cond() -> object:
        iv = lw.scope[counter]
        if isinstance(step, int):
            return _compare(lw, "lt" if step > 0 else "gt", iv, stop)
        up = _compare(lw, "lt", iv, stop)
        down = _compare(lw, "gt", iv, stop)
        positive = _compare(lw, "gt", step, 0)
        return select_value(lw, as_i1(lw, positive), lambda: up, lambda: down)

    def body() -> None:
        iv = lw.scope[counter]
        lw.scope[counter] = indexmath.add(lw.em, iv, step)
        current = iv if isinstance(iv, int) else iv_scalar(iv.value, lo, hi)
        bind(current)
        lw.body(node.body)

    _while_loop(lw, cond, body, node.orelse, _keep_after(lw, node, rng))
    lw.scope.pop(counter, None)


def _compare(lw: Lowering, pred: str, a: object, b: object) -> object:
    if isinstance(a, int) and isinstance(b, int):
        return {"lt": a < b, "gt": a > b}[pred]
    return Scalar(indexmath.cmp(lw.em, pred, a, b), weak=True)


# ---------------------------------------------------------------------------- while


@stmt_rule(ast.While)
def lower_while_stmt(lw: Lowering, node: ast.While) -> None:
    """``while`` loops (with ``else``)."""
    cond_fn, body_fn = (lambda: branch_condition(lw, node.test)), (lambda: lw.body(node.body))
    if not _always_true(node.test):
        _while_loop(lw, cond_fn, body_fn, node.orelse, _sure_after(lw, node, frozenset()))
        return
    tag = lw.unit.fresh("w").lstrip("$")
    assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}
    used = lw.loads.outside(node)
    names = frozenset(n for n in assigned if n in used
                      and isinstance(lw.scope.get(n, MISSING), Undefined))
    _while_loop(lw, cond_fn, body_fn, node.orelse, capture=(tag, names))
    captured_after(lw, tag, names, BREAK_FIRST)


BREAK_FIRST = "may be unassigned when the 'while True' loop ends (a break comes before it)"


def _always_true(test: ast.expr) -> bool:
    """``while True:``, ``while 1:``: left only by ``break`` (or ``return``)."""
    return isinstance(test, ast.Constant) and bool(test.value)


def _while_loop(lw: Lowering, cond_fn: Callable[[], object], body_fn: Callable[[], None],
                orelse: list[ast.stmt], keep_new: Callable[[str], bool] = _never,
                capture: tuple[str, frozenset[str]] | None = None) -> None:
    """``keep_new``: the names first assigned inside kept after the loop if its body
    surely runs; ``capture``: the tag and names its breaks capture."""
    saved = save_flags(lw)
    lw.scope[BRK] = False
    first = _first_test(lw, cond_fn)
    if first is False:
        _end_while(lw, saved, orelse)
        return
    if first is not True:
        keep_new = _never
    if capture is not None:
        lw.scope[CAPTURE] = capture
    conds: list[Value] = []

    def build(blocks: list[Block], plan: Plan) -> dict[str, object]:
        before, after = blocks
        pre = dict(lw.scope)
        rebind(lw, plan, before.args)
        with lw.em.b.at(before):
            conds.append(as_i1(lw, loop_condition(lw, cond_fn)))
        lw.scope = pre
        rebind(lw, plan, after.args)
        return _body(lw, after, body_fn)

    with maybe_skipped(lw) if first is not True else nullcontext():
        body = carried_loop(lw, lambda plan: [Block(plan.types()), Block(plan.types())],
                            build, keep_new)
    inits = inits_of(lw, body.plan, body.pre)
    before, after = body.blocks
    with lw.em.b.at(before):
        lw.em.op(loop.ConditionOp([conds[-1], *before.args]))
    with lw.em.b.at(after):
        _yield(lw, body.plan, body.end)
    op = lw.em.op(loop.WhileOp(inits, body.plan.types(), regions=[Region([before]),
                                                                   Region([after])]))
    lw.scope = after_loop(body.pre, body.plan, body.undefined, op.result_values,
                          SURE_RUN if first is True else ZERO_TIMES)
    _end_while(lw, saved, orelse)


def _first_test(lw: Lowering, cond_fn: Callable[[], object]) -> object:
    """The condition before the first iteration, when known at compile time (the ops
    of a run-time test are discarded: the loop evaluates it itself)."""
    scratch, pre = Block(), lw.scope
    with lw.em.b.at(scratch):
        first = loop_condition(lw, cond_fn)
    lw.scope = pre
    discard(scratch)
    return first


def _end_while(lw: Lowering, saved: dict[str, object], orelse: list[ast.stmt]) -> None:
    broke = lw.scope.get(BRK, False)
    restore_flags(lw, saved)
    if not orelse:
        return
    go = logical_not(lw, broke)
    if isinstance(go, bool):
        if go:
            lw.body(orelse)
        return
    lower_if(lw, go.value, lambda: lw.body(orelse), lambda: None)


# ---------------------------------------------------------------------------- with


@stmt_rule(ast.With)
def lower_with(lw: Lowering, node: ast.With) -> None:
    """``with fusion_scope():`` (the only context manager allowed)."""
    if len(node.items) != 1 or node.items[0].optional_vars is not None or \
            not _is_fusion_scope(lw, node.items[0].context_expr):
        raise lw.error(UnsupportedSyntaxError, "only 'with fusion_scope():' is supported",
                       node, hint="remove the with statement")
    pre = dict(lw.scope)
    block = Block()
    with lw.em.b.at(block):
        lw.body(node.body)
    end = lw.scope
    if jump_state(end):
        raise lw.error(UnsupportedSyntaxError, "return, break or continue inside a "
                       "fusion_scope block", node)
    used = lw.loads.outside(node)
    changed = [n for n in end if not n.startswith("$") and
               (n not in pre or not identical(pre[n], end[n]))]
    plan = Plan({n: _exact(end[n]) for n in changed if n in used})
    with lw.em.b.at(block):
        lw.em.op(func.FusionYieldOp([v for n, s in plan.shapes.items()
                                     for v in materialize(lw.em, s, end[n])]))
    op = lw.em.op(func.FusionScopeOp([], plan.types(), regions=[Region([block])]))
    it = iter(op.result_values)
    lw.scope = dict(end)
    for n in changed:
        lw.scope[n] = rebuild(plan.shapes[n], it) if n in plan.shapes else \
            Undefined("is local to the fusion_scope block")


def _is_fusion_scope(lw: Lowering, node: ast.expr) -> bool:
    if not isinstance(node, ast.Call) or node.args or node.keywords:
        return False
    return lw.expr(node.func) is fusion_scope


def _exact(value: object) -> object:
    """A plan entry yielding every run-time leaf of ``value`` with its own type."""
    if isinstance(value, tuple | list):
        return TupleShape(tuple(_exact(v) for v in value), isinstance(value, list))
    if isinstance(value, Scalar):
        return Slot(value.type, value.weak)
    if isinstance(value, Tensor | Buffer):
        return Slot(value.type)
    return Same(value)

