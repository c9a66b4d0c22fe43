"""Subscripts: reading and writing array elements, views, gathers and masks.

Reading: integers only give an element (``mem.load``/``tensor.extract``); slices give a
view of a buffer (``mem.subview``, aliasing like numpy) or a slice of a value
(``tensor.slice``); ``None`` adds axes (a buffer is then read as a value first); one
integer array gives ``tensor.gather`` (numpy's ``take`` along that axis); a boolean
mask alone gives ``tensor.compress`` with a run-time length; several index arrays,
integers or masks mixed with arrays give ``tensor.gather_nd`` (see ``advanced``).

Writing (``x[...] = v``) needs a buffer: ``mem.store`` for one element, ``mem.write``
into a ``mem.subview`` (with broadcasting) for slices, ``select`` + ``mem.write`` for a
boolean mask and a scalar, and ``mem.scatter`` through index arrays (also a mask with
an array of values; the last of repeated indices wins).  ``x[idx] op= v`` reads,
computes and writes back, as numpy does (a repeated index is updated once).  The value
is cast to the buffer's dtype (numpy's setitem casts unsafely); compile-time Python
ints must fit it, as numpy 2 requires.
"""

from __future__ import annotations

import ast

import numpy as np

from pyasc.errors import (
    IndexOutOfBoundsError,
    ShapeInferenceError,
    TypeMismatchError,
    UnsupportedSyntaxError,
)
from pyasc.frontend.advanced import (
    gather_labels,
    is_array_index,
    load_advanced,
    squeeze_leading,
    store_advanced,
)
from pyasc.frontend.elementwise import broadcast_dims
from pyasc.frontend.lowering import Lowering
from pyasc.frontend.operators import binary, in_place
from pyasc.frontend.slicing import (
    Access,
    index_values,
    is_index_item,
    resolve_basic,
    view_type,
)
from pyasc.frontend.tables import TableRow, is_table, table_item, table_row
from pyasc.frontend.values import Buffer, Scalar, Tensor, kind_name, static_dims
from pyasc.ir.ops import arith, mem, tensor
from pyasc.ir.types import TensorType, i1

_TABLE_HINT = ("a run-time index works into a tuple or list of numbers (a constant "
               "table); loop over a tuple of arrays itself (for a in arrays:), or "
               "np.stack it into one array")


def _items(key: object) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def load_subscript(lw: Lowering, node: ast.Subscript) -> object:
    """``base[key]`` for arrays and compile-time sequences."""
    base = lw.expr(node.value)
    key = lw.expr(node.slice)
    if isinstance(base, TableRow):
        return _table_item(lw, base, key, subscript_name(node))
    if isinstance(base, tuple | list | str):
        if isinstance(key, Scalar) and is_table(base):
            return _table_item(lw, table_row(lw.em, base), key, subscript_name(node))
        return _sequence_item(lw, base, key)
    return load_index(lw, base, _items(key), subscript_name(node))


def subscript_name(node: ast.Subscript) -> str:
    """How the user spelled the indexed array (``a``, ``self.w``), for messages."""
    text = ast.unparse(node.value)
    return text if len(text) <= 40 else text[:37] + "..."


def array_name(base: object, name: str | None) -> str | None:
    """``name``, else the parameter or variable name the array's IR value carries."""
    if name is not None:
        return name
    hint = getattr(getattr(base, "value", None), "name_hint", None)
    return hint if isinstance(hint, str) and hint.isidentifier() else None


def _table_item(lw: Lowering, row: TableRow, key: object, name: str) -> object:
    """``table[i]`` with a run-time ``i`` (see ``tables``): Python's rules, so only an
    integer indexes it (a slice or an array index of a tuple is not Python)."""
    if not isinstance(key, Scalar | int) or isinstance(key, bool) or \
            (isinstance(key, Scalar) and not key.type.is_int):
        raise TypeMismatchError(f"a table ('{name}') is indexed by one integer at a time, "
                                f"not by {kind_name(key)}",
                                hint="index a tuple of tuples as t[i][j]")
    if not row.is_last_axis:
        dims = lw.em.dims(row.table)[len(row.indices):]
        acc = resolve_basic(lw, dims[:1], (key,), name)  # checked here, as Python does
        return TableRow(row.table, row.kind, (*row.indices, acc.offsets[0]))
    item = load_index(lw, row.table, (*row.indices, key), name)
    return table_item(lw.em, item, row.kind)


