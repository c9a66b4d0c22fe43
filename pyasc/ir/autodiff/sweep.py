"""One reverse sweep over a block: forward values, adjoints and gradient buffers.

The backward program first recomputes the forward (the source ops cloned, ``fwd``
maps each source value to its clone), then visits the source ops in reverse order:
an op with an adjoint on one of its results has its rule run (``registry.RULES``) and
the operands' adjoints accumulate (``adj``).  Buffers are handled by *gradient
buffers*: each active buffer (a differentiated input array, or a local array an
active value was written into) gets a zero-filled buffer of its shape; a read of the
buffer (or of a view of it) adds its adjoint there, a write takes the adjoint of the
written value from there and zeroes it (the old contents are overwritten).

Whole reads of a buffer (``mem.to_tensor(%x)``, also through ``mem.reshape`` views:
the common case) add up as tensors instead (``pending``), flushed into the gradient
buffer only when a partial access of the same buffer needs it there, so a plain
function's backward never touches a buffer.  An ``if`` gets a nested sweep per branch
(``child``; the pending sums are flushed before it).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.autodiff.activity import can_be_active, root
from pyasc.ir.autodiff.emit import GradEmitter
from pyasc.ir.autodiff.registry import RULES, no_rule
from pyasc.ir.builder import Builder
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import mem
from pyasc.ir.ops.autodiff import CustomVjpOp
from pyasc.ir.types import DYN, MemRefType

ALLOCATING = (mem.AllocOp, mem.ContiguousOp)
"""Ops whose result is a fresh buffer (a root that may get a gradient buffer)."""


class Sweep:
    """The state of the reverse sweep of one block (see the module docstring)."""

    def __init__(self, b: Builder, fwd: dict[Value, Value], active: set[Value],
                 gbufs: dict[Value, Value], pending: dict[Value, Value] | None) -> None:
        self.em = GradEmitter(b)
        self.fwd = fwd
        self.active = active
        self.gbufs = gbufs
        self.pending = pending  # root buffer -> summed adjoint of its whole reads
        self.adj: dict[Value, Value] = {}
        self.touched: set[Value] = set()  # gradient buffers something was added to

    def v(self, x: Value) -> Value:
        """The backward's value of source value ``x``."""
        return self.fwd.get(x, x)

    def child(self, b: Builder) -> Sweep:
        """A sweep of a nested block (an ``if`` branch) built at ``b``."""
        self.flush_all()  # the child adds into the buffers themselves
        sub = Sweep(b, dict(self.fwd), self.active, self.gbufs, None)
        sub.touched = self.touched
        return sub

    # -- forward
    def clone_forward(self, ops: Sequence[Operation]) -> None:
        """Recompute the forward: clone ``ops`` (not the terminator) at the builder."""
        for op in ops:
            if isinstance(op, CustomVjpOp):  # its forward region, inlined
                self.clone_forward(op.forward.blocks[0].ops)
                y = op.forward.blocks[0].terminator.operand_values[0]
                self.fwd[op.result] = self.v(y)
            elif not op.has_trait("terminator"):
                self.em.b.insert(op.clone(self.fwd))

    def prepare_buffers(self, ops: Sequence[Operation]) -> None:
        """A zero-filled gradient buffer for each active buffer ``ops`` allocate."""
        for op in ops:
            if isinstance(op, ALLOCATING) and op.result in self.active:
                self.new_buffer(op.result)

    def new_buffer(self, m: Value) -> None:
        self.gbufs[m] = self.em.buffer(m.type, like=self.v(m))

    # -- adjoints
    def accumulate(self, x: Value, g: Value) -> None:
        """``adj[x] += g`` (``g`` summed over the axes it was broadcast along)."""
        if x not in self.active or not can_be_active(x):
            return
        g = self.em.fit(g, self.v(x))
        self.adj[x] = self.em.accumulate(self.adj.get(x), g)

    def grad_buffer(self, m: Value) -> Value | None:
        """The gradient buffer (or the view of it) mirroring buffer/view ``m``, with
        the pending whole-read adjoints of its buffer added in first."""
        if m in self.gbufs:
            self.flush(m)
            return self.gbufs[m]
        if m not in self.active or not isinstance(m, OpResult) or \
                not m.op.has_trait("view"):
            return None
        src = self.grad_buffer(m.op.operand_values[0])
        if src is None:
            return None
        op = m.op
        rest = [self.v(o) for o in op.operand_values[1:]]
        t = m.type
        assert isinstance(t, MemRefType)
        if src.type != self.v(op.operand_values[0]).type:  # contiguous mirror of a strided
            t = MemRefType(t.shape, t.element, (DYN,) * t.rank)
        return self.em.op(type(op)([src, *rest], [t], dict(op.attributes)))

    def add_to_buffer(self, m: Value, g: Value) -> None:
        """Add ``g`` (an adjoint read from buffer ``m``) to ``m``'s gradient buffer; a
        whole read adds up as a pending tensor."""
        r = _whole(m)
        if self.pending is not None and r in self.gbufs:
            g = self.em.reshape(self.em.fit(g, self.v(m)), r.type.shape, self.v(r))
            self.pending[r] = self.em.accumulate(self.pending.get(r), g)
            return
        buf = self.grad_buffer(m)
        if buf is not None:
            self.touched.add(root(m))
            self.em.add_into(buf, g)

    def flush(self, r: Value) -> None:
        """Move the pending adjoint of buffer ``r`` into its gradient buffer."""
        g = self.pending.pop(r, None) if self.pending is not None else None
        if g is not None:
            self.touched.add(r)
            self.em.add_into(self.gbufs[r], g)

    def flush_all(self) -> None:
        for r in list(self.pending or ()):
            self.flush(r)

    def buffer_adjoint(self, r: Value) -> Value | None:
        """The whole adjoint of root buffer ``r`` (pending plus buffered), or ``None``."""
        g = self.pending.pop(r, None) if self.pending is not None else None
        if r in self.touched:
            g = self.em.accumulate(g, self.em.read(self.gbufs[r]))
        return g

    # -- the sweep
    def run(self, ops: Sequence[Operation]) -> None:
        """Visit ``ops`` in reverse, running the rule of each op an adjoint reached."""
        for op in reversed(ops):
            if op.has_trait("terminator") or not self._reached(op):
                continue
            rule = RULES.get(type(op))
            if rule is None:
                raise no_rule(op)
            douts = [self.adj.get(r) for r in op.result_values]
            with self.em.b.location(op.loc):
                grads = rule(self, op, douts)
            for operand, g in zip(op.operand_values, grads or (), strict=False):
                if g is not None:
                    self.accumulate(operand, g)

    def _reached(self, op: Operation) -> bool:
        if any(r in self.adj for r in op.result_values):
            return True
        if op.region_list:  # a loop writing active buffers: its rule (or its refusal)
            return any(v in self.active for inner in op.walk()
                       for v in (*inner.operand_values, *inner.result_values))
        if op.has_trait("writes") and len(op.operand_values) > 1:
            return root(op.operand_values[1]) in self.active
        return isinstance(op, mem.ContiguousOp) and op.result in self.active


def _whole(m: Value) -> Value | None:
    """The root buffer ``m`` is all of (itself, or a reshape of a contiguous buffer)."""
    while isinstance(m, OpResult) and isinstance(m.op, mem.ReshapeOp):
        m = m.op.source
    return m if isinstance(m.type, MemRefType) and m.type.is_contiguous else None
