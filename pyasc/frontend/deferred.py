"""Static shape and index errors on paths that may not run: raised when they run.

numpy raises a shape error (``x + y`` of shapes (4,) and (3,)) or an index error
(``x[5]`` of a 4-element ``x``) only when the expression runs.  pyasc knows static shapes
when compiling, so such an error is found then; but in code under a run-time condition
(a branch of an ``if`` or of a conditional expression, the rest of a body after a
possible ``return``, the body of a loop that may run zero times) it must not stop the
compilation: ``x + y if flag else x * 2`` is numpy's ``x * 2`` when ``flag`` is false,
and ``if n > 5: v = x[5]`` is fine for ``n <= 5``.

There, the statement (or the side of a conditional expression) is compiled as a
run-time failure of its path instead: a ``func.assert`` of kind ``shape``/``bounds``
whose message and location are the error's, so the same E50002/E50004 (a
``ValueError``/``IndexError``, as numpy's) is raised when and only when the path runs;
the path then leaves the function, as after a ``raise``.  A compile-time warning
(W50002) still shows the mistake early.  The ops the statement emitted before failing
are removed first (it may have stopped halfway through building a loop), and the
names it bound are restored.  Outside any run-time condition the error stays a
compile-time error, as before: that code surely runs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pyasc.errors import IndexOutOfBoundsError, PathErrorWarning, ShapeInferenceError
from pyasc.frontend.lowering import Lowering
from pyasc.ir.builder import discard_ops
from pyasc.ir.core import Location
from pyasc.ir.ops import arith, func
from pyasc.ir.types import i1

KINDS: dict[type, str] = {ShapeInferenceError: "shape", IndexOutOfBoundsError: "bounds"}
"""The errors a path may defer, and the run-time check kind that raises them again."""


@dataclass(frozen=True)
class Deferred:
    """What :func:`attempt` returns when the code failed with a deferrable error."""

    error: ShapeInferenceError | IndexOutOfBoundsError


@contextmanager
def maybe_skipped(lw: Lowering) -> Iterator[None]:
    """Code lowered inside runs only under a run-time condition."""
    lw.guarded += 1
    try:
        yield
    finally:
        lw.guarded -= 1


def attempt(lw: Lowering, build: Callable[[], object]) -> object:
    """``build()``; under a run-time condition, a static shape/index error is returned
    as :class:`Deferred` with everything ``build`` emitted and bound undone."""
    if not lw.guarded:
        return build()
    scope = dict(lw.scope)
    with lw.em.b.recording() as ops:
        try:
            return build()
        except (ShapeInferenceError, IndexOutOfBoundsError) as exc:
            failed = Deferred(exc)
    discard_ops(ops)
    lw.scope = scope
    lw.em.wrote()  # cached buffer reads may be among the removed ops
    return failed


def fail_at_run_time(lw: Lowering, deferred: Deferred) -> None:
    """Emit the run-time failure of ``deferred`` at the insertion point (and warn)."""
    exc = deferred.error
    loc = lw.em.b.loc
    if exc.lineno is not None:
        loc = Location(exc.filename, exc.lineno, (exc.col_offset or 0) + 1)
    with lw.em.b.location(loc):
        never = lw.em.result(arith.ConstantOp.new(False, i1))
        kind = next(k for cls, k in KINDS.items() if isinstance(exc, cls))
        lw.em.op(func.AssertOp([never], [], {"message": exc.message, "kind": kind}))
    warnings.warn_explicit(PathErrorWarning(
        f"this raises {exc.code} ({exc.title}: {exc.message}) whenever it runs; "
        "compiled to raise it then, since a run-time condition may skip it"),
        PathErrorWarning, loc.file or "<unknown>", loc.line or 0)


__all__ = ["Deferred", "attempt", "fail_at_run_time", "maybe_skipped"]
