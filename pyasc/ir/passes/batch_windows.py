"""Window slices in a loop body become element loads: ``batch-loops`` then batches them.

The seed's bilateral filter computes, per pixel, on a static window slice::

    color_diff = img[i, j] - img[i-5:i+6, j-5:j+6]      # an (11, 11) array per pixel
    ...
    result[i, j] = np.sum(img[i-5:i+6, j-5:j+6] * weights) / np.sum(weights)

``batch-loops`` batches element accesses ``img[i + di, j + dj]`` (each becomes a shifted
view of the image), not array values per iteration.  :func:`scalarize_windows` rewrites
the (flattened) body so that a small static window is its elements: the snapshot of
``img[i-5:i+6, j-5:j+6]`` becomes 121 loads ``img[i - 5 + a, j - 5 + b]``, every
elementwise op on window values becomes one op per element (numpy broadcasting: a
loop-invariant array such as the space kernel contributes ``kernel[b]``, a scalar
itself), and a whole-window ``sum``/``max``/``min`` becomes a chain over the elements
(left to right, see ``batch_window_chains.Chain``), all emitted element by element (see
:class:`_Scalarizer`).  The
body is then straight-line scalar code over ``img[i + c, j + d]``, which the analysis
batches like a blur, and the backend runs it as stencil kernels.

A window is a ``mem.subview`` with unit steps and static sizes of at most
``MAX_WINDOW`` elements that moves with the iteration (:func:`_is_window`): along each
axis wider than one its offset follows a loop index or is loop-invariant (a whole
static axis, ``x[:, i:i+3, j:j+3]``); dropped axes (``x[c, i:i+3, j:j+3]``) stay at
their offset; a view moving along size-one axes only (``w[o]``) is a window unless it
follows every loop index (``x[i]``, ``x[b, i]`` in a nest over ``(b, i)``: a row, left to
the row rules).  Any
other use of a window value (a store of the whole window, a partial reduction, an op
without a rule) raises ``WindowRefuse``: the nest is left alone, as before.  A window
op on an array of run-time sizes beside a static window (``w[c]`` of a run-time ``w``,
a whole run-time ``k``) raises :class:`WindowSizes` with the sizes that would make it
a window (``batch_window_sizes``), which ``batch_loops`` versions the nest on.
"""

from __future__ import annotations

import itertools

import numpy as np

from pyasc.ir.core import Block, Operation, OpResult, Value
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.passes.batch_nest import constant_int, depends_on
from pyasc.ir.passes.batch_window_chains import CHAIN as _CHAIN
from pyasc.ir.passes.batch_window_chains import Chain, WindowRefuse
from pyasc.ir.passes.batch_window_sizes import WindowSizes, assume_sizes, known_shape
from pyasc.ir.passes.batch_window_sizes import kept_axes as _kept
from pyasc.ir.types import DYN, ScalarType, TensorType, index

MAX_WINDOW = 256  # elements of one window expanded into scalar ops


def _is_window(op: Operation, ivs: set[Value]) -> bool:
    """Whether ``op`` is a window of the nest with loop indices ``ivs`` (module
    docstring): a static unit-step view that moves with the iteration.  Along an axis
    wider than one the offset follows a loop index or is loop-invariant (a whole axis
    ``x[:, i:i+3, j:j+3]``: its elements are ``x[c, i+a, j+b]`` for every ``c``).  A
    view that moves along size-one axes only (``w[o]``, ``x[i:i+1, :]``) is a window
    unless its offsets follow every loop index of the nest (``x[i]`` in a loop over
    ``i``, ``x[b, i]`` in a nest over ``(b, i)``: a row, kept for the row rules)."""
    if not isinstance(op, mem.SubviewOp):
        return False
    offsets, sizes, steps = op.parts()
    shape = [constant_int(s) for s in sizes]
    if any(s is None for s in shape) or any(constant_int(s) != 1 for s in steps) or \
            int(np.prod(shape)) > MAX_WINDOW or max(shape) <= 1:  # type: ignore[type-var]
        return False
    kept = set(_kept(op))
    if any(shape[a] != 1 for a in range(len(shape)) if a not in kept):
        return False
    moving = [depends_on(o, ivs) for o in offsets]
    wide = [a for a, n in enumerate(shape) if n != 1]
    if any(moving[a] for a in wide):
        return True
    # a view whose offsets follow every loop index (``x[i]``, ``x[b, i]`` in a nest
    # over (b, i)) is the iteration's own row: the row rules batch it (its reductions
    # stay vector reductions, which a window's element chain cannot express)
    covered = {iv for iv in ivs if any(depends_on(o, {iv}) for o in offsets)}
    return any(moving) and covered != ivs