def _sequence_item(lw: Lowering, seq: tuple | list | str, key: object) -> object:
    what = f"an index into a {type(seq).__name__}"
    if isinstance(key, slice):
        key = slice(*(lw.static(p, f"a slice bound of a {type(seq).__name__}",
                                UnsupportedSyntaxError) for p in
                      (key.start, key.stop, key.step)))
    else:
        key = lw.static(key, what, UnsupportedSyntaxError, _TABLE_HINT)
    try:
        return seq[key]  # type: ignore[index]
    except IndexError:  # Python's IndexError, found at compile time
        raise IndexOutOfBoundsError(f"index {key} is out of range for a "
                                    f"{type(seq).__name__} of length {len(seq)}") from None
    except TypeError as exc:
        raise TypeMismatchError(str(exc)) from None


def load_index(lw: Lowering, base: object, items: tuple, name: str | None = None) -> object:
    """``base[items]`` for an array ``base`` (called ``name`` in bounds messages)."""
    if not isinstance(base, Tensor | Buffer):
        raise TypeMismatchError(f"'{type(base).__name__}' object is not subscriptable"
                                if not isinstance(base, Scalar) else
                                "a scalar is not subscriptable")
    name = array_name(base, name)
    arrays = [i for i, it in enumerate(items) if is_array_index(it)]
    if arrays:
        return _advanced(lw, base, items, arrays, name)
    acc = resolve_basic(lw, lw.em.dims(base), items, name)
    if acc.is_element:
        return _element(lw, base, acc)
    view = _slice(lw, base, acc)
    if acc.newaxes:
        return _insert_axes(lw, lw.em.value(view), acc)
    return view


def _element(lw: Lowering, base: Tensor | Buffer, acc: Access) -> Scalar:
    idx = index_values(lw.em, acc.offsets)
    op_cls = mem.LoadOp if isinstance(base, Buffer) else tensor.ExtractOp
    return Scalar(lw.em.result(op_cls([base.value, *idx], [base.type.element])))


def _slice(lw: Lowering, base: Tensor | Buffer, acc: Access) -> Tensor | Buffer:
    if acc.is_identity:
        return base
    em = lw.em
    operands = [base.value, *index_values(em, acc.offsets), *index_values(em, acc.sizes),
                *index_values(em, acc.steps)]
    attrs = {"drop": tuple(acc.drop)} if acc.drop else {}
    dims = tuple(acc.result_dims())
    if isinstance(base, Buffer):
        t = view_type(base.type, acc)
        return Buffer(em.result(mem.SubviewOp(operands, [t], attrs)), dims)
    t = TensorType(static_dims(dims), base.type.element)
    return Tensor(em.result(tensor.SliceOp(operands, [t], attrs)), dims)


def _insert_axes(lw: Lowering, v: Scalar | Tensor, acc: Access) -> Tensor:
    dims = list(lw.em.dims(v)) if isinstance(v, Tensor) else []
    for pos in acc.newaxes:
        dims.insert(pos, 1)
    if isinstance(v, Scalar):
        return lw.em.fill(v, dims)
    return lw.em.reshape(v, dims)


def _advanced(lw: Lowering, base: Tensor | Buffer, items: tuple,
              arrays: list[int], name: str | None) -> Scalar | Tensor:
    em = lw.em
    if len(arrays) == 1:
        pos = arrays[0]
        idx = em.operand(items[pos])
        if isinstance(idx, Tensor) and idx.type.element == i1 and len(items) == 1:
            return _compress(lw, em.value(base), idx)  # type: ignore[arg-type]
        axis = _gather_axis(items, pos)
        if isinstance(idx, Tensor) and idx.type.element.is_int and axis is not None:
            return _gather(lw, base, items, pos, idx, axis, name)
    return load_advanced(lw, base, items, name, load_index)


