"""Pattern rewriting: rules as data (tinygrad style) and a greedy worklist driver.

A rule is a pair ``(pattern, fn)``.  The pattern describes an op and, recursively, the
ops defining its operands; ``fn`` receives the pattern's bindings as keyword arguments
(plus ``rw``, a :class:`Rewriter`, if it has a parameter of that name) and returns the
replacement values of the root op's results, or ``None`` if the rule does not apply::

    x = Pat.var("x")
    RULES = [(Pat("arith.mul", x, Pat.const(1)), lambda x: x)]

Patterns of commutative ops with two operands also match with the operands swapped.
A variable bound twice must bind the same value, so ``Pat("arith.sub", x, x)`` is
``x - x``.  :func:`rewrite_greedily` applies rewrite functions until nothing changes; it
rejects any replacement whose type differs from the value it replaces (broadcasting can
change types), so a rule never has to check that itself.
"""

from __future__ import annotations

import inspect
import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from types import EllipsisType
from typing import Any

import numpy as np

from pyasc.ir.builder import Builder
from pyasc.ir.core import Block, DenseArray, Operation, OpResult, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.types import DYN, ScalarType, TensorType, Type, index

MAX_DENSE_ELEMENTS = 16
"""Largest tensor a rewrite materializes as a ``dense<...>`` constant (keeps IR readable)."""

_NO_CONST = object()


class Pat:
    """A pattern: an op (by name) with operand patterns, a variable, or a constant.

    ``names``: op name or tuple of names (``None`` for a variable).  ``srcs``: operand
    patterns; a trailing ``...`` allows any further operands.  ``bind``: binding name
    (op patterns bind the :class:`Operation`, others the :class:`Value`).  ``where``: an
    extra predicate on the matched op (op patterns) or value (variables and constants).
    """

    __slots__ = ("names", "srcs", "rest", "bind", "where", "value")

    def __init__(self, names: str | tuple[str, ...] | None, *srcs: Pat | EllipsisType,
                 bind: str | None = None, where: Callable[[Any], bool] | None = None,
                 const: object = _NO_CONST) -> None:
        self.names = (names,) if isinstance(names, str) else names
        self.rest = bool(srcs) and srcs[-1] is Ellipsis
        self.srcs: tuple[Pat, ...] = tuple(s for s in srcs if s is not Ellipsis)
        self.bind, self.where, self.value = bind, where, const

    @staticmethod
    def var(name: str, where: Callable[[Value], bool] | None = None) -> Pat:
        """Any value, bound as ``name``."""
        return Pat(None, bind=name, where=where)

    @staticmethod
    def const(value: bool | int | float, bind: str | None = None) -> Pat:
        """An ``arith.constant`` (scalar, or a tensor splat) equal to ``value``.

        Matching is exact and kind-sensitive: ``0`` matches integer zeros only, ``0.0``
        matches float ``+0.0`` but not ``-0.0``, ``True`` matches ``i1`` true only.
        """
        return Pat(None, bind=bind, const=value)

    def __repr__(self) -> str:
        return f"Pat({self.names}, {self.srcs}, bind={self.bind})"


# ---------------------------------------------------------------------------- matching


def constant_value(v: Value) -> object | None:
    """The attribute value if ``v`` is an ``arith.constant`` result, else ``None``."""
    if isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp):
        return v.op.value
    return None


def _kind(x: object) -> str:
    return "bool" if isinstance(x, bool | np.bool_) else (
        "float" if isinstance(x, float | np.floating) else "int")


def same_number(a: object, b: object) -> bool:
    """Exact equality: same kind, and for floats the same sign of zero; NaN equals NaN."""
    if _kind(a) != _kind(b):
        return False
    if _kind(a) == "float":
        a, b = float(a), float(b)  # type: ignore[arg-type]
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def _const_matches(v: Value, want: object) -> bool:
    got = constant_value(v)
    if isinstance(got, DenseArray):
        flat = got.array.reshape(-1)
        return flat.size > 0 and all(same_number(x, want) for x in flat.tolist())
    return got is not None and same_number(got, want)


