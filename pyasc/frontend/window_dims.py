"""Window loops of a run-time size: which array dimensions to specialize by value.

Under ``dynamic_shape=True`` a depthwise conv written the natural way,
``k = wt.shape[1]; for i: for j: for di in range(k): for dj in range(k):
acc += x[c, i + di, j + dj] * wt[c, di, dj]``, has window loops whose trip count is a
run-time dimension of ``wt``.  Only window loops of a compile-time size unroll into
stencil taps (AscendC ``batch-loops``), so such a kernel would run scalar.  Instead the
jit compiles one kernel per window size: the dimensions a window loop's bounds are
computed from are specialized by value (``jit/specialize.py``, path
``(*array_path, "shape", axis)``) while every other dimension stays run-time.

A *window loop* is a ``loop.for`` whose counter is added to a value that moves with the
counter of an enclosing loop (``i + di``, ``2 * i - 1 + di``; not ``i * w + j``, a
flattened row): it walks a window that moves with the outer loop.  Its bounds must be
pure functions of array dimensions and constants (a bound that depends on a scalar
argument or a loop counter is left alone) and not a proper superset of the dimensions
of the enclosing loop's bounds (that is a tap loop around the positions).
A *window slice* (``x[c, i:i + k, j:j + k]``, ``k = wt.shape[1]``) is the same window
written as a slice: a size of a ``mem.subview`` computed (numpy's clamping:
``max(0, min(i + k, h) - min(i, h))``) from an ``i + k`` whose one side moves with an
enclosing loop's counter and whose other side ``k`` is computed from array dimensions
alone.  Its dimensions are asked for by value too (so the slice is a static window,
which ``batch-loops`` expands into per-element stencil taps), when they are a proper
subset of the dimensions of the bounds of the loop it moves with (``range(h - k +
1)``: the positions of a window of size ``k`` in an image of ``h``; a window sized
from the image alone, ``x[i:i + h // 2]``, keeps the image's dimensions run-time).
A slice bound adding a dimension to a counter is also a tap of a pool over
whole-image slices (``for di in range(k): x[..., di:di + oh * s:s]``): there the
size's dimensions (the image's) are not among the tap loop's, and the image
dimensions stay run-time.
"""

from __future__ import annotations

from pyasc.frontend.signature import SHAPE
from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.loop import ForOp


def window_dims(fn: FuncOp, paths: dict[Value, tuple]) -> frozenset[tuple]:
    """The by-value paths ``(*array_path, "shape", axis)`` of the run-time dimensions
    the bounds of ``fn``'s window loops are computed from (``paths``: the parameter
    path of each function argument)."""
    out: set[tuple] = set()
    for op in fn.walk():
        if isinstance(op, ForOp):
            dims = _bound_dims(op, paths)
            if dims and any(not (_bound_dims(o, paths) or set()) < dims
                            for o in _paired_loops(op)):
                out |= dims
        elif op.name == "mem.subview":
            out |= _slice_dims(op, paths)
    return frozenset(out)


def _slice_dims(view: Operation, paths: dict[Value, tuple]) -> set[tuple]:
    """The dimensions of the window sizes of ``view``'s slices: each ``i + k`` its sizes
    are computed from (through pure ops) where ``i`` moves with an enclosing loop's
    counter and ``k`` is computed from array dimensions alone, fewer than those of that
    loop's bounds (module docstring)."""
    _, sizes, _ = view.parts()  # type: ignore[attr-defined]
    enclosing = _enclosing_loops(view)
    out: set[tuple] = set()
    for add in _adds_behind(sizes):
        for side, other in (add.operand_values, reversed(add.operand_values)):
            dims: set[tuple] = set()
            if not _leaf_dims(other, paths, dims, set()) or not dims:
                continue
            for loop in enclosing:
                if _depends_on(side, {id(loop.induction_var)}, set()) and \
                        dims < (_bound_dims(loop, paths) or set()):
                    out |= dims
    return out


def _adds_behind(values: list[Value], depth: int = 6) -> list[Operation]:
    """The ``arith.add`` ops the ``values`` are computed from by pure scalar ops within
    ``depth`` steps (numpy's slice clamping: ``max``, ``sub``, ``min``)."""
    out: list[Operation] = []
    seen: set[int] = set()
    todo = [(v, depth) for v in values]
    while todo:
        v, d = todo.pop()
        if id(v) in seen or d == 0 or not isinstance(v, OpResult):
            continue
        seen.add(id(v))
        op = v.op
        if op.name == "arith.add":
            out.append(op)
        if op.name in ("arith.add", "arith.sub", "arith.min", "arith.max"):
            todo += [(x, d - 1) for x in op.operand_values]
    return out


def _paired_loops(loop: ForOp) -> list[ForOp]:
    """The enclosing loops whose counter the loop's counter is added to (``i + di``).

    The inner loop is not the window when the enclosing loop's bounds use fewer of the
    dimensions (a proper subset): a tap loop around the positions (``for t in
    range(k): for i in range(n - k + 1): x[i + t]``) pairs the other way round, and the
    image dimensions must stay run-time."""
    iv = loop.induction_var
    enclosing = _enclosing_loops(loop)
    out = []
    for user, _ in iv.uses:
        if user.name != "arith.add":
            continue
        for other in user.operand_values:
            out += [o for o in enclosing if other is not iv and
                    _depends_on(other, {id(o.induction_var)}, set())]
    return out


def _enclosing_loops(op: Operation) -> list[ForOp]:
    out = []
    parent = op.parent_op
    while parent is not None:
        if isinstance(parent, ForOp):
            out.append(parent)
        parent = parent.parent_op
    return out


def _depends_on(v: Value, counters: set[int], seen: set[int]) -> bool:
    """Whether ``v`` moves with one of ``counters``: a counter plus or minus anything,
    times a constant (``i``, ``i * 2 - 1``).  A counter times a run-time value is not a
    window position: ``y[i * w + j]`` flattens rows, and its ``j`` loop runs over the
    image width, which must stay run-time."""
    if id(v) in counters:
        return True
    if id(v) in seen or not isinstance(v, OpResult):
        return False
    seen.add(id(v))
    op = v.op
    if op.name in ("arith.add", "arith.sub"):
        return any(_depends_on(x, counters, seen) for x in op.operand_values)
    if op.name == "arith.mul":
        a, b = op.operand_values
        return (_is_constant(b) and _depends_on(a, counters, seen)) or \
            (_is_constant(a) and _depends_on(b, counters, seen))
    return False


def _is_constant(v: Value) -> bool:
    return isinstance(v, OpResult) and v.op.name == "arith.constant"


def _bound_dims(loop: ForOp, paths: dict[Value, tuple]) -> set[tuple] | None:
    """The dimensions the loop's bounds and step are computed from, or ``None`` when
    they depend on anything but dimensions of arguments and constants."""
    out: set[tuple] = set()
    for v in (loop.lower, loop.upper, loop.step):
        if not _leaf_dims(v, paths, out, set()):
            return None
    return out


def _leaf_dims(v: Value, paths: dict[Value, tuple], out: set[tuple], seen: set[int]
               ) -> bool:
    if id(v) in seen:
        return True
    seen.add(id(v))
    if isinstance(v, BlockArgument) or not isinstance(v, OpResult):
        return False
    op = v.op
    if op.name == "mem.dim":
        array = op.operand_values[0]
        path = paths.get(array)
        if path is None:  # a dimension of a local array
            return False
        out.add((*path, SHAPE, op.attributes["axis"]))
        return True
    if not op.has_trait("pure") or op.region_list:
        return False
    return all(_leaf_dims(x, paths, out, seen) for x in op.operand_values)