def _gather(lw: Lowering, base: Tensor | Buffer, items: tuple, pos: int, idx: Tensor,
            axis: int, name: str | None) -> Tensor:
    """One integer array (with slices and integers): ``tensor.gather``, fusible."""
    em = lw.em
    rest = items[:pos] + (slice(None),) + items[pos + 1:]
    source = em.value(load_index(lw, em.value(base), rest, name))
    if not isinstance(source, Tensor):
        raise TypeMismatchError("invalid gather")
    shape = source.type.shape[:axis] + idx.type.shape + source.type.shape[axis + 1:]
    dims = tuple(em.dims(source))
    out_dims = dims[:axis] + tuple(em.dims(idx)) + dims[axis + 1:]
    t = TensorType(shape, source.type.element)
    op = tensor.GatherOp([source.value, idx.value], [t],
                         gather_labels({"axis": axis}, name, (pos,)))
    return Tensor(em.result(op), out_dims)


def _gather_axis(items: tuple, pos: int) -> int | None:
    """The axis the index array at ``pos`` gathers along once integer indices have
    dropped their axes, or ``None`` when ``tensor.gather`` does not give numpy's
    layout (integers separated from the array by a slice: numpy moves the gathered
    dims to the front) or the index has ``None``/``...``."""
    if any(it is None or it is Ellipsis for it in items):
        return None
    ints = [i for i, it in enumerate(items) if is_index_item(it)]
    run = sorted([*ints, pos])
    adjacent = run == list(range(run[0], run[0] + len(run)))
    axis = pos - sum(1 for i in ints if i < pos)
    return axis if adjacent or axis == 0 else None


def _compress(lw: Lowering, src: Tensor, mask: Tensor) -> Tensor:
    ms, ss = mask.type.shape, src.type.shape
    if len(ms) > len(ss) or any(m != s and -1 not in (m, s) for m, s in zip(ms, ss,
                                                                            strict=False)):
        raise ShapeInferenceError(f"boolean index of shape {ms} does not match the indexed "
                                  f"array of shape {ss}")
    t = TensorType((-1, *ss[len(ms):]), src.type.element)
    return Tensor(lw.em.result(tensor.CompressOp([src.value, mask.value], [t])))


# ---------------------------------------------------------------------------- stores


def store_subscript(lw: Lowering, node: ast.Subscript, value: object) -> None:
    """``base[key] = value``."""
    base = lw.expr(node.value)
    key = lw.expr(node.slice)
    store_index(lw, _writable(base), _items(key), value, subscript_name(node))


def _writable(base: object) -> Buffer:
    if isinstance(base, Buffer):
        return base
    if isinstance(base, Tensor):
        raise TypeMismatchError("cannot assign into this array: it is a value, not a buffer",
                                hint="assign the array to a variable first")
    if isinstance(base, list):  # Python allows it; pyasc's lists are fixed sequences
        raise UnsupportedSyntaxError(
            "assigning to an item of a list",
            hint="use an array (items = np.array([...]); items[k] = v) or build a new list")
    kind = "tuples are immutable, as in Python: build a new tuple" \
        if isinstance(base, tuple) else "only arrays can be assigned into"
    raise TypeMismatchError(f"'{type(base).__name__}' object does not support item "
                            "assignment", hint=kind)


def store_index(lw: Lowering, buf: Buffer, items: tuple, value: object,
                name: str | None = None) -> None:
    """Write ``value`` into ``buf[items]`` (``buf`` is called ``name`` in messages)."""
    name = array_name(buf, name)
    if any(is_array_index(it) for it in items):
        mask = lw.em.operand(items[0]) if len(items) == 1 else None
        v = lw.em.operand(value)
        if isinstance(mask, Tensor) and mask.type.element == i1 and not (
                isinstance(v, Tensor) and v.type.rank):
            _masked_store(lw, buf, mask, v)
        else:
            store_advanced(lw, buf, items, value, name, load_index)
        return
    items = tuple(it for it in items if it is not None)
    acc = resolve_basic(lw, lw.em.dims(buf), items, name)
    if acc.is_element:
        _store_element(lw, buf, acc, value)
        return
    write_value(lw, _slice(lw, buf, acc), value)  # type: ignore[arg-type]


def _store_element(lw: Lowering, buf: Buffer, acc: Access, value: object) -> None:
    elem = buf.type.element
    v = lw.em.operand(value)
    if isinstance(v, Tensor) and v.type.rank == 0:  # a 0-d array is an element (numpy)
        v = Scalar(lw.em.result(tensor.ExtractOp([v.value], [v.type.element])))
    if isinstance(v, Tensor):
        raise ShapeInferenceError("setting an array element with a sequence")
    s = lw.em.element(v, elem)
    lw.em.op(mem.StoreOp([s.value, buf.value, *index_values(lw.em, acc.offsets)]))
    lw.em.wrote()


