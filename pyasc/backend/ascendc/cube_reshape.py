"""Elementwise work on a reshaped cube result, done in the shape the cube writes.

A cube matmul writes C as ``batch x M x N``; a program often reshapes it before its
epilogue: ``conv2d`` turns each image's ``O x (OH*OW)`` product into ``(N, O, OH, OW)``
and adds an ``(O, 1, 1)`` bias, a linear layer may split its rows back into
``(batch, seq, features)``.  Seen in the reshaped shape, such an operand is neither a
per-row column nor a per-column row of C (a vector kernel has no schedule for it, and a
MIX kernel cannot fuse it); seen in C's shape, it is one: the ``(O, 1, 1)`` bias is the
column ``(1, 1, O, 1)`` of each image's product.

:func:`see_through_reshapes` moves such a reshape *after* the elementwise ops that use
it: every elementwise op whose operand is the reshaped C (or an op already moved) is
rebuilt on C's shape and followed by the reshape back, so its users do not change.  The
other operands are mapped onto C's axes: the two shapes are cut into groups of axes with
equal products (``(6, 11, 13)`` against ``(6, 143)``: ``6 | 6`` and ``11 x 13 | 143``); an
operand takes C's sizes in a group where it is whole and 1s where it is broadcast (one
broadcast only partly inside a group, like a ``(13,)`` row against ``11 x 13``, has no
such image: the op is left as it is).  An operand computed by elementwise ops of its
own shape (the bias's cast to float32) is rebuilt on its mapped inputs, so the work stays
in the epilogue; its inputs are reshaped by the host (a view) and, when the mapped shape
still fits no class of the kernel's analysis (a column repeated over C's batch axes,
``(1, 1, O, 1)`` against ``(N, 1, O, OH*OW)``), broadcast on the host into one that does
(``(N, 1, O, 1)``: N * O elements).

Nothing else changes meaning: the ops compute the same elements in the same C order.
The grouping that follows (``grouping.form_groups``) then sees an epilogue of C itself:
a MIX kernel (``mix_plan``), a Fixpipe ReLU or cast, or, unfused, a vector kernel with a
column operand instead of a scalar kernel.
"""

from __future__ import annotations

from pyasc.backend.ascendc.analysis import classify_type
from pyasc.backend.ascendc.cube_match import CubeMatmulOp
from pyasc.backend.ascendc.grouping import dissolve
from pyasc.ir.core import Block, Operation, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import DYN, ScalarType, TensorType

PASS_NAME = "cube-reshapes"
"""``PYASC_DISABLE_PASSES=cube-reshapes`` leaves the reshapes where they are."""
Groups = list[tuple[range, range]]
"""Axis groups of equal products: (axes of the reshaped shape, axes of C)."""


class NoImage(Exception):
    """An operand with no image in C's shape (a broadcast that splits an axis group)."""


def axis_groups(out: tuple[int, ...], c: tuple[int, ...]) -> Groups | None:
    """The finest cut of two static shapes of one size into groups of consecutive axes
    with equal products (trailing size-1 axes join the last group); None if a shape is
    dynamic, empty or of size 0."""
    if DYN in out or DYN in c or 0 in out or 0 in c or not out or not c:
        return None
    groups: Groups = []
    i = j = 0
    while i < len(out) and j < len(c):
        i0, j0, p, q = i, j, out[i], c[j]
        i, j = i + 1, j + 1
        while p != q:
            if p < q and i < len(out):
                p, i = p * out[i], i + 1
            elif q < p and j < len(c):
                q, j = q * c[j], j + 1
            else:
                return None
        groups.append((range(i0, i), range(j0, j)))
    if any(d != 1 for d in (*out[i:], *c[j:])):
        return None
    o_last, c_last = groups[-1]
    groups[-1] = (range(o_last.start, len(out)), range(c_last.start, len(c)))
    return groups


def image_shape(ext: tuple[int, ...], out: tuple[int, ...], c: tuple[int, ...],
                groups: Groups) -> tuple[int, ...]:
    """The shape in C's axes of an operand of shape ``ext`` (rank of ``out``, broadcast
    into it): C's sizes where it is whole, 1s where it is broadcast."""
    shape = [1] * len(c)
    for o_axes, c_axes in groups:
        dims = [ext[a] for a in o_axes]
        if dims == [out[a] for a in o_axes]:
            for a in c_axes:
                shape[a] = c[a]
        elif any(d != 1 for d in dims):
            raise NoImage
    return tuple(shape)


def _elementwise(op: Operation) -> bool:
    return type(op).__module__ in (arith.__name__, m.__name__) and \
        not isinstance(op, arith.ConstantOp) and not op.region_list and \
        len(op.result_values) == 1 and isinstance(op.result.type, TensorType) and \
        bool(op.operand_values)


