"""Joining the values of names where control-flow paths meet.

A :class:`Plan` says, for each name, what it holds after an ``if``, a loop iteration or
a fusion scope: the same value as on every incoming path (``Same``: compile-time values
and values defined before), or a tree of *slots*, one per run-time leaf, that the IR op
yields (``loop.if``/``loop.for``/``loop.while`` results, block arguments).

Joining follows numpy's promotion for dtypes (a weak Python int meeting a float32
scalar gives float32), makes static dims that differ dynamic, broadcasts a scalar to
the array it meets (``acc = 0`` then ``acc = acc + row``).  A buffer (a parameter, a
view, an array written to) meeting another array stays a buffer where a write or the
caller could tell a copy from it (``KEEP``/``MUST``: a memref of relaxed dims and
strides, the other paths' arrays stored into buffers of their own), else it is read as
a tensor (a value).  Paths on which a name is
missing (``MISSING``) get a dummy of the slot's type when the caller allows it (the
path jumped away, or the name is a hidden return slot).

The hidden return slot (``$rv``) is read only where the returned flag is set, so its
value on the paths that did not return is never observed.  When every path that
returned returned one value that a name held before the ``if`` or loop (``return x`` of
a parameter, of a view bound before a loop, of a result buffer: values in scope there
are defined in enclosing blocks), the slot is that value (``Same``): nothing is
yielded and no dummy is made, so a parameter returned early and again later is still
returned as the caller's own object, with no placeholder allocation per call.  (Other
returns of arrays join the placeholder; a result that may then be a parameter, a view
of one or a buffer is told apart at run time: ``backend/llvm/plan.py``.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence, Set
from dataclasses import dataclass, field

import numpy as np

from pyasc.errors import ShapeInferenceError, TypeMismatchError
from pyasc.frontend.emit import Emitter
from pyasc.frontend.promotion import element_of, is_weak, join_types
from pyasc.frontend.values import (
    Buffer,
    Scalar,
    Tensor,
    Undefined,
    is_number,
    kind_name,
)
from pyasc.ir.core import Value
from pyasc.ir.ops import mem, tensor
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType, Type, index

MISSING = Undefined("is not defined on every path")

KEEP, MUST = "keep", "must"
"""What a join does with a buffer (a parameter, a view, an array written to) that a
name holds on some path, when another path holds another array: ``KEEP`` it (the name
joins as a memref, the other paths' arrays get buffers of their own), so writes through
the name or into the buffer's base are seen as in numpy (``r = t[1:] if c else
np.zeros(7)`` is a view of ``t`` when ``c``); ``MUST``: keep it or raise E50001 (a name
written through, or aliasing an array written to); ``""``: join as a value (a snapshot),
which nothing can tell from the view when no write can reach it (``m = x[0]`` then ``m =
np.maximum(m, x[i])`` in a loop stays a value: no buffer per iteration)."""


@dataclass(frozen=True)
class Same:
    """The name holds this value on every path."""

    value: object


@dataclass(frozen=True)
class Slot:
    """One yielded run-time leaf."""

    type: Type
    weak: bool = False
    lost_view: bool = False  # an array value where some path held a buffer (_leaf_slot)

    @property
    def kind(self) -> str:
        return ("buffer" if isinstance(self.type, MemRefType) else
                "tensor" if isinstance(self.type, TensorType) else "scalar")


@dataclass(frozen=True)
class TupleShape:
    """A tuple (or list) whose items are joined one by one."""

    items: tuple[object, ...]
    is_list: bool = False


@dataclass
class Plan:
    """The joined form of a set of names."""

    shapes: dict[str, object] = field(default_factory=dict)

    def slots(self) -> list[Slot]:
        return [s for shape in self.shapes.values() for s in _slots(shape)]

    def types(self) -> list[Type]:
        return [s.type for s in self.slots()]

    def signature(self) -> tuple:
        return tuple((n, tuple(_slots(s))) for n, s in self.shapes.items()
                     if not isinstance(s, Same))


def _slots(shape: object) -> Iterator[Slot]:
    if isinstance(shape, Slot):
        yield shape
    elif isinstance(shape, TupleShape):
        for item in shape.items:
            yield from _slots(item)


def identical(a: object, b: object) -> bool:
    """Whether two frontend values are the same value (no join needed)."""
    if a is b:
        return True
    if isinstance(a, Scalar | Tensor | Buffer):
        return type(a) is type(b) and a.value is b.value and \
            getattr(a, "weak", None) == getattr(b, "weak", None)
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and \
            all(identical(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def join(name: str, values: Sequence[object], allow_missing: bool,
         before: Set[Value] = frozenset(), view: str = "") -> object:
    """The join of one name's values over several paths (a ``Same``, slot tree or
    ``MISSING`` when the name cannot be defined after the join); ``before``: the IR
    values of the scope before the joining op (see the module docstring); ``view``:
    what becomes of a buffer some path holds (``KEEP``, ``MUST`` or ``""``)."""
    present = [v for v in values if v is not MISSING and not isinstance(v, Undefined)]
    if len(present) < len(values) and not allow_missing or not present:
        return MISSING
    # A run-time value seen on one path only may be defined on that path: yield it
    # (unless no path can observe the others: see the module docstring).
    if all(identical(present[0], v) for v in present[1:]) and (
            len(present) == len(values) or not has_runtime(present[0])
            or name.startswith("$rv") and runtime_values(present[0]) <= before):
        return Same(present[0])
    if all(isinstance(v, tuple | list) for v in present):
        return _join_sequences(name, values, allow_missing, before, view)
    if any(callable(getattr(v, "source_info", None)) for v in present):  # callees
        raise TypeMismatchError(f"{_display(name)} different functions on different "
                                "paths (a function chosen at run time)",
                                hint="call each function inside its branch, or choose it "
                                     "with a condition known at compile time")
    if not all(is_number(v) or isinstance(v, Scalar | Tensor | Buffer | np.generic)
               for v in present):
        raise TypeMismatchError(
            f"{_display(name)} different kinds of values on different paths: "
            + ", ".join(sorted({kind_name(v) for v in present})),
            hint="return the same structure on every path" if name.startswith("$rv")
            else "give the variable the same kind of value on every path")
    slot = _leaf_slot(name, present, len(present) < len(values), bool(view))
    if slot.lost_view and view == MUST:
        raise TypeMismatchError(
            f"{_display(name)} a view of an array on one path and an array of another "
            f"dtype on another ({_dtypes(present)}): it cannot stay a view, so writes "
            "through it or into the array it views would be lost",
            hint="give the array the view's dtype on every path "
                 "(np.zeros(n, dtype=x.dtype)), or copy the view (.copy())")
    return slot


def _dtypes(values: list[object]) -> str:
    return ", ".join(sorted({element_of(v).to_numpy().name for v in values}))


def _display(name: str) -> str:
    """How error messages name a joined variable (hidden names read as what they are)."""
    if name.startswith("$rv"):
        return "the function returns" + name[3:]
    if name.startswith("$"):
        return "internal variable " + name
    return f"'{name}' holds"


def runtime_values(v: object) -> set[Value]:
    """The IR values of the run-time leaves of ``v``."""
    if isinstance(v, tuple | list):
        return set().union(*(runtime_values(x) for x in v))
    return {v.value} if isinstance(v, Scalar | Tensor | Buffer) else set()


def has_runtime(v: object) -> bool:
    """Whether ``v`` is or contains a run-time value."""
    if isinstance(v, tuple | list):
        return any(has_runtime(x) for x in v)
    return isinstance(v, Scalar | Tensor | Buffer)


def _join_sequences(name: str, values: Sequence[object], allow_missing: bool,
                    before: Set[Value], view: str) -> object:
    present = [v for v in values if isinstance(v, tuple | list)]
    if len({len(v) for v in present}) != 1 or len({type(v) for v in present}) != 1:
        raise TypeMismatchError(f"{_display(name)} tuples of different lengths on "
                                "different paths")
    items = tuple(join(f"{name}[{i}]", [v[i] if isinstance(v, tuple | list) else MISSING
                                        for v in values], allow_missing, before,
                       view)
                  for i in range(len(present[0])))
    if any(item is MISSING for item in items):
        return MISSING
    return TupleShape(items, isinstance(present[0], list))


def _leaf_slot(name: str, present: list[object], missing: bool, keep: bool) -> Slot:
    arrays = [v for v in present if isinstance(v, Tensor | Buffer)]
    if not arrays:
        elem, weak = element_of(present[0]), is_weak(present[0])
        for v in present[1:]:
            elem, weak = join_types((elem, weak), (element_of(v), is_weak(v)))
        return Slot(elem, weak)
    if len(arrays) == len(present) and all(isinstance(v, Buffer) for v in arrays) and \
            len({v.type for v in arrays}) == 1:
        t = arrays[0].type
        if missing and not t.is_contiguous:  # a placeholder is needed (see dummy)
            t = MemRefType(t.shape, t.element, (DYN,) * t.rank)
        return Slot(t)
    elem: ScalarType = arrays[0].type.element
    for v in present:
        elem = join_types((elem, False), (element_of(v), is_weak(v) and
                                          not isinstance(v, Tensor | Buffer)))[0]
    ranks = {v.type.rank for v in arrays}
    if len(ranks) != 1:
        raise ShapeInferenceError(f"{_display(name)} arrays of different ranks on different "
                                  "paths", hint="keep the number of dimensions fixed")
    shapes = [v.type.shape for v in arrays]
    shape = tuple(s[0] if len(set(s)) == 1 else DYN for s in zip(*shapes, strict=True))
    if len(arrays) < len(present) and DYN in shape:
        raise ShapeInferenceError(f"{_display(name)} a scalar on one path and an array of "
                                  "run-time shape on another")
    buffers = [v for v in arrays if isinstance(v, Buffer)]
    if keep and buffers and all(b.type.element == elem for b in buffers):
        return Slot(_buffer_type(buffers, shape, elem))
    # a copy of a view or a parameter loses what numpy has; of a fresh allocation (an
    # array a callee wrote into: calls.make_writable), nothing
    lost = any(not isinstance(getattr(b.value, "op", None), mem.AllocOp) for b in buffers)
    return Slot(TensorType(shape, elem), lost_view=lost)


def _buffer_type(buffers: list[Buffer], shape: tuple[int, ...], elem: ScalarType
                 ) -> MemRefType:
    """The memref type of a join where some path holds a buffer (a parameter, a view,
    an array written to): the joined name stays that buffer, so writes through it or
    into its base are seen as in numpy (``r = t[1:] if c else np.zeros(7)`` is a view
    of ``t`` when ``c``); the other paths' arrays get buffers of their own.  Strides
    are kept only when every buffer is C-contiguous (fresh buffers are)."""
    if all(b.type.is_contiguous for b in buffers):
        return MemRefType(shape, elem)
    return MemRefType(shape, elem, (DYN,) * len(shape))


# ---------------------------------------------------------------------------- materialize


def materialize(em: Emitter, shape: object, value: object) -> list[Value]:
    """The IR values a path yields for one name (casts emitted at the insertion point)."""
    if isinstance(shape, Same):
        return []
    if isinstance(shape, TupleShape):
        items = value if isinstance(value, tuple | list) else [MISSING] * len(shape.items)
        return [v for s, x in zip(shape.items, items, strict=True)
                for v in materialize(em, s, x)]
    assert isinstance(shape, Slot)
    if value is MISSING or isinstance(value, Undefined):
        return [dummy(em, shape.type)]
    return [_convert(em, shape, value)]


def _convert(em: Emitter, slot: Slot, value: object) -> Value:
    t = slot.type
    if isinstance(t, MemRefType):
        return _as_buffer(em, value, t)
    if isinstance(t, ScalarType):
        return em.scalar(value, t).value
    assert isinstance(t, TensorType)
    v = em.cast(em.value(value), t.element)
    if isinstance(v, Scalar):
        return em.fill(v, t.shape).value
    if v.type == t:
        return v.value
    # Static dims that differ between paths become dynamic: a same-shape reshape.
    dyn = [em.scalar(d, index).value if isinstance(d, int) else d.value
           for d, s in zip(em.dims(v), t.shape, strict=True) if s == DYN]
    return em.result(tensor.ReshapeOp([v.value, *dyn], [t]))


def _as_buffer(em: Emitter, value: object, t: MemRefType) -> Value:
    """``value`` as a memref of type ``t``: a buffer as itself (a view of it when the
    type differs: `?` strides or dims), an array or scalar in a new buffer."""
    if not isinstance(value, Buffer):
        v = em.cast(em.value(value), t.element)
        if isinstance(v, Scalar):
            buf = em.alloc(t.shape, t.element)  # static: see _leaf_slot
            em.write(v, buf)
        else:
            buf = em.store_new(v)
        value = buf
    if value.type == t:
        return value.value
    if t.is_contiguous and value.type.is_contiguous:  # only dims differ
        dims = [em.const(d, index) if isinstance(d, int) else d
                for d, s in zip(em.dims(value), t.shape, strict=True) if s == DYN]
        return em.result(mem.ReshapeOp([value.value, *[d.value for d in dims]], [t]))
    return _view_as(em, value.value, em.dims(value), t)


def dummy(em: Emitter, t: Type) -> Value:
    """A placeholder of type ``t`` for a path where the value is never used."""
    if isinstance(t, ScalarType):
        return em.const(0, t).value
    shape = t.shape  # type: ignore[attr-defined]
    dims = [0 if d == DYN else d for d in shape]
    sizes = [d if s != DYN else em.const(0, index) for d, s in zip(dims, shape, strict=True)]
    if isinstance(t, TensorType):
        return em.fill(em.const(0, t.element), sizes).value
    assert isinstance(t, MemRefType)
    buf = em.alloc(sizes, t.element).value
    # a strided view (say `y = x[::2]` after an early return): a view of the fresh
    # buffer; its type has only `?` strides (see _leaf_slot), which any view satisfies
    return buf if t.is_contiguous else _view_as(em, buf, sizes, t)


def _view_as(em: Emitter, buf: Value, dims: Sequence[object], t: MemRefType) -> Value:
    """All of ``buf`` as a ``mem.subview`` of type ``t`` (same shape, other strides)."""
    zero, one = em.const(0, index).value, em.const(1, index).value
    sizes = [em.const(d, index).value if isinstance(d, int) else d.value  # type: ignore
             for d in dims]
    return em.result(mem.SubviewOp([buf, *[zero] * t.rank, *sizes, *[one] * t.rank], [t]))


# ---------------------------------------------------------------------------- rebuild


def rebuild(shape: object, values: Iterator[Value]) -> object:
    """The frontend value of a name after the join, from the op's results."""
    if isinstance(shape, Same):
        return shape.value
    if isinstance(shape, TupleShape):
        items = [rebuild(s, values) for s in shape.items]
        return items if shape.is_list else tuple(items)
    assert isinstance(shape, Slot)
    v = next(values)
    if shape.kind == "scalar":
        return Scalar(v, weak=shape.weak)
    if shape.kind == "buffer":
        return Buffer(v, static_dims_or_none(v.type))
    return Tensor(v, static_dims_or_none(v.type), copied_view=shape.lost_view)


def static_dims_or_none(t: Type) -> tuple[int, ...] | None:
    """The static shape of a shaped type, or None if it has ``?`` dims."""
    shape = t.shape  # type: ignore[attr-defined]
    return tuple(shape) if DYN not in shape else None


def make_plan(names: Sequence[str], paths: Sequence[dict[str, object]],
              allow_missing: Callable[[str], bool], before: dict[str, object] | None = None,
              views: Callable[[str], str] = lambda name: "") -> tuple[Plan, set[str]]:
    """Join ``names`` over ``paths``; returns the plan and the names left undefined.
    ``before`` is the scope before the ``if`` or loop (its values are defined there);
    ``views(name)``: what the join does with buffers the name holds (:func:`join`)."""
    plan, undefined = Plan(), set()
    known = runtime_values(list(before.values())) if before else frozenset()
    for name in names:
        shape = join(name, [p.get(name, MISSING) for p in paths], allow_missing(name), known,
                     views(name))
        if shape is MISSING:
            undefined.add(name)
        else:
            plan.shapes[name] = shape
    return plan, undefined

