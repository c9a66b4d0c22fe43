"""The error record: run-time values a failing check reports (see ``pyasc.runtime.abi``).

A kernel whose checks report values (a bounds check names the index and the axis size)
has an error record of ``2 + m`` int64 slots at the end of its result slots::

    [lock, key, v_0, ..., v_{m-1}]

The core, a ``func.call`` callee and code on the calling thread store the values and
return: nothing else runs then.  The iterations of an outlined parallel loop may fail
on several threads at once, and the pool returns the code of the first failing
iteration (``pool.py``); so a failing chunk takes ``lock`` (an exchange spin on this
cold path), keeps its values only if its iteration is below ``key``, and releases it.
The core resets ``lock`` and ``key`` on entry (:func:`init_record`).

Helpers take a :class:`~pyasc.backend.llvm.codegen.FunctionEmitter` (duck-typed here:
``b``, ``new_block``, ``error_record``, ``iteration``) so that ``codegen`` can import
this module without a cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llvmlite import ir

from pyasc.backend.llvm.lltypes import I64, i64
from pyasc.errors import InternalCompilerError

HEADER = 2
"""Slots before the values: the lock word and the key (the failing iteration)."""

_NO_KEY = (1 << 63) - 1


def record_slots(values: int) -> int:
    """The number of result slots of an error record with ``values`` value slots."""
    return HEADER + values if values else 0


def _slot(b: ir.IRBuilder, record: ir.Value, k: int) -> ir.Value:
    return b.gep(record, [i64(k)], inbounds=True, source_etype=I64) if k else record


def init_record(b: ir.IRBuilder, record: ir.Value) -> None:
    """Reset the lock and the key at the start of a call."""
    b.store(i64(0), _slot(b, record, 0), align=8)
    b.store(i64(_NO_KEY), _slot(b, record, 1), align=8)


def record_error(fe: Any, values: Sequence[ir.Value]) -> None:
    """Store ``values`` (int64) in the error record at the builder's position."""
    record = fe.error_record
    if record is None:
        raise InternalCompilerError("a check reports values but the kernel has no error "
                                    "record")
    b = fe.b
    if fe.iteration is None:
        _store_values(b, record, values)
        return
    spin, keep, write, done = (fe.new_block(n) for n in ("err.lock", "err.keep",
                                                          "err.write", "err.unlock"))
    b.branch(spin)
    b.position_at_end(spin)
    old = b.atomic_rmw("xchg", _slot(b, record, 0), i64(1), "acquire")
    b.cbranch(b.icmp_signed("==", old, i64(0)), keep, spin)
    b.position_at_end(keep)
    key = _slot(b, record, 1)
    first = b.icmp_signed("<", fe.iteration, b.load(key, typ=I64, align=8))
    b.cbranch(first, write, done)
    b.position_at_end(write)
    b.store(fe.iteration, key, align=8)
    _store_values(b, record, values)
    b.branch(done)
    b.position_at_end(done)
    b._insert(ir.instructions.StoreAtomicInstr(b.block, i64(0), _slot(b, record, 0),
                                               "release", 8))


def _store_values(b: ir.IRBuilder, record: ir.Value, values: Sequence[ir.Value]) -> None:
    for j, v in enumerate(values):
        b.store(v, _slot(b, record, HEADER + j), align=8)


__all__ = ["HEADER", "init_record", "record_error", "record_slots"]
