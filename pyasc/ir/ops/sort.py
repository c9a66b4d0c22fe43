"""``tensor`` ops that walk one axis in order: ``sort``, ``argsort``, ``cumsum``, ``cumprod``.

* ``sort(x) {axis, descending}``: ``x`` sorted along ``axis``; the result has ``x``'s
  type.  The order is that of a *stable* sort (numpy's ``kind="stable"``): elements
  that compare equal keep their relative order (this shows for ``-0.0``/``0.0``).  NaN
  compares greater than every number and is placed last, as numpy does; with
  ``descending = true`` the numbers come largest first and NaN still comes last.
  Booleans order ``False < True``.
* ``argsort(x) {axis, descending}``: the ``index`` positions along ``axis`` that sort
  ``x`` (the same stable order): ``sort(x)`` equals ``take_along_axis(x, argsort(x))``.
* ``cumsum(x) {axis}`` / ``cumprod(x) {axis}``: running sum / product along ``axis`` in
  index order (numpy's ``add.accumulate``: no reassociation); the result has ``x``'s
  type (the frontend casts to numpy's accumulator dtype first).  On ``i1`` they are
  running ``or`` / ``and``.
"""

from __future__ import annotations

from pyasc.ir.core import Location, Operation, Value, attr
from pyasc.ir.ops.common import check_axes, require, tensor
from pyasc.ir.types import TensorType, index

PURE = frozenset({"pure"})


class _AxisOp(Operation):
    """Base: one tensor operand walked along ``axis`` (rank >= 1)."""

    operands = ("source",)
    results = ("result",)

    def verify_op(self) -> None:
        src = tensor(self.source.type)
        require(src.rank >= 1, f"{self.name} needs an array of rank >= 1, got {src}")
        check_axes([self.attributes["axis"]], src.rank)
        expected = self.result_type(src)
        require(self.result.type == expected, f"expected result {expected}")

    @classmethod
    def result_type(cls, src: TensorType) -> TensorType:
        return src


class SortOp(_AxisOp):
    """Stable sort along ``axis`` (NaN last)."""

    name = "tensor.sort"
    attrs = {"axis": attr(int), "descending": attr(bool, optional=True)}
    traits = PURE

    @classmethod
    def new(cls, source: Value, axis: int, descending: bool = False,
            loc: Location | None = None) -> Operation:
        t = cls.result_type(tensor(source.type))
        attrs: dict[str, object] = {"axis": axis}
        if descending:
            attrs["descending"] = True
        return cls([source], [t], attrs, loc=loc)  # type: ignore[arg-type]


class ArgSortOp(SortOp):
    """Positions along ``axis`` that sort the source stably (``index`` elements)."""

    name = "tensor.argsort"

    @classmethod
    def result_type(cls, src: TensorType) -> TensorType:
        return TensorType(src.shape, index)


class CumSumOp(_AxisOp):
    """Running sum along ``axis``."""

    name = "tensor.cumsum"
    attrs = {"axis": attr(int)}
    traits = PURE

    @classmethod
    def new(cls, source: Value, axis: int, loc: Location | None = None) -> Operation:
        return cls([source], [tensor(source.type)], {"axis": axis}, loc=loc)


class CumProdOp(CumSumOp):
    """Running product along ``axis``."""

    name = "tensor.cumprod"


def sort_attrs(op: Operation) -> tuple[int, bool]:
    """``(axis, descending)`` of a sort or argsort op."""
    return op.attributes["axis"], bool(op.attributes.get("descending", False))

