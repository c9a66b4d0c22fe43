"""Window ops on arrays of run-time sizes: the sizes that would make them static.

Under ``dynamic_shape=True`` an array a window op reads beside a static window may have
a run-time shape: ``w[c]`` of a run-time ``w`` (a view whose sizes are run-time values),
or a whole weight argument ``k`` (``np.sum(x[i:i+5, j:j+5] * k)``).  numpy's
broadcasting aligns each of its run-time extents with the window's static ones; if each
were that extent the op would be a window op.  :func:`assume_sizes` raises
:class:`WindowSizes` with those assumptions (a view's size values; a whole buffer's
``(buffer, axis)`` dimensions), which ``batch_loops`` versions the nest on: the fast
copy reads the sizes as constants, and a whole buffer through a view of constant
sizes, whose shape :func:`known_shape` reads (the view's type still says ``?``).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import mem
from pyasc.ir.passes.batch_nest import constant_int, depends_on
from pyasc.ir.passes.batch_window_chains import WindowRefuse
from pyasc.ir.types import DYN, TensorType

SizeKey = Value | tuple[Value, int]
"""A run-time extent: a view's size value, or ``(buffer, axis)`` of a whole buffer."""


class WindowSizes(WindowRefuse):
    """A window op reads an array of run-time sizes beside a static window (``w[c]`` of
    a run-time ``w``, or a whole run-time ``k``): it would be a window op if each size
    value in ``sizes`` (a view's sizes) and each dimension ``(buffer, axis)`` in
    ``dims`` (a whole buffer's) were the static extent it meets (the caller may
    version the nest on that)."""

    def __init__(self, sizes: dict[Value, int],
                 dims: dict[tuple[Value, int], int] | None = None) -> None:
        super().__init__("a window op on an array of run-time sizes")
        self.sizes = sizes
        self.dims = dims or {}


def kept_axes(op: Operation) -> list[int]:
    """The axes of view ``op``'s source that its result keeps (not dropped)."""
    drop = set(op.attributes.get("drop") or ())
    rank = len(op.parts()[0])  # type: ignore[attr-defined]
    return [a for a in range(rank) if a not in drop]


def known_shape(v: Value) -> tuple[int, ...]:
    """The shape of tensor ``v`` (``()`` for a scalar), a run-time extent of its type
    replaced by the constant size of the view it is a snapshot of: a view's type says
    ``?`` where its sizes are constants under run-time shapes (``w[c]`` or the static
    view of a whole ``k`` in the fast copy of a nest ``batch_loops`` versioned)."""
    t = v.type
    if not isinstance(t, TensorType):
        return ()
    shape = tuple(t.shape)
    src = v.op.operand_values[0] if isinstance(v, OpResult) and \
        isinstance(v.op, mem.ToTensorOp) else None  # type: ignore[union-attr]
    if DYN not in shape or not isinstance(src, OpResult) or \
            not isinstance(src.op, mem.SubviewOp):
        return shape
    sizes = [constant_int(src.op.parts()[1][a]) for a in kept_axes(src.op)]
    return tuple(s if n == DYN and s is not None else n
                 for n, s in zip(shape, sizes, strict=True))


def assume_sizes(operands: Sequence[Value], shapes: list[tuple[int, ...]],
                 ivs: set[Value]) -> None:
    """Raise :class:`WindowSizes` when every run-time operand of a window op (its
    ``operands`` of ``shapes``, in a nest with loop indices ``ivs``) is a loop-invariant
    snapshot, of a unit-step view (its run-time sizes) or of a whole buffer (its
    dimensions), each run-time extent aligned (numpy broadcasting) with one static
    extent of the other operands; return otherwise."""
    static = [s for s in shapes if DYN not in s]
    rank = max(len(s) for s in shapes)
    want = {a: {s[a - rank + len(s)] for s in static if a - rank + len(s) >= 0}
            for a in range(rank)}
    need: dict[SizeKey, int] = {}
    for v, shape in zip(operands, shapes, strict=True):
        if DYN not in shape:
            continue
        keys = _size_keys(v, ivs)
        if keys is None:
            return
        for a, (n, key) in enumerate(zip(shape, keys, strict=True)):
            extents = want[a + rank - len(shape)] - {1}
            if n != DYN:
                continue
            if len(extents) != 1 or need.get(key, min(extents)) != min(extents) or \
                    isinstance(key, Value) and depends_on(key, ivs):
                return
            need[key] = min(extents)
    raise WindowSizes({k: n for k, n in need.items() if isinstance(k, Value)},
                      {k: n for k, n in need.items() if isinstance(k, tuple)})


def _size_keys(v: Value, ivs: set[Value]) -> list[SizeKey] | None:
    """Per axis of snapshot ``v``, what its extent is: a size value of the unit-step
    view it reads, or ``(buffer, axis)`` of the whole loop-invariant buffer it reads
    (``np.sum(x[i:i+5, j:j+5] * k)`` with a run-time ``k``); None for anything else."""
    src = v.op.operand_values[0] if isinstance(v, OpResult) and \
        isinstance(v.op, mem.ToTensorOp) else None  # type: ignore[union-attr]
    view = src.op if isinstance(src, OpResult) else None
    if src is None or isinstance(view, mem.SubviewOp) and \
            any(constant_int(x) != 1 for x in view.parts()[2]):
        return None
    if isinstance(view, mem.SubviewOp):
        return [view.parts()[1][a] for a in kept_axes(view)]
    return None if depends_on(src, ivs) else [(src, a) for a in range(len(known_shape(v)))]


__all__ = ["WindowSizes", "assume_sizes", "kept_axes", "known_shape"]