def match(pat: Pat, v: Value, env: dict[str, Any]) -> bool:
    """Match value ``v`` against ``pat``, extending ``env`` (left unchanged on failure)."""
    if pat.names is None:
        if pat.value is not _NO_CONST and not _const_matches(v, pat.value):
            return False
        if pat.where is not None and not pat.where(v):
            return False
        return _bind(pat.bind, v, env)
    return isinstance(v, OpResult) and match_op(pat, v.op, env)


def match_op(pat: Pat, op: Operation, env: dict[str, Any]) -> bool:
    """Match ``op`` against the op pattern ``pat``, extending ``env`` on success."""
    if pat.names is None or op.name not in pat.names:
        return False
    operands = op.operand_values
    n = len(pat.srcs)
    if len(operands) < n or (len(operands) > n and not pat.rest):
        return False
    orders = [operands[:n]]
    if n == 2 and op.has_trait("commutative"):
        orders.append(operands[1::-1])
    for order in orders:
        trial = dict(env)
        if (all(match(p, v, trial) for p, v in zip(pat.srcs, order, strict=True))
                and (pat.where is None or pat.where(op)) and _bind(pat.bind, op, trial)):
            env.update(trial)
            return True
    return False


def _bind(name: str | None, obj: object, env: dict[str, Any]) -> bool:
    if name is None:
        return True
    if name in env:
        return env[name] is obj
    env[name] = obj
    return True


# ---------------------------------------------------------------------------- rewriter


class Rewriter:
    """Helper handed to a rewrite: builds new ops before the root op and records them."""

    def __init__(self, root: Operation) -> None:
        self.root = root
        self._builder: Builder | None = None  # made on first use: finding the root is O(n)
        self.created: list[Operation] = []

    def insert(self, op: Operation) -> Operation:
        """Insert ``op`` before the root (stamped with the root's location)."""
        if self._builder is None:
            self._builder = Builder.before(self.root)
        self.created.append(self._builder.insert(op))
        return op

    def constant(self, value: object, type_: Type) -> Value:
        """A constant of ``type_``: a scalar, or a tensor (dense if small, else a fill).

        ``value`` is a Python/numpy scalar or (for tensors) an array of the tensor's shape.
        """
        if isinstance(type_, ScalarType):
            return self.insert(arith.ConstantOp.new(np.asarray(value).item(), type_)).result
        assert isinstance(type_, TensorType) and type_.is_static
        arr = np.broadcast_to(np.asarray(value, dtype=type_.element.to_numpy()), type_.shape)
        return self.insert(arith.ConstantOp([], [type_], {"value": DenseArray(
            np.array(arr), type_)})).result

    def splat(self, value: object, like: Value) -> Value:
        """A value of ``like``'s type with every element ``value`` (dims taken from it)."""
        t = like.type
        if isinstance(t, ScalarType) or (t.is_static and t.num_elements() <= MAX_DENSE_ELEMENTS):
            return self.constant(value, t)
        assert isinstance(t, TensorType)
        scalar = self.constant(value, t.element)
        dims = [self.insert(tensor.DimOp([like], [index], {"axis": a})).result
                for a, d in enumerate(t.shape) if d == DYN]
        return self.insert(tensor.FillOp.new(scalar, t, dims)).result

    def inline_block(self, block: Block, args: Sequence[Value] = ()) -> list[Value]:
        """Move ``block``'s ops before the root, its arguments replaced by ``args``.

        Returns the operands of the block's terminator, which stays behind (it is erased
        with the root).
        """
        for arg, value in zip(block.args, args, strict=True):
            arg.replace_all_uses_with(value)
        term = block.terminator
        assert term is not None and term.has_trait("terminator")
        for op in list(block.ops[:-1]):
            self.insert(block.detach(op))
        return term.operand_values


RewriteFn = Callable[[Operation, Rewriter], "Sequence[Value] | None"]


