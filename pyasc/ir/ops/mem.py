"""``mem``: mutable buffers (memrefs), views of them, and reads/writes.

Function array arguments are memrefs; numpy-level writes (``a[i] = v``, ``a += b``,
``out=``) go through these ops, and ``to_tensor`` snapshots a buffer as a value at that
program point.  Views (``subview``, ``transpose``, ``reshape``) alias their source,
exactly like numpy views.

* ``alloc(dims*)``: a new C-contiguous buffer, uninitialized (``np.empty``).
* ``load(buf, idx*)`` / ``store(value, buf, idx*)``: one element (indices in range).
* ``write(value, buf)``: ``buf[...] = value`` with broadcasting of a tensor or scalar.
* ``copy(src, dst)``: element-wise copy between equally shaped buffers.
* ``contiguous(buf)``: a new C-contiguous copy (``np.ascontiguousarray`` on a view).
* ``fill(value, buf)``: ``buf[...] = scalar``.
* ``dealloc(buf)``: free an ``alloc``'d buffer; ``constant {value}``: a read-only
  buffer holding a dense array.  Both appear only in loop-level IR.
* ``disjoint(a, b)`` / ``same_view(a, b)``: run-time alias tests of two buffers (an
  ``i1``), for stores versioned on them (``lower_group_inplace``); loop-level IR only.
"""

from __future__ import annotations

from pyasc.ir.core import DenseArray, Operation, attr
from pyasc.ir.ops.common import (
    check_axes,
    check_dynamic_dims,
    check_index_operands,
    memref,
    require,
    shaped,
)
from pyasc.ir.ops.tensor import _slice_parts, verify_slice
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType, broadcast_shapes, i1, index


class AllocOp(Operation):
    """A fresh, uninitialized, C-contiguous buffer."""

    name = "mem.alloc"
    operands = ("dims*",)
    results = ("result",)
    traits = frozenset({"allocates"})

    def verify_op(self) -> None:
        t = memref(self.result.type)
        require(t.is_contiguous, "alloc returns a contiguous memref")
        check_dynamic_dims(t, self.dims)


class DimOp(Operation):
    """The run-time size of dimension ``axis`` of a buffer."""

    name = "mem.dim"
    operands = ("source",)
    results = ("result",)
    attrs = {"axis": attr(int)}
    traits = frozenset({"pure"})

    def verify_op(self) -> None:
        check_axes([self.attributes["axis"]], memref(self.source.type).rank)
        require(self.result.type == index, "dim yields index")


class LoadOp(Operation):
    """Read ``buf[indices]``."""

    name = "mem.load"
    operands = ("source", "indices*")
    results = ("result",)
    traits = frozenset({"reads"})

    def verify_op(self) -> None:
        t = memref(self.source.type)
        require(len(self.indices) == t.rank, f"expected {t.rank} indices")
        check_index_operands(self.indices, "indices")
        require(self.result.type == t.element, "load yields the element type")


class StoreOp(Operation):
    """Write ``buf[indices] = value``."""

    name = "mem.store"
    operands = ("value", "dest", "indices*")
    traits = frozenset({"writes"})

    def verify_op(self) -> None:
        t = memref(self.dest.type)
        require(len(self.indices) == t.rank, f"expected {t.rank} indices")
        check_index_operands(self.indices, "indices")
        require(self.value.type == t.element, f"stored {self.value.type} into {t}")


class SubviewOp(Operation):
    """A strided view: ``operands = source, offsets[r], sizes[r], steps[r]``; see
    ``tensor.slice`` for the meaning.  The result aliases the source."""

    name = "mem.subview"
    operands = ("source", "indices*")
    results = ("result",)
    attrs = {"drop": attr(tuple, optional=True)}
    traits = frozenset({"pure", "view"})

    def parts(self):
        return _slice_parts(self, memref(self.source.type).rank)

    def verify_op(self) -> None:
        verify_slice(self, memref(self.source.type), memref(self.result.type))


class TransposeOp(Operation):
    """A permuted view (``x.T`` on a buffer)."""

    name = "mem.transpose"
    operands = ("source",)
    results = ("result",)
    attrs = {"perm": attr(tuple)}
    traits = frozenset({"pure", "view"})

    def verify_op(self) -> None:
        src, t = memref(self.source.type), memref(self.result.type)
        perm = self.attributes["perm"]
        require(sorted(perm) == list(range(src.rank)), f"invalid permutation {perm}")
        require(t.shape == tuple(src.shape[p] for p in perm) and t.element == src.element,
                f"transpose of {src} by {perm} is not {t}")


class ReshapeOp(Operation):
    """A reshaped view of a C-contiguous buffer."""

    name = "mem.reshape"
    operands = ("source", "dims*")
    results = ("result",)
    traits = frozenset({"pure", "view"})

    def verify_op(self) -> None:
        src, t = memref(self.source.type), memref(self.result.type)
        require(src.is_contiguous and t.is_contiguous, "reshape views need contiguous memrefs")
        require(src.element == t.element, "reshape keeps the element type")
        if src.is_static and t.is_static:
            require(src.num_elements() == t.num_elements(), f"cannot reshape {src} into {t}")
        check_dynamic_dims(t, self.dims)