class _Scalarizer:
    """Emits the window ops element by element: for each element of the window (row
    major), every window op of the body in order, one op each (a reduction: one step of
    its chain).  The batched ops of one element then sit together, so that grouping
    fuses a whole element's work instead of one op across all elements."""

    def __init__(self, block: Block, ivs: set[Value]) -> None:
        self.block, self.ivs = block, ivs
        self.views = {op.result_values[0] for op in block.ops if _is_window(op, ivs)}
        self.elems: dict[Value, np.ndarray] = {}   # window value -> its element values
        self.outer: dict[Value, np.ndarray] = {}   # invariant operands, broadcast
        self.consts: dict[int, Value] = {}
        self.window: list[Operation] = []          # the window ops, body order
        self.stage: dict[Operation, int] = {}      # window op -> its pass (``_stage``)
        self.ready: dict[Value, int] = {}          # value -> the first pass that can read it
        self.pending: dict[Value, Operation] = {}  # scalar ops of reductions (``_note_scalar``)
        self.between: list[Operation] = []         # those a later pass reads
        self.scalars: dict[Value, Value] = {}      # reduction/between result -> its new value
        self.shape: tuple[int, ...] = ()
        self.shapes: dict[Value, tuple[int, ...]] = {}  # window values' (static) shapes
        self.at: Operation | None = None           # new ops go before this one

    def insert(self, op: Operation) -> Value:
        assert self.at is not None
        self.block.insert(self.block.index_of(self.at), op)
        return op.result_values[0]

    def const(self, c: int) -> Value:
        if c not in self.consts:
            first = self.block.ops[0]
            self.block.insert(0, arith.ConstantOp.new(c, index, loc=first.loc))
            self.consts[c] = self.block.ops[0].result_values[0]
        return self.consts[c]

    # ------------------------------------------------------------- classification
    def _computed(self, op: Operation) -> tuple[int, ...]:
        """The shape of window op ``op``'s result from its operands' (not its type: with
        run-time shapes a window's type says ``?x?`` even where its sizes are constants,
        ``batch_ranges``), numpy broadcasting."""
        if isinstance(op, mem.ToTensorOp):
            view = op.operand_values[0].op
            sizes = view.parts()[1]  # type: ignore[attr-defined]
            return tuple(constant_int(sizes[a]) for a in _kept(view))  # type: ignore[misc]
        shapes = [self.shapes.get(v, known_shape(v)) for v in op.operand_values]
        if any(DYN in s for s in shapes):
            assume_sizes(op.operand_values, shapes, self.ivs)
            raise WindowRefuse(f"'{op.name}' on a window and an array of run-time size")
        try:
            return tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise WindowRefuse(f"'{op.name}': operands that do not broadcast") from None

    def classify(self) -> None:
        """The window ops (snapshots of windows and every op reading a window value),
        all of one shape, each in its stage (:meth:`_stage`); raises
        :class:`WindowRefuse` otherwise."""
        derived: set[Value] = set()
        for op in self.block.ops:
            if isinstance(op, mem.ToTensorOp) and op.operand_values[0] in self.views:
                kind = "snapshot"
            elif not any(v in derived for v in op.operand_values):
                if any(v in self.views for v in op.operand_values) and \
                        not isinstance(op, mem.SubviewOp):
                    raise WindowRefuse(f"'{op.name}' on a window view")
                self._note_scalar(op)
                continue
            elif type(op) in _CHAIN:
                kind = "reduce"
            elif type(op).__module__ in (arith.__name__, m.__name__) and not op.region_list \
                    and len(op.result_values) == 1 and \
                    isinstance(op.result_values[0].type, TensorType):
                kind = "elementwise"
            else:
                raise WindowRefuse(f"'{op.name}' on a window value")
            self.window.append(op)
            self.stage[op] = self._stage(op)
            r = op.result_values[0]
            self.ready[r] = self.stage[op] + (kind == "reduce")
            if kind != "reduce":
                derived.add(r)
                shape = self._computed(op)
                self.shapes[r] = shape
                if self.shape and shape != self.shape:
                    raise WindowRefuse("window values of different shapes")
                self.shape = shape
        self._delay()

    def _delay(self) -> None:
        """Each elementwise window op in the last pass that can emit it: the pass of
        its first reader (a promotion cast of the window read only after the weights are
        normalized, ``win * (wts / s)``), so that only values both passes read stay live
        between them (a stencil kernel holds each as a buffer)."""
        for op in reversed(self.window):
            if type(op) in _CHAIN or isinstance(op, mem.ToTensorOp):
                continue
            readers = [self.stage[u] for u, _ in op.result_values[0].uses if u in self.stage]
            self.stage[op] = max(self.stage[op], min(readers, default=self.stage[op]))

    def _note_scalar(self, op: Operation) -> None:
        """A pure scalar op of a reduction of the window (``1 / wts.sum()``): moved
        between the stages if a window op reads it (:meth:`_stage`)."""
        reads = [self.ready[v] for v in op.operand_values if v in self.ready]
        if reads and op.has_trait("pure") and not op.region_list and \
                all(isinstance(r.type, ScalarType) for r in op.result_values):
            for r in op.result_values:
                self.ready[r] = max(reads)
                self.pending[r] = op

    def _stage(self, op: Operation) -> int:
        """The pass over the window elements that emits window op ``op``: the first
        after every reduction it reads is complete (``wts / wts.sum()``: the sum in
        pass 0, the division in pass 1).  The scalar ops between (``1 / s``) are
        taken along, emitted once when their pass starts."""
        todo = [v for v in op.operand_values if v in self.pending]
        while todo:
            scalar = self.pending.pop(todo.pop(), None)
            if scalar is not None and scalar not in self.between:
                self.between.append(scalar)
                todo += [v for v in scalar.operand_values if v in self.pending]
        return max((self.ready.get(v, 0) for v in op.operand_values), default=0)

    def place(self) -> Operation:
        """Where the element-major ops go: after every value they read from outside,
        before every use of a reduction result outside them."""
        ops = self.block.ops
        pos = {op: i for i, op in enumerate(ops)}
        mine = set(self.window) | set(self.between)
        last_def = max((pos[v.op] for op in mine for v in op.operand_values
                        if isinstance(v, OpResult) and v.op in pos and v.op not in mine),
                       default=-1)
        first_use = min((pos[u] for op in mine if type(op) in _CHAIN or op in self.between
                         for r in op.result_values for u, _ in r.uses if u not in mine),
                        default=len(ops))
        if last_def >= first_use or first_use >= len(ops):
            raise WindowRefuse("window reductions used before the window is complete")
        return ops[first_use]

    # ------------------------------------------------------------- emission
    def operand(self, v: Value, op: Operation, idx: tuple[int, ...]) -> Value:
        if v in self.elems:
            return self.elems[v][idx]
        if isinstance(v.type, ScalarType):
            return self.scalars.get(v, v)
        if v not in self.outer:  # an invariant array broadcast against the window
            t = v.type
            shape = known_shape(v)
            if not isinstance(t, TensorType) or depends_on(v, self.ivs) or DYN in shape or \
                    np.broadcast_shapes(shape, self.shape) != self.shape:
                raise WindowRefuse(f"'{op.name}' on a window and an array of its own")
            out = np.empty(shape, dtype=object)
            for at in itertools.product(*(range(n) for n in shape)):
                out[at] = self.insert(tensor.ExtractOp(
                    [v, *(self.const(a) for a in at)], [t.element], loc=op.loc))
            self.outer[v] = np.broadcast_to(out, self.shape)
        return self.outer[v][idx]

    def load(self, op: Operation, idx: tuple[int, ...]) -> Value:
        view = op.operand_values[0].op  # type: ignore[attr-defined]
        offsets = list(view.parts()[0])
        for a, i in zip(_kept(view), idx, strict=True):  # dropped axes stay at the offset
            if i:
                offsets[a] = self.insert(arith.AddOp([offsets[a], self.const(i)], [index],
                                                     loc=op.loc))
        elem = op.result_values[0].type.element  # type: ignore[attr-defined]
        return self.insert(mem.LoadOp([view.source, *offsets], [elem], loc=op.loc))

    def run(self) -> None:
        self.classify()
        if not self.window:
            return
        self.at = self.place()
        for op in self.window:
            if type(op) not in _CHAIN:
                self.elems[op.result_values[0]] = np.empty(self.shape, dtype=object)
        chains = {op: Chain(op, self.insert) for op in self.window if type(op) in _CHAIN}
        # the loads first (their batched forms are snapshots, which end a fused group),
        # then the work, element by element, one pass per stage
        every = list(itertools.product(*(range(n) for n in self.shape)))
        for op in self.window:
            if isinstance(op, mem.ToTensorOp):
                for idx in every:
                    self.elems[op.result_values[0]][idx] = self.load(op, idx)
        for stage in range(max(self.stage.values()) + 1):
            self._emit_between(stage)
            ops = [op for op in self.window if self.stage[op] == stage
                   and not isinstance(op, mem.ToTensorOp)]
            for idx in every:
                for op in ops:
                    self._emit(op, idx, chains)
            for op in ops:
                if op in chains:
                    self.scalars[op.result_values[0]] = chains[op].total()
        for old, new in self.scalars.items():
            old.replace_all_uses_with(new)
        self._erase()

    def _emit(self, op: Operation, idx: tuple[int, ...], chains: dict) -> None:
        """Window op ``op`` at element ``idx``: one step of its chain, or one op."""
        if op in chains:
            chains[op].step(self.elems[op.operand_values[0]][idx])
            return
        t = op.result_values[0].type
        args = [self.operand(v, op, idx) for v in op.operand_values]
        self.elems[op.result_values[0]][idx] = self.insert(type(op)(
            args, [t.element], dict(op.attributes), loc=op.loc))  # type: ignore[attr-defined]

    def _emit_between(self, stage: int) -> None:
        """The scalar ops of completed reductions that pass ``stage`` reads, in body
        order (a copy each, reading the reductions' totals)."""
        order = {op: i for i, op in enumerate(self.block.ops)}
        for op in sorted(self.between, key=order.__getitem__):
            if self.ready[op.result_values[0]] != stage:
                continue
            new = type(op)([self.scalars.get(v, v) for v in op.operand_values],
                           [r.type for r in op.result_values], dict(op.attributes),
                           loc=op.loc)
            self.insert(new)
            self.scalars.update(zip(op.result_values, new.result_values, strict=True))

    def _erase(self) -> None:
        dead = set(self.window) | set(self.between) | \
            {v.op for v in self.views}  # type: ignore[attr-defined]
        for op in dead:
            if any(u not in dead for r in op.result_values for u, _ in r.uses):
                raise WindowRefuse(f"a window value used by another op ('{op.name}')")
        for op in reversed(list(self.block.ops)):
            if op in dead:
                op.erase()


def scalarize_windows(block: Block, ivs: set[Value]) -> None:
    """Rewrite the window slices of ``block`` (a flattened loop body with loop indices
    ``ivs``) into element loads and scalar ops (module docstring); raises
    :class:`WindowRefuse` when a window value has no per-element rule."""
    if any(_is_window(op, ivs) for op in block.ops):
        _Scalarizer(block, ivs).run()


__all__ = ["MAX_WINDOW", "WindowRefuse", "WindowSizes", "scalarize_windows"]