class RuleSet:
    """Rules indexed by root op name; usable as a rewrite function."""

    def __init__(self, rules: Iterable[tuple[Pat, Callable[..., Any]]]) -> None:
        self.by_name: dict[str, list[tuple[Pat, Callable[..., Any], bool]]] = {}
        for pat, fn in rules:
            if not pat.names:
                raise ValueError(f"rule root must be an op pattern, got {pat}")
            wants_rw = "rw" in inspect.signature(fn).parameters
            for name in pat.names:
                self.by_name.setdefault(name, []).append((pat, fn, wants_rw))

    def __call__(self, op: Operation, rw: Rewriter) -> Sequence[Value] | None:
        for pat, fn, wants_rw in self.by_name.get(op.name, ()):
            env: dict[str, Any] = {}
            if not match_op(pat, op, env):
                continue
            out = fn(rw=rw, **env) if wants_rw else fn(**env)
            if out is not None:
                return [out] if isinstance(out, Value) else list(out)
        return None


# ---------------------------------------------------------------------------- driver


def _attached(op: Operation, top: Operation) -> bool:
    """True if ``op`` is still nested in ``top`` (not erased or detached)."""
    while op is not top:
        block = op.parent
        if block is None or block.parent is None or block.parent.parent is None:
            return False
        op = block.parent.parent
    return True


class _Worklist:
    def __init__(self, ops: Iterable[Operation]) -> None:
        self.queue: deque[Operation] = deque()
        self.members: set[int] = set()
        self.extend(ops)

    def extend(self, ops: Iterable[Operation]) -> None:
        for op in ops:
            if id(op) not in self.members:
                self.members.add(id(op))
                self.queue.append(op)

    def pop(self) -> Operation:
        op = self.queue.popleft()
        self.members.discard(id(op))
        return op

    def __bool__(self) -> bool:
        return bool(self.queue)


def _defining_ops(values: Iterable[Value]) -> list[Operation]:
    return [v.op for v in values if isinstance(v, OpResult)]


def _erase(op: Operation, worklist: _Worklist) -> None:
    operands = op.operand_values
    op.erase()
    worklist.extend(_defining_ops(operands))


def _may_broadcast_at_run_time(op: Operation) -> bool:
    """Whether an elementwise op's result shape depends on run-time sizes of two
    different operands: then a value of the result's *type* may still be smaller than
    the result (``select(c, a, a)`` with ``c`` of 5 elements and ``a`` of 1 is 5
    elements, not ``a``), so no rule may replace it."""
    if not op.name.startswith("arith."):
        return False
    dynamic = {id(v) for v in op.operand_values
               if isinstance(v.type, TensorType) and DYN in v.type.shape}
    return len(dynamic) > 1


def _try_rewrite(op: Operation, fn: RewriteFn, worklist: _Worklist) -> bool:
    rw = Rewriter(op)
    new = fn(op, rw)
    if new is not None and ([v.type for v in new] != [r.type for r in op.result_values]
                            or _may_broadcast_at_run_time(op)):
        new = None  # a replacement must keep the type (e.g. not drop a broadcast)
    if new is None:
        for created in reversed(rw.created):
            if not any(r.uses for r in created.result_values):
                created.erase()
        return False
    created = set(map(id, rw.created))
    for old, value in zip(op.result_values, new, strict=True):
        worklist.extend(user for user, _ in old.uses)
        if value.name_hint is None and isinstance(value, OpResult) and id(value.op) in created:
            value.name_hint = old.name_hint  # a folded "%y" keeps its name
        old.replace_all_uses_with(value)
    worklist.extend(w for c in rw.created for w in c.walk())
    _erase(op, worklist)
    return True


def rewrite_greedily(top: Operation, rewrites: Sequence[RewriteFn],
                     is_dead: Callable[[Operation], bool] | None = None) -> bool:
    """Apply ``rewrites`` to every op nested in ``top`` until none applies.

    Each rewrite function gets an op and a :class:`Rewriter` and returns the root's
    replacement values or ``None``; it must not change the IR when it returns ``None``
    (new ops inserted through the rewriter are fine: they are erased again).  Ops for
    which ``is_dead`` holds are erased.  Returns True if anything changed.
    """
    worklist = _Worklist(op for op in top.walk() if op is not top)
    changed = False
    while worklist:
        op = worklist.pop()
        if not _attached(op, top):
            continue
        if is_dead is not None and is_dead(op):
            _erase(op, worklist)
            changed = True
            continue
        changed |= any(_try_rewrite(op, fn, worklist) for fn in rewrites)
    return changed
