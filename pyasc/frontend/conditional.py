"""Values chosen at run time: ``a if c else b``, ``and``/``or``, branch tests.

:func:`select_value` lowers both sides into blocks of their own; when both are cheap
and safe to run whatever the condition (pure ops that cannot fail on the side Python
would not evaluate, see :func:`_may_fail`) it splices them and picks with
``arith.select``, so the expression stays one fusable computation, else it builds a
``loop.if``.  A side that surely raises a static shape or index error is compiled to
raise it when taken (``deferred``).  :func:`branch_condition` folds an ``and``/``or``
whose truth one operand decides at compile time.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from pyasc.frontend.deferred import Deferred, attempt, fail_at_run_time, maybe_skipped
from pyasc.frontend.lowering import Lowering
from pyasc.frontend.merge import MISSING, make_plan, materialize, rebuild
from pyasc.frontend.truth import condition, truth
from pyasc.frontend.values import Scalar
from pyasc.ir.core import Block, Operation, Region, Value
from pyasc.ir.ops import arith, loop
from pyasc.ir.types import DYN, i1


def build_in(lw: Lowering, block: Block, pre: dict[str, object],
             fn: Callable[[], object]) -> tuple[dict[str, object], object]:
    """Run ``fn`` with the insertion point in ``block`` and a copy of ``pre`` as the
    scope; returns the scope it left and what it returned."""
    lw.scope = dict(pre)
    with lw.em.b.at(block):
        result = fn()
    return lw.scope, result


def discard(block: Block) -> None:
    """Erase a trial block's ops (users first)."""
    for op in reversed(list(block.ops)):
        op.erase()


def select_value(lw: Lowering, cond: Value, then_fn: Callable[[], object],
                 else_fn: Callable[[], object], view: str = "") -> object:
    """``then_fn() if cond else else_fn()`` as a value; speculated with ``arith.select``
    when both sides are cheap and safe, else a ``loop.if``; ``view``: what becomes of
    a buffer one side is (``merge.KEEP``: it stays that buffer)."""
    pre = lw.scope
    blocks = [Block(), Block()]
    with maybe_skipped(lw):
        built = [build_in(lw, b, pre, lambda fn=fn: attempt(lw, fn))
                 for b, fn in zip(blocks, (then_fn, else_fn), strict=True)]
    lw.scope = pre
    failed = [v for _, v in built if isinstance(v, Deferred)]
    if len(failed) == 2:  # both sides raise: so does the expression, on every path
        for b in blocks:
            discard(b)
        raise failed[0].error
    for block, (_, value) in zip(blocks, built, strict=True):
        if isinstance(value, Deferred):
            with lw.em.b.at(block):
                fail_at_run_time(lw, value)
    paths = [dict(scope, **{"$value": MISSING if isinstance(value, Deferred) else value})
             for scope, value in built]
    plan, _ = make_plan(["$value"], paths, lambda n: bool(failed), views=lambda n: view)
    if not plan.types():
        _splice(lw, blocks)
        return rebuild(plan.shapes["$value"], iter(()))
    yields = []
    for block, path in zip(blocks, paths, strict=True):
        with lw.em.b.at(block):
            yields.append([v for name, shape in plan.shapes.items()
                           for v in materialize(lw.em, shape, path[name])])
    if _speculatable(blocks, cond) and all(not hasattr(t, "strides") for t in plan.types()):
        _splice_predicated(lw, blocks, cond)
        picked = [lw.em.result(arith.SelectOp.new(cond, a, b))
                  for a, b in zip(*yields, strict=True)]
    else:
        for block, vals in zip(blocks, yields, strict=True):
            with lw.em.b.at(block):
                lw.em.op(loop.YieldOp(vals))
        picked = lw.em.op(loop.IfOp([cond], plan.types(),
                                    regions=[Region([b]) for b in blocks])).result_values
    return rebuild(plan.shapes["$value"], iter(picked))


