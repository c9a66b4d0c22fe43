"""Structured control flow: ``if``, loops, and ``break``/``continue``/``return`` as flags.

Jumps are hidden scope names (``$brk``, ``$cont``, ``$ret``; the returned value is
``$rv``), assigned like variables and joined like them.  After each statement,
:func:`lower_body` looks at the flags: one that is compile-time ``True`` ends the list
(the rest is dead); one that is a run-time ``i1`` wraps the rest of the list in
``loop.if(not flag)``.  A loop that may ``break`` or ``return`` becomes a
``loop.while`` whose condition also tests those flags; ``continue`` is reset at the top
of each iteration.

Loop-carried values are found by lowering the body, comparing what each name holds at
its end with what it held before the loop, and lowering again with the joined types as
block arguments until the types are stable (a weak ``acc = 0`` meeting ``acc + x[i]``
becomes a float32 accumulator on the second pass).

A loop left only by ``break`` (``while True:``) captures, at each ``break``, the names
first assigned in it and read after it: ``$capture`` (the loop's tag and those names)
tells ``break`` which; it stores each value in a hidden ``$exit<tag>:<name>`` slot,
joined like ``$rv`` (read only after the loop, so the paths without the break need no
value), or marks it ``$exit<tag>?:<name>`` if the name is not assigned there.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from pyasc.errors import InternalCompilerError, PyascError
from pyasc.frontend.conditional import build_in, discard, select_value
from pyasc.frontend.deferred import Deferred, attempt, fail_at_run_time, maybe_skipped
from pyasc.frontend.lowering import BRK, CONT, RET, RV, Lowering, hook
from pyasc.frontend.merge import (
    KEEP,
    MISSING,
    MUST,
    Plan,
    identical,
    make_plan,
    materialize,
    rebuild,
)
from pyasc.frontend.truth import truth
from pyasc.frontend.values import Scalar, Undefined
from pyasc.ir.core import Block, Region, Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.types import i1, index

JUMP_FLAGS = (BRK, CONT, RET)
MAX_ATTEMPTS = 8
CAPTURE, EXIT = "$capture", "$exit"
"""Hidden scope names of the break captures (see the module docstring)."""
ZERO_TIMES = "is first assigned inside a loop that may run zero times"


def jump_state(scope: dict[str, object]) -> bool | list[str] | None:
    """``True`` if a jump surely happened, the run-time flags if one may have, else None."""
    runtime = []
    for flag in JUMP_FLAGS:
        v = scope.get(flag)
        if v is True:
            return True
        if isinstance(v, Scalar):
            runtime.append(flag)
    return runtime or None


@hook("body")
def lower_body(lw: Lowering, stmts: list[ast.stmt]) -> None:
    """Lower statements; what follows a possible jump runs under ``if not jumped``."""
    for k, st in enumerate(stmts):
        failed = attempt(lw, lambda st=st: lw.stmt(st))
        if isinstance(failed, Deferred):  # the path raises there: the rest is dead
            fail_at_run_time(lw, failed)
            lw.scope[RET] = True
            return
        state = jump_state(lw.scope)
        if state is True:
            return
        if state and k + 1 < len(stmts):
            nxt = stmts[k + 1]
            with lw.em.b.location(lw.src.location(nxt)):
                try:
                    _guard_rest(lw, state, stmts[k + 1:])
                except PyascError as exc:
                    raise lw.src.locate(exc, nxt) from exc.__cause__
            return


def _guard_rest(lw: Lowering, flags: list[str], rest: list[ast.stmt]) -> None:
    jumped = _any(lw, [lw.scope[f].value for f in flags])  # type: ignore[union-attr]
    go = lw.em.result(arith.NotOp.new(jumped))

    def then() -> None:
        for f in flags:
            lw.scope[f] = False
        lw.body(rest)

    def otherwise() -> None:
        if len(flags) == 1:
            lw.scope[flags[0]] = True

    lower_if(lw, go, then, otherwise, else_jumped=True)


def _any(lw: Lowering, values: list[Value]) -> Value:
    out = values[0]
    for v in values[1:]:
        out = lw.em.result(arith.OrOp.new(out, v))
    return out


def _ordered_names(*scopes: dict[str, object]) -> list[str]:
    seen: dict[str, None] = {}
    for s in scopes:
        seen.update(dict.fromkeys(s))
    return list(seen)


def lower_if(lw: Lowering, cond: Value, then_fn: Callable[[], None],
             else_fn: Callable[[], None], else_jumped: bool = False) -> None:
    """``loop.if`` over two statement builders; names they rebind are joined."""
    pre = lw.scope
    blocks = [Block(), Block()]
    with maybe_skipped(lw):
        paths = [build_in(lw, b, pre, fn)[0] for b, fn in zip(blocks, (then_fn, else_fn),
                                                           strict=True)]
    jumped = [jump_state(paths[0]) is True, else_jumped or jump_state(paths[1]) is True]

    def allow_missing(name: str) -> bool:
        return name == RV or name.startswith(EXIT) or \
            all(jumped[i] for i, p in enumerate(paths)
                if isinstance(p.get(name, MISSING), Undefined))

    names = _ordered_names(pre, *paths)
    plan, undefined = make_plan(names, paths, allow_missing, pre, view_policy(lw))
    for block, path in zip(blocks, paths, strict=True):
        with lw.em.b.at(block):
            _yield(lw, plan, path, loop.YieldOp)
    op = lw.em.op(loop.IfOp([cond], plan.types(), regions=[Region([b]) for b in blocks]))
    lw.scope = _after(pre, plan, undefined, op.result_values,
                      "is assigned in only one branch of an if")


def view_policy(lw: Lowering, in_loop: bool = False) -> Callable[[str], str]:
    """What a join of ``if``/loop paths does with buffers a name holds (merge.KEEP):
    a name written through or aliasing a written array (a storage name) must stay a
    view; the returned value keeps it (``np.shares_memory(f(x), x)`` as in numpy), and
    so does, after an ``if``, a name returned later or passed to a callee
    (``Lowering.kept``).  Not a loop's: a buffer per iteration for ``m = x[0]`` then
    ``m = np.maximum(m, x[i])``, for an identity seen only when the loop runs zero
    times."""
    def policy(name: str) -> str:
        if name in lw.storage:
            return MUST
        return KEEP if name.startswith(RV) or not in_loop and name in lw.kept else ""
    return policy


def _yield(lw: Lowering, plan: Plan, path: dict[str, object], op_cls: type) -> None:
    values = [v for name, shape in plan.shapes.items()
              for v in materialize(lw.em, shape, path.get(name, MISSING))]
    lw.em.op(op_cls(values))


def _after(pre: dict[str, object], plan: Plan, undefined: set[str], results: list[Value],
           reason: str) -> dict[str, object]:
    scope = dict(pre)
    it = iter(results)
    for name, shape in plan.shapes.items():
        scope[name] = rebuild(shape, it)
    for name in undefined:
        if not name.startswith("$"):
            scope[name] = Undefined(reason)
        else:
            scope.pop(name, None)
    return scope


# ---------------------------------------------------------------------------- loops


def _loop_plan(pre: dict[str, object], end: dict[str, object], prev: Plan,
               keep_new: Callable[[str], bool], views: Callable[[str], str]
               ) -> tuple[Plan, set[str]]:
    names = [n for n in _ordered_names(pre, end) if n != CONT and not n.startswith("$value")]
    changed = [n for n in names if n in prev.shapes or n not in pre or n not in end
               or not identical(pre[n], end[n])]

    def allow_missing(name: str) -> bool:
        return name == RV or name.startswith(EXIT) or keep_new(name)

    return make_plan(changed, [pre, end], allow_missing, pre, views)


def rebind(lw: Lowering, plan: Plan, args: list[Value]) -> None:
    """Bind the carried names of ``plan`` to block arguments ``args``."""
    it = iter(args)
    for name, shape in plan.shapes.items():
        lw.scope[name] = rebuild(shape, it)


@dataclass
class LoopBody:
    """A lowered loop body whose carried names and types are stable."""

    plan: Plan  # the carried names and their slot types
    undefined: set[str]  # names first assigned inside, undefined after the loop
    blocks: list[Block]  # the region blocks (without terminators yet)
    pre: dict[str, object]  # the scope before the loop
    end: dict[str, object]  # the scope at the end of the body


def carried_loop(lw: Lowering, make_blocks: Callable[[Plan], list[Block]],
                 build: Callable[[list[Block], Plan], dict[str, object]],
                 keep_new: Callable[[str], bool]) -> LoopBody:
    """Lower a loop body until its carried names and types are stable.

    ``make_blocks(plan)`` creates the region blocks; ``build(blocks, plan)`` lowers into
    them (from the pre-loop scope, carried names rebound to block arguments) and returns
    the scope at the end of the body.  ``keep_new(name)`` says whether a name first
    assigned inside the body is carried out (with a dummy initial value).
    """
    pre = dict(lw.scope)
    plan = Plan()
    for _ in range(MAX_ATTEMPTS):
        blocks = make_blocks(plan)
        lw.scope = dict(pre)
        end = build(blocks, plan)
        new_plan, undefined = _loop_plan(pre, end, plan, keep_new, view_policy(lw, True))
        if new_plan.signature() == plan.signature():
            lw.scope = pre
            return LoopBody(plan, undefined, blocks, pre, end)
        for b in blocks:
            discard(b)
        plan = new_plan
    raise InternalCompilerError("the types of loop-carried variables did not converge")


def inits_of(lw: Lowering, plan: Plan, pre: dict[str, object]) -> list[Value]:
    """The initial values of the carried names (casts emitted before the loop)."""
    return [v for name, shape in plan.shapes.items()
            for v in materialize(lw.em, shape, pre.get(name, MISSING))]


def after_loop(pre: dict[str, object], plan: Plan, undefined: set[str],
               results: list[Value], reason: str = ZERO_TIMES) -> dict[str, object]:
    """The scope after a loop: carried names bound to the loop's results; the names
    left undefined are so for ``reason``."""
    return _after(pre, plan, undefined, results, reason)


def finish_loop(lw: Lowering, plan: Plan, undefined: set[str], pre: dict[str, object],
                results: list[Value], saved: dict[str, object], reason: str = ZERO_TIMES
                ) -> None:
    """Bind the loop results and restore the enclosing loop's jump flags."""
    lw.scope = after_loop(pre, plan, undefined, results, reason)
    restore_flags(lw, saved)