class _Sink:
    """One reshape of one cube result moved after its elementwise users."""

    def __init__(self, block: Block, reshape: Operation, c: Value) -> None:
        self.block = block
        self.out: tuple[int, ...] = reshape.result.type.shape  # type: ignore[attr-defined]
        self.c: tuple[int, ...] = c.type.shape  # type: ignore[attr-defined]
        self.groups = axis_groups(self.out, self.c)
        self.mapped: dict[Value, Value] = {reshape.result: c}
        self._anchor = reshape  # new ops go before the op being moved

    def run(self, start: Operation) -> None:
        if self.groups is None:
            return
        for op in list(self.block.ops[self.block.index_of(start) + 1:]):
            if op.parent is self.block and _elementwise(op) and \
                    op.result.type.shape == self.out and \
                    any(v in self.mapped for v in op.operand_values):
                try:
                    self._move(op)
                except NoImage:
                    continue

    def _move(self, op: Operation) -> None:
        self._anchor = op
        operands = [self.mapped[v] if v in self.mapped else self._image(v, op)
                    for v in op.operand_values]
        new = self._rebuilt(op, operands, self.c)
        back = tensor.ReshapeOp([new.result], [op.result.type], loc=op.loc)
        self.block.insert(self.block.index_of(op), back)
        self.mapped[back.result] = new.result
        op.result.replace_all_uses_with(back.result)
        op.erase()

    def _rebuilt(self, op: Operation, operands: list[Value], shape: tuple[int, ...]) -> Operation:
        elem = op.result.type.element  # type: ignore[attr-defined]
        new = type(op)(operands, [TensorType(shape, elem)], dict(op.attributes), loc=op.loc)
        self.block.insert(self.block.index_of(self._anchor), new)
        return new

    def _image(self, v: Value, user: Operation) -> Value:
        """``v`` (an operand of ``user``, broadcast into the reshaped shape) in C's axes."""
        self._anchor = user
        if isinstance(v.type, ScalarType):
            return v
        src = _unbroadcast(v, self.block)
        if src is not v:  # a broadcast's image is its source's (a column, not an array)
            try:
                return self._image(src, user)
            except NoImage:
                pass
        shape = v.type.shape  # type: ignore[attr-defined]
        ext = (1,) * (len(self.out) - len(shape)) + tuple(shape)
        if len(ext) != len(self.out) or DYN in ext:
            raise NoImage
        image = image_shape(ext, self.out, self.c, self.groups)  # type: ignore[arg-type]
        return self._build(v, image, classify_type(TensorType(image, _elem(v)), self.c) is None)

    def _build(self, v: Value, image: tuple[int, ...], widen: bool) -> Value:
        """``v``'s elements in shape ``image``: through reshapes and same-shape
        elementwise ops to their inputs, which the host reshapes (and, with ``widen``,
        broadcasts over C's leading axes into a column or a whole array)."""
        owner = getattr(v, "op", None)
        if isinstance(owner, tensor.ReshapeOp) and owner.parent is self.block:
            return self._build(owner.source, image, widen)
        if owner is not None and owner.parent is self.block and _elementwise(owner) and \
                all(isinstance(o.type, ScalarType) or o.type.shape == v.type.shape  # type: ignore
                    for o in owner.operand_values):
            args = [o if isinstance(o.type, ScalarType) else self._build(o, image, widen)
                    for o in owner.operand_values]
            return self._rebuilt(owner, args, self._widened(image) if widen else image).result
        x = self._host(tensor.ReshapeOp([v], [TensorType(image, _elem(v))], loc=self._anchor.loc))
        if not widen:
            return x
        return self._host(tensor.BroadcastOp([x], [TensorType(self._widened(image), _elem(v))],
                                             loc=self._anchor.loc))

    def _widened(self, image: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(self.c[:-1]) + (image[-1],)

    def _host(self, op: Operation) -> Value:
        self.block.insert(self.block.index_of(self._anchor), op)
        return op.result


def _unbroadcast(v: Value, block: Block) -> Value:
    """The source of a static ``tensor.broadcast`` in ``block`` that ``v`` is, else
    ``v``: a batched loop's ``bias[o]`` is ``(1, O, 1, 1)`` broadcast to the whole
    ``(N, O, OH, OW)``; in C's axes it is a column, which no host broadcast materializes."""
    op = getattr(v, "op", None)
    if isinstance(op, tensor.BroadcastOp) and op.parent is block and \
            len(op.operand_values) == 1:
        return op.operand_values[0]
    return v


def _elem(v: Value) -> ScalarType:
    return v.type.element  # type: ignore[attr-defined]


def _reshaped_inside(group: FusionGroupOp, c: Value) -> bool:
    arg = group.body.blocks[0].args[list(group.inputs).index(c)]
    return any(isinstance(u, tensor.ReshapeOp) for u, _ in arg.uses)


def see_through_reshapes(fn: FuncOp) -> None:
    """Move every static reshape of a cube result in ``fn``'s entry block after the
    elementwise ops that use it (module docstring).  Fusion groups that reshape a cube
    result are dissolved first; ``grouping.form_groups`` forms them again."""
    block = fn.entry
    for cube in [op for op in block.ops if isinstance(op, CubeMatmulOp)]:
        c = cube.result
        for user in {u for u, _ in c.uses}:
            if isinstance(user, FusionGroupOp) and _reshaped_inside(user, c):
                dissolve(user)
        for user in [u for u, _ in c.uses]:
            if isinstance(user, tensor.ReshapeOp) and user.parent is block:
                _Sink(block, user, c).run(user)
    _erase_unused(block)


def _erase_unused(block: Block) -> None:
    """Drop the pure ops the moves left without users."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.ops)):
            if "pure" in op.traits and not op.region_list and op.result_values and \
                    all(not r.uses for r in op.result_values):
                op.erase()
                changed = True


__all__ = ["PASS_NAME", "NoImage", "axis_groups", "image_shape", "see_through_reshapes"]
