"""What the modules of group lowering share: the index type and the evaluator's
interface.

``lower_group_eval.GroupEval`` evaluates a ``fusion.group`` body element by element;
the per-op rules (``lower_group_dims``: run-time sizes, ``lower_group_acc``:
accumulators, ``lower_group_reduce``: reduction phases) call back into it.  They see
it through :class:`Evaluator`, defined here below all of them, so the imports go one
way (the evaluator imports its rules, never the reverse).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pyasc.ir.core import Operation, Value

Index = Sequence[Value]
"""An element index: one ``index`` value per axis."""


class Evaluator(Protocol):
    """The parts of ``GroupEval`` the per-op rules use."""

    gen: Any  # the LoopGen emitting the loops
    ops: list[Operation]
    outputs: list[Value]
    dependent: Any
    loaders: dict[Value, Callable[[Index], Value]]
    bcast: dict[Operation, Any]

    def dims(self, v: Value) -> list[Value]:
        """Run-time sizes of a body value (``[]`` for scalars)."""

    def at(self, v: Value, idx: Index) -> Value:
        """The scalar ``v[idx]`` emitted at the insertion point."""

    def remember(self, v: Value, idx: Index, x: Value) -> None:
        """Record ``x`` as ``v[idx]`` for the current block and those inside it."""

    def scalar(self, v: Value) -> Value:
        """The value of a rank-0 body value."""

    def canonical(self, v: Value, dom: Sequence[Value],
                  bound: dict[int, Value]) -> list[Value] | None:
        """The index of ``v`` aligned to a domain of sizes ``dom``, or None."""
