"""Constant tables: tuples and lists of numbers indexed by a run-time value.

``GAUSS3[di][dj]`` with ``GAUSS3`` a module-level (or closure) tuple of tuples and
``di``, ``dj`` loop variables: the table is embedded as a dense constant array, as a
module-level ``np.array`` is, and indexed like one (negative indices wrap, an index out
of range raises ``IndexError`` where bounds checks are on).  Its storage dtype is
numpy's for ``np.array(table)``.

What an item read this way *is* follows Python, not numpy: an item of a tuple of
Python ints is a Python ``int`` (weak under NEP 50: ``K[i] * x`` keeps ``x``'s float32),
of a tuple of ``np.float32`` values an ``np.float32``.  A table whose items are of
different kinds (``(1, 0.5)``: an ``int`` or a ``float`` depending on the index, which
changes the dtype of what is computed with it) or whose rows have different lengths
(``np.array`` cannot make it rectangular) is a compile-time error.

A table, and a row read with a run-time index (``GAUSS3[di]``), is a
:class:`TableRow`: it can be indexed further and has a ``len``; using it as anything
else is an error (Python would treat it as a tuple: ``row * 2`` repeats it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pyasc.errors import ShapeInferenceError, TypeMismatchError
from pyasc.frontend.emit import Emitter
from pyasc.frontend.environment import MAX_EMBEDDED_ELEMENTS
from pyasc.frontend.values import Scalar, Tensor, is_runtime
from pyasc.ir.types import index

_PYTHON_KINDS: dict[type, str] = {bool: "bool", int: "int", float: "float"}
"""The storage dtype of each Python number kind (numpy's ``np.array`` of it)."""

_KIND_DTYPES = {"bool": np.dtype(bool), "int": np.dtype(np.int64),
                "float": np.dtype(np.float64)}


@dataclass(frozen=True)
class TableRow:
    """A row of a constant table read with run-time indices (``indices``, one per
    leading axis of ``table``); its items are ``kind`` (``"int"``, ``"float"``,
    ``"bool"`` or a numpy dtype name).  Rows are not materialized: the item is one
    ``tensor.extract`` of the whole table with every index."""

    table: Tensor
    kind: str
    indices: tuple = ()

    def __len__(self) -> int:
        return int(self.table.type.shape[len(self.indices)])

    @property
    def is_last_axis(self) -> bool:
        """The next index gives an item (not a deeper row)."""
        return len(self.indices) + 1 == self.table.type.rank


def is_table(seq: object) -> bool:
    """A non-empty (nested) tuple or list whose leaves are all compile-time numbers, no
    more of them than a global array embedded as a constant (a larger one is indexed
    as before: by compile-time values only)."""
    return _is_table(seq) and len(_leaves(seq)) <= MAX_EMBEDDED_ELEMENTS


def _is_table(seq: object) -> bool:
    if not isinstance(seq, tuple | list) or not seq:
        return False
    return all(_is_table(x) if isinstance(x, tuple | list) else _kind(x) is not None
               for x in seq)


def _kind(x: object) -> str | None:
    if isinstance(x, np.generic) and x.dtype.kind in "biuf":
        return x.dtype.name
    return _PYTHON_KINDS.get(type(x))


def _leaves(seq: object) -> list[object]:
    if isinstance(seq, tuple | list):
        return [leaf for x in seq for leaf in _leaves(x)]
    return [seq]


def table_row(em: Emitter, seq: tuple | list) -> TableRow:
    """The table ``seq`` as a constant array (a row whose items are the table's rows)."""
    kinds = {_kind(x) for x in _leaves(seq)}
    if len(kinds) != 1:
        raise TypeMismatchError(
            "a table indexed at run time must hold numbers of one kind, this one mixes "
            + " and ".join(sorted(str(k) for k in kinds)),
            hint="write every number the same way (1.0 rather than 1), or make the table "
                 "an np.array")
    kind = kinds.pop()
    assert kind is not None
    try:
        arr = np.array(seq, dtype=_KIND_DTYPES.get(kind, kind))
    except ValueError:
        raise ShapeInferenceError("a table indexed at run time must be rectangular "
                                  "(rows of one length, as np.array needs)",
                                  hint="pad the rows to one length, or index it with "
                                       "compile-time values only") from None
    except OverflowError:
        raise TypeMismatchError("a table indexed at run time holds an int that does not "
                                "fit int64") from None
    return TableRow(em.constant_array(arr), kind)


def table_item(em: Emitter, item: Scalar, kind: str) -> object:
    """An item read from a table of ``kind`` as the Python value it stands for: a
    number of the table's kind (Python numbers are weak scalars)."""
    assert is_runtime(item)
    if kind == "int":
        return em.cast_scalar(item, index)
    if kind in ("float", "bool"):
        return Scalar(item.value, weak=True)
    return item
