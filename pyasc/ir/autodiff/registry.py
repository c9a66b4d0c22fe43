"""The table of gradient (VJP) rules: op class -> rule, filled by the ``rules_*`` modules.

A rule is ``rule(sweep, op, douts) -> grads``: ``op`` is the forward op (of the source
function), ``douts`` the adjoint of each of its results (``None`` where none reached
it), and ``grads`` one adjoint per operand (``None`` for none), computed with
``sweep.em`` from the forward values ``sweep.v(x)``.  The sweep sums each returned
adjoint into its operand, undoing broadcasting (``GradEmitter.fit``).  A rule may
instead accumulate itself (``sweep.accumulate``, gradient buffers) and return ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyasc.errors import NotDifferentiableError
from pyasc.ir.core import Location, Operation, Value

Grads = Sequence[Value | None] | None
Rule = Callable[[Any, Any, list[Value | None]], Grads]
"""``(sweep, op, douts) -> grads``; the sweep (``sweep.Sweep``) sits above this table."""

RULES: dict[type[Operation], Rule] = {}
"""Gradient rules by exact op class."""


def vjp_rule(*classes: type[Operation]) -> Callable[[Rule], Rule]:
    """Decorator: register ``rule`` for each op class."""

    def register(rule: Rule) -> Rule:
        for cls in classes:
            RULES[cls] = rule
        return rule

    return register


def not_differentiable(loc: Location, message: str, hint: str | None = None
                       ) -> NotDifferentiableError:
    """E50013 located at ``loc`` (the user's line of the op)."""
    err = NotDifferentiableError(message, hint=hint)
    if loc.known:
        err.with_location(loc.file, loc.line, max(loc.col - 1, 0))
    return err


def no_rule(op: Operation) -> NotDifferentiableError:
    """The error for an op on the gradient's path that has no rule."""
    return not_differentiable(op.loc, f"automatic differentiation cannot go through "
                              f"'{op.name}' (no gradient rule)")