class ToTensorOp(Operation):
    """Snapshot the buffer's current contents as a tensor value."""

    name = "mem.to_tensor"
    operands = ("source",)
    results = ("result",)
    traits = frozenset({"reads"})

    def verify_op(self) -> None:
        src = memref(self.source.type)
        require(self.result.type == src.tensor_type(), f"expected {src.tensor_type()}")


class WriteOp(Operation):
    """``dest[...] = value`` where ``value`` (tensor or scalar) broadcasts to ``dest``."""

    name = "mem.write"
    operands = ("value", "dest")
    traits = frozenset({"writes"})

    def verify_op(self) -> None:
        dst = memref(self.dest.type)
        v = self.value.type
        require(isinstance(v, ScalarType | TensorType), f"written value must be a value, got {v}")
        vs = v.shape if isinstance(v, TensorType) else ()
        elem = v.element if isinstance(v, TensorType) else v
        require(elem == dst.element, f"cannot write {elem} values into {dst}")
        require(len(vs) <= dst.rank and broadcast_shapes(vs, dst.shape) is not None,
                f"cannot broadcast {v} into {dst}")
        out = broadcast_shapes(vs, dst.shape)
        require(out is not None and all(a == b or DYN in (a, b)
                                        for a, b in zip(out, dst.shape, strict=True)),
                f"cannot broadcast {v} into {dst}")


class CopyOp(Operation):
    """Copy ``source`` into ``dest`` (same shape and element type)."""

    name = "mem.copy"
    operands = ("source", "dest")
    traits = frozenset({"reads", "writes"})

    def verify_op(self) -> None:
        s, d = memref(self.source.type), memref(self.dest.type)
        require(s.element == d.element and s.rank == d.rank, f"cannot copy {s} into {d}")
        for a, b in zip(s.shape, d.shape, strict=True):
            require(DYN in (a, b) or a == b, f"cannot copy {s} into {d}")


class ContiguousOp(Operation):
    """A new C-contiguous copy of a buffer (``np.ascontiguousarray`` of a view)."""

    name = "mem.contiguous"
    operands = ("source",)
    results = ("result",)
    traits = frozenset({"reads", "allocates"})

    def verify_op(self) -> None:
        s, t = memref(self.source.type), memref(self.result.type)
        require(t.is_contiguous and t.shape == s.shape and t.element == s.element,
                f"contiguous copy of {s} must be {MemRefType(s.shape, s.element)}")


class FillOp(Operation):
    """``dest[...] = value`` for a scalar ``value``."""

    name = "mem.fill"
    operands = ("value", "dest")
    traits = frozenset({"writes"})

    def verify_op(self) -> None:
        d = shaped(self.dest.type, MemRefType)
        require(self.value.type == d.element, f"cannot fill {d} with {self.value.type}")


class DeallocOp(Operation):
    """Free a buffer made by ``mem.alloc`` (loop-level IR only; inserted by
    ``lower-to-loops``).  The operand is always the allocation itself, never a view."""

    name = "mem.dealloc"
    operands = ("buffer",)
    traits = frozenset({"writes", "frees"})

    def verify_op(self) -> None:
        require(memref(self.buffer.type).is_contiguous, "dealloc takes a contiguous buffer")


class ConstantOp(Operation):
    """A read-only C-contiguous buffer holding a constant array (a global in compiled
    code); ``lower-to-loops`` turns dense ``arith.constant`` tensors into it."""

    name = "mem.constant"
    results = ("result",)
    attrs = {"value": attr(DenseArray)}
    traits = frozenset({"pure"})

    def verify_op(self) -> None:
        t = memref(self.result.type)
        value = self.attributes["value"]
        require(t.is_contiguous and t.is_static, f"constant buffer must be static and "
                f"contiguous, got {t}")
        require(value.type == t.tensor_type(),
                f"dense value of type {value.type} does not match {t}")


class _AliasTest(Operation):
    """A test on the descriptors (address, sizes, strides) of two buffers; no element
    is read, so the op is pure."""

    operands = ("lhs", "rhs")
    results = ("result",)
    traits = frozenset({"pure"})

    def verify_op(self) -> None:
        memref(self.lhs.type)
        memref(self.rhs.type)
        require(self.result.type == i1, f"{self.name} yields i1")


class DisjointOp(_AliasTest):
    """True when no byte of an element of ``lhs`` is a byte of an element of ``rhs``,
    judged by address ranges: from the lowest to one past the highest byte any element
    of each view spans (negative strides included; an empty view spans nothing).  Two
    interleaved views (``x[::2]``, ``x[1::2]``) are reported as overlapping."""

    name = "mem.disjoint"


class SameViewOp(_AliasTest):
    """True when ``lhs`` and ``rhs`` address the same elements in the same order: same
    rank, sizes and element size, element ``[0, ..., 0]`` at the same address, and equal
    byte strides on every axis longer than one."""

    name = "mem.same_view"
