"""Emitters for the run-time alias tests ``mem.disjoint`` and ``mem.same_view``.

Both read only memref descriptors (``memref.py``: a pointer to element ``[0, ..., 0]``,
sizes and element strides), never elements.  ``disjoint`` compares byte spans: a view
spans from ``data + sum(min(0, (n_k - 1) * s_k)) * size`` up to one past
``data + sum(max(0, (n_k - 1) * s_k)) * size + size - 1`` (negative strides included);
an empty view spans nothing.  The arithmetic cannot wrap: every term is an offset
inside an array that exists.  Static sizes and strides fold, so the test of two
contiguous parameters is two compares of pointers.
"""

from __future__ import annotations

from llvmlite import ir

from pyasc.backend.llvm.codegen import FunctionEmitter
from pyasc.backend.llvm.lltypes import I1, I64, i64
from pyasc.backend.llvm.memref import MemRef, iadd, imul
from pyasc.ir.ops import mem


def _span(b: ir.IRBuilder, m: MemRef) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(first byte, one past the last byte, i1 "empty") of the elements of ``m``."""
    size = m.type.element.itemsize
    lo: ir.Value = i64(0)
    hi: ir.Value = i64(0)
    empty: ir.Value = ir.Constant(I1, 0)
    for n, s in zip(m.shape, m.strides, strict=True):
        extent = imul(b, iadd(b, n, i64(-1)), s)
        if isinstance(extent, ir.Constant):
            lo = iadd(b, lo, i64(min(0, extent.constant)))
            hi = iadd(b, hi, i64(max(0, extent.constant)))
        else:
            neg = b.icmp_signed("<", extent, i64(0))
            lo = iadd(b, lo, b.select(neg, extent, i64(0)))
            hi = iadd(b, hi, b.select(neg, i64(0), extent))
        if not (isinstance(n, ir.Constant) and n.constant > 0):
            empty = b.or_(empty, b.icmp_signed("<=", n, i64(0)))
    base = b.ptrtoint(m.data, I64)
    first = b.add(base, imul(b, lo, i64(size)))
    end = b.add(base, iadd(b, imul(b, hi, i64(size)), i64(size)))
    return first, end, empty


def _emit_disjoint(fe: FunctionEmitter, op: mem.DisjointOp) -> None:
    b = fe.b
    a_first, a_end, a_empty = _span(b, fe.memref(op.lhs))
    b_first, b_end, b_empty = _span(b, fe.memref(op.rhs))
    apart = b.or_(b.icmp_unsigned("<=", a_end, b_first), b.icmp_unsigned("<=", b_end, a_first))
    fe.set(op.result, b.or_(b.or_(a_empty, b_empty), apart))


def _emit_same_view(fe: FunctionEmitter, op: mem.SameViewOp) -> None:
    b = fe.b
    x, y = fe.memref(op.lhs), fe.memref(op.rhs)
    size = x.type.element.itemsize
    if x.type.rank != y.type.rank or size != y.type.element.itemsize:
        fe.set(op.result, ir.Constant(I1, 0))
        return
    same: ir.Value = b.icmp_unsigned("==", b.ptrtoint(x.data, I64), b.ptrtoint(y.data, I64))
    for n, m, s, t in zip(x.shape, y.shape, x.strides, y.strides, strict=True):
        same = b.and_(same, b.icmp_signed("==", n, m))
        # a stride matters only on an axis longer than one
        stride_ok = b.or_(b.icmp_signed("<=", n, i64(1)), b.icmp_signed("==", s, t))
        same = b.and_(same, stride_ok)
    fe.set(op.result, same)


ALIAS_EMITTERS = {
    mem.DisjointOp: _emit_disjoint,
    mem.SameViewOp: _emit_same_view,
}
"""``{op class: emit function}`` for the alias tests."""