def branch_condition(lw: Lowering, node: ast.expr) -> bool | Scalar:
    """The truth of a branch's test (``if``, ``while``, ``a if test else b``).  An
    ``and``/``or`` (or its ``not``) is decided at compile time when one operand's truth
    is, whatever the others are: ``n > 0 and x.shape == y.shape`` is False for shapes
    that differ.  Operands run as Python runs them (short-circuit), so an operand after
    a run-time one is still lowered under it."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = branch_condition(lw, node.operand)
        if isinstance(inner, bool):
            return not inner
        with lw.em.b.location(lw.src.location(node)):
            return Scalar(lw.em.result(arith.NotOp.new(inner.value)), weak=True)
    if not isinstance(node, ast.BoolOp):
        return condition(lw, node)
    is_and = isinstance(node.op, ast.And)
    result = branch_condition(lw, node.values[0])
    for rest in node.values[1:]:
        if isinstance(result, bool):
            if result != is_and:  # decided: the rest is never evaluated
                return result
            result = branch_condition(lw, rest)
            continue
        with lw.em.b.location(lw.src.location(rest)):
            right = select_value(lw, result.value, lambda n=rest: branch_condition(lw, n),
                                 lambda: False) if is_and else select_value(
                lw, result.value, lambda: True, lambda n=rest: branch_condition(lw, n))
        result = right if isinstance(right, bool) else truth(lw, right)
    return result


_UNSAFE = frozenset({"tensor.extract", "tensor.gather"})
_INDEXING = frozenset({"tensor.slice", "mem.subview"})
_EMPTY_RAISES = frozenset({"tensor.max", "tensor.min", "tensor.argmax", "tensor.argmin"})


def _speculatable(blocks: list[Block], cond: Value) -> bool:
    """Both sides may run unconditionally (``arith.select``): every op is pure, has no
    region and cannot fail on the side Python would not evaluate.  A Python int's range
    check (``OverflowError``) is predicated on its side's condition instead: the side
    not taken then computes with a wrapped int, harmlessly.  Shape and bounds checks
    keep the ``loop.if``: they guard the memory the side would touch; but a run-time
    size check the other side makes too (``x + y if c else x - y``) fails the same
    whichever runs, so it does not stop the select."""
    checks_ok = cond.type == i1
    keys = [{_size_check(op) for op in b.ops} - {None} for b in blocks]
    for b, other in zip(blocks, reversed(keys), strict=True):
        for op in b.ops:
            key = _size_check(op)
            if not ((op.has_trait("pure") or op.name == "mem.to_tensor"
                     or checks_ok and _value_check(op))
                    and not op.region_list and not _may_fail(op)
                    and (key is None or key in other)):
                return False
    return True


def _value_check(op: Operation) -> bool:
    return op.name == "func.assert" and op.attributes["kind"].startswith("raise:OverflowError")


def _splice_predicated(lw: Lowering, blocks: list[Block], cond: Value) -> None:
    """Both sides' ops before the select; a check of a side only fails when that side is
    the one taken (``x * k if flag else x + k``: ``k``'s range check for its dtype)."""
    for b, then_side in zip(blocks, (True, False), strict=True):
        for op in list(b.ops):
            b.detach(op)
            if op.name == "func.assert":  # then side: ok = !cond | c; else: cond | c
                skipped = lw.em.result(arith.NotOp.new(cond)) if then_side else cond
                op.set_operand(0, lw.em.result(arith.OrOp.new(skipped, op.operand_values[0])))
            lw.em.op(op)


def _may_fail(op: Operation) -> bool:
    """Pure ops that raise (or read out of bounds) for some operand values: an element
    read, a gather, an integer index (``x[j]`` when ``j`` is out of range on the path not
    taken: ``j < n and x[j].max() > 0``), a max/min/argmax/argmin of an array that
    may be empty (numpy raises ``ValueError``).  Run-time size checks: :func:`_size_check`."""
    if op.name in _UNSAFE:
        return True
    if op.name in _INDEXING:
        return bool(op.attributes.get("drop"))
    if op.name in _EMPTY_RAISES:
        shape = getattr(op.operand_values[0].type, "shape", ())
        return any(d == DYN or d == 0 for d in shape)
    return False


_RESHAPING = frozenset({"tensor.broadcast", "tensor.reshape"})


def _size_check(op: Operation) -> tuple | None:
    """What the lowering of ``op`` checks of run-time sizes (numpy's ValueError when
    they do not fit), as a key equal for ops that check the same: arrays of run-time
    sizes combined elementwise (``x + y`` and ``x - y`` alike), by a contraction or a
    concatenation, or reshaped or broadcast to sizes they may not have.  ``None``: no
    such check (``x + y if x.shape == y.shape else x`` must not check ``x + y`` when
    it is not taken)."""
    tensors = [v for v in op.operand_values if hasattr(v.type, "shape")]
    if not any(DYN in v.type.shape for v in tensors):
        return None
    origins = frozenset(_origin(v) for v in tensors)
    if len(origins) < 2 and op.name not in _RESHAPING:
        return None
    kind = "broadcast" if op.name.startswith("arith.") else op.name
    return kind, origins, tuple(v.type.shape for v in tensors) if kind != "broadcast" else ()


def _origin(v: Value) -> object:
    """The array a tensor value reads: each side snapshots an argument on its own."""
    op = getattr(v, "op", None)
    if op is not None and op.name == "mem.to_tensor":
        return op.operand_values[0]
    return v


def _splice(lw: Lowering, blocks: list[Block]) -> None:
    for b in blocks:
        for op in list(b.ops):
            lw.em.op(b.detach(op))