def write_value(lw: Lowering, dest: Buffer, value: object) -> None:
    """``dest[...] = value`` with broadcasting and an unsafe cast, as numpy's setitem."""
    em = lw.em
    elem = dest.type.element
    v = em.operand(value)
    if isinstance(v, Tensor):
        v = squeeze_leading(lw, v, dest.type.rank)
        dims = em.dims(dest)
        out = broadcast_dims(em, [em.dims(v), dims])
        if len(out) != len(dims) or any(isinstance(a, int) and isinstance(b, int) and a != b
                                        for a, b in zip(out, dims, strict=True)):
            raise ShapeInferenceError(
                f"could not broadcast input array from shape {tuple(v.type.shape)} into "
                f"shape {tuple(dest.type.shape)}")
        em.write(em.cast(v, elem), dest)
    else:
        em.write(em.element(v, elem), dest)


def _masked_store(lw: Lowering, buf: Buffer, mask: Tensor, v: object) -> None:
    """``buf[mask] = scalar``: ``select`` over the whole buffer (vectorizable)."""
    old = lw.em.snapshot(buf)
    lw.em.write(_select_masked(lw, mask, v, old), buf)


def _select_masked(lw: Lowering, mask: Tensor, v: object, old: Tensor) -> Tensor:
    em = lw.em
    ms, ss = mask.type.shape, old.type.shape
    if len(ms) > len(ss) or any(m != s and -1 not in (m, s) for m, s in zip(ms, ss,
                                                                            strict=False)):
        raise ShapeInferenceError(f"boolean index of shape {ms} does not match the indexed "
                                  f"array of shape {ss}")
    if len(ms) < len(ss):
        mask = em.reshape(mask, [*em.dims(mask), *([1] * (len(ss) - len(ms)))])
    elem = old.type.element
    s = em.element(v, elem)
    op = arith.SelectOp.new(mask.value, s.value, old.value)
    return Tensor(em.result(op), old.dims)


def augmented_subscript(lw: Lowering, node: ast.AugAssign, ufunc: str | None) -> None:
    """``x[key] <op>= v``: Python's get-item, in-place op, set-item protocol."""
    target = node.target
    assert isinstance(target, ast.Subscript)
    buf = _writable(lw.expr(target.value))
    items = _items(lw.expr(target.slice))
    name = subscript_name(target)
    if any(is_array_index(it) for it in items):
        mask = lw.em.operand(items[0]) if len(items) == 1 else None
        old = lw.em.snapshot(buf) if _is_mask(mask) else load_index(lw, buf, items, name)
        updated = lw.em.value(binary(lw, node.op, old, lw.expr(node.value)))
        check_same_kind(updated, buf, ufunc)
        cast = lw.em.cast(updated, buf.type.element)  # type: ignore[arg-type]
        if _is_mask(mask):
            lw.em.write(_select_masked(lw, mask, cast, old), buf)  # type: ignore[arg-type]
        else:
            store_index(lw, buf, items, cast, name)
        return
    acc = resolve_basic(lw, lw.em.dims(buf), tuple(it for it in items if it is not None),
                        name)
    if acc.is_element:
        current = _element(lw, buf, acc)
        _store_element(lw, buf, acc, binary(lw, node.op, current, lw.expr(node.value)))
        return
    view = _slice(lw, buf, acc)
    in_place(lw, ufunc, view, lw.expr(node.value))  # type: ignore[arg-type]


def _is_mask(v: object) -> bool:
    return isinstance(v, Tensor) and v.type.element == i1


def check_same_kind(result: object, buf: Buffer, ufunc: str | None) -> None:
    """numpy's in-place operators cast with ``same_kind`` (``int_x[i] += 1.5`` fails)."""
    src = result.type if isinstance(result, Scalar) else result.type.element  # type: ignore
    dst = buf.type.element
    if not np.can_cast(src.to_numpy(), dst.to_numpy(), "same_kind"):
        raise TypeMismatchError(f"cannot cast ufunc '{ufunc}' output from {src.to_numpy()} "
                                f"to {dst.to_numpy()} with casting rule 'same_kind'")
