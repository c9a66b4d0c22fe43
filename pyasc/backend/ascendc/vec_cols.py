"""The ``cols`` schedule: reductions over the leading axes (column reductions).

``x.sum(axis=0)`` of an ``(N, C)`` matrix (or ``axis=(0, 1)`` of ``(N, H, C)``: every
axis but the last) gives one value per column, a ``row`` value.  Each block owns a
range of columns (``colsPerBlock`` wide, a multiple of 32 bytes; the last block's
range is shorter) and streams all rows of that range through UB in tiles of
``tileRows`` rows x ``pitch`` elements (``DataCopyPad`` with a GM row stride).  Inside
a tile, each row is folded into the block's accumulator row with one vector ``Add``/
``Max``/``Min`` of the range's width, the rows in order: every column sums its
elements sequentially from row 0 (float32 accumulation for float16 sums), the order of
numpy's own ``sum(axis=0)`` of a C-contiguous array (docs/ascendc-backend.md) unless
the host split the rows too (``VectorKernel.split_rows``: each block's range of rows in
order, then the partial rows added on the host).

The passes are those of the long-rows schedule (``vec_longrows``) with rows and
columns exchanged: a reduction of a value of level ``L`` is folded in pass ``L + 1``
(the variance's ``x - mean``: pass 2); after each pass the *row* ops it made
computable run once per block on the accumulator rows (mean's divide); a last pass
recomputes the full values the results need from the inputs and writes them (softmax
over axis 0: ``x - max`` and ``exp`` in pass 2 for the sum, then again for the
quotient).  Row inputs (a per-column ``gamma``) are loaded once per block, row results
written once per block.
"""

from __future__ import annotations

from pyasc.backend.ascendc.analysis import FULL, ROW, NotVectorizable
from pyasc.backend.ascendc.tiles import Instr, Ref
from pyasc.backend.ascendc.vec_arith import cast_value
from pyasc.backend.ascendc.vec_longrows import _REDUCE, LongLowering
from pyasc.backend.ascendc.vec_lower import VVal
from pyasc.ir.core import Operation
from pyasc.ir.types import ScalarType, element_type


class ColsLowering(LongLowering):
    """Lowers a ``cols`` group: full values per row tile, row values per block."""

    chunk_classes = (FULL,)
    line_class = ROW
    fold_api_class = "arith"   # Add/Max/Min: half, float, int16, int32

    def streamed_reductions(self) -> set[Operation]:
        return self.info.col_reductions

    def _acc_type(self, op: Operation) -> ScalarType:
        """The accumulator's type; a sum whose result is wider than its operand (an
        integer sum numpy widens) would overflow in the operand's type: refused."""
        acc = super()._acc_type(op)
        t, result = element_type(op.operand_values[0].type), element_type(op.result.type)
        if result != t:
            raise NotVectorizable(f"a {t} column reduction with a {result} result", op.loc)
        return acc

    def _fold(self, op: Operation, acc: VVal) -> None:
        """``acc = acc (+|max|min) tile[r]`` for every row ``r`` of the tile, in order."""
        x = self.get(op.operand_values[0])
        src = x if x.dtype == acc.dtype else cast_value(self, x, acc.dtype)
        assert acc.buf is not None and src.buf is not None
        self.prog.emit(Instr(_REDUCE[type(op)][1], Ref(acc.buf),
                             (Ref(acc.buf), Ref(src.buf, True)), (), "cols", True, op.loc))


__all__ = ["ColsLowering"]