def save_flags(lw: Lowering) -> dict[str, object]:
    """Remove and return the enclosing loop's break/continue flags and capture."""
    return {f: lw.scope.pop(f) for f in (BRK, CONT, CAPTURE) if f in lw.scope}


def restore_flags(lw: Lowering, saved: dict[str, object]) -> None:
    """Drop this loop's flags and capture; put back the enclosing loop's."""
    for flag in (BRK, CONT, CAPTURE):
        lw.scope.pop(flag, None)
    lw.scope.update(saved)


def capture_at_break(lw: Lowering) -> None:
    """At a ``break``: store the names its loop captures (see the module docstring)."""
    capture = lw.scope.get(CAPTURE)
    if capture is None:
        return
    tag, names = capture  # type: ignore[misc]
    for name in names:
        value = lw.scope.get(name)
        if value is None or isinstance(value, Undefined):
            lw.scope[f"{EXIT}{tag}?:{name}"] = True
        else:
            lw.scope[f"{EXIT}{tag}:{name}"] = value


def captured_after(lw: Lowering, tag: str, names: frozenset[str], reason: str) -> None:
    """After the loop: bind each captured name to its value at the ``break`` that left
    the loop, or mark it undefined (``reason``) if some ``break`` comes before it is
    assigned; then drop the hidden slots."""
    for name in names:
        slot = f"{EXIT}{tag}:{name}"
        if lw.scope.get(f"{EXIT}{tag}?:{name}") is True:
            lw.scope[name] = Undefined(reason)
        elif slot in lw.scope:
            lw.scope[name] = lw.scope[slot]
    prefixes = (f"{EXIT}{tag}:", f"{EXIT}{tag}?:")
    for hidden in [n for n in lw.scope if n.startswith(prefixes)]:
        del lw.scope[hidden]


def iv_scalar(value: Value, lo: int | None, hi: int | None) -> Scalar:
    """A loop index value with its known bounds."""
    return Scalar(value, weak=True, lo=lo, hi=hi)


def as_i1(lw: Lowering, c: object) -> Value:
    """A compile-time bool or run-time truth value as an ``i1`` value."""
    if isinstance(c, Scalar):
        return c.value if c.type == i1 else lw.em.cast_scalar(c, i1).value
    return lw.em.const(bool(c), i1).value


def loop_condition(lw: Lowering, cond_fn: Callable[[], object]) -> object:
    """The user's condition, short-circuited by the break/return flags."""
    flags = []
    for f in (BRK, RET):
        v = lw.scope.get(f)
        if v is True:
            return False
        if isinstance(v, Scalar):
            flags.append(v.value)
    if not flags:
        return truth(lw, cond_fn())
    stop = _any(lw, flags)
    go = lw.em.result(arith.NotOp.new(stop))
    return select_value(lw, go, lambda: truth(lw, cond_fn()), lambda: False)


def index_value(lw: Lowering, v: object) -> Value:
    """An index operand as an IR value (compile-time ints become constants)."""
    return v.value if isinstance(v, Scalar) else lw.em.const(v, index).value
