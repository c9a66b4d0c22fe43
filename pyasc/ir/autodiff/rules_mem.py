"""Gradient rules of the buffer ops: reads add into gradient buffers, writes take from them.

See ``sweep``'s docstring: every active buffer has a zero-filled gradient buffer of its
shape, and a view of an active buffer maps to the same view of the gradient buffer
(``Sweep.grad_buffer``).  A write moves the adjoint of the overwritten elements to the
written value and zeroes them (what was there before the write gets no gradient).  A
write into an input array is refused before (``driver``): the backward recomputes the
forward, which would write the caller's array a second time.
"""

from __future__ import annotations

from pyasc.ir.autodiff.activity import root
from pyasc.ir.autodiff.registry import vjp_rule
from pyasc.ir.autodiff.sweep import Sweep
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import mem
from pyasc.ir.types import element_type

Douts = list[Value | None]


@vjp_rule(mem.ToTensorOp)
def _to_tensor(sw: Sweep, op: Operation, d: Douts) -> None:
    sw.add_to_buffer(op.source, d[0])


@vjp_rule(mem.LoadOp)
def _load(sw: Sweep, op: Operation, d: Douts) -> None:
    buf = sw.grad_buffer(op.source)
    if buf is None:
        return
    em, idx = sw.em, [sw.v(i) for i in op.indices]
    sw.touched.add(root(op.source))
    old = em.op(mem.LoadOp([buf, *idx], [element_type(buf.type)]))
    em.b.insert(mem.StoreOp([em.add(old, d[0]), buf, *idx]))


def _taken(sw: Sweep, op: Operation, dest: Value) -> Value | None:
    """The adjoint of what ``op`` wrote into ``dest`` (read, then zeroed)."""
    buf = sw.grad_buffer(dest)
    if buf is None:
        return None
    g = sw.em.read(buf)
    sw.em.b.insert(mem.FillOp([sw.em.const(0.0, element_type(buf.type)), buf]))
    return g


@vjp_rule(mem.WriteOp, mem.FillOp)
def _write(sw: Sweep, op: Operation, d: Douts) -> list | None:
    g = _taken(sw, op, op.operand_values[1])
    return None if g is None else [g, None]


@vjp_rule(mem.StoreOp)
def _store(sw: Sweep, op: Operation, d: Douts) -> list | None:
    buf = sw.grad_buffer(op.dest)
    if buf is None:
        return None
    em, idx = sw.em, [sw.v(i) for i in op.indices]
    g = em.op(mem.LoadOp([buf, *idx], [element_type(buf.type)]))
    em.b.insert(mem.StoreOp([em.const(0.0, element_type(buf.type)), buf, *idx]))
    return [g]


@vjp_rule(mem.CopyOp)
def _copy(sw: Sweep, op: Operation, d: Douts) -> None:
    g = _taken(sw, op, op.dest)
    if g is not None:
        sw.add_to_buffer(op.source, g)


@vjp_rule(mem.ContiguousOp)
def _contiguous(sw: Sweep, op: Operation, d: Douts) -> None:
    g = sw.buffer_adjoint(op.result)
    if g is not None:
        sw.add_to_buffer(op.source, g)
