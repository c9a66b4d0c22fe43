"""``lower-to-loops`` rule for ``tensor.matmul`` (numpy ``matmul``: 1-D, 2-D, batched).

Operands are read as ``a[batch..., i, k]`` and ``b[batch..., k, j]`` (a 1-D ``a`` has no
``i`` axis, a 1-D ``b`` no ``j`` axis); batch axes broadcast like elementwise operands,
and a ``shape`` check compares the two ``k`` sizes when either is dynamic.

* matrix @ matrix of f32/f64/i32/i64 (static sizes at least one register tile, or
  dynamic): the cache-blocked, register-tiled nest of ``lower_matmul_tiled``;
* other matrix products, i-k-j order: for each (batch, i) the output row is zeroed,
  then for each ``k`` the scalar ``a[i, k]`` is loaded once and ``out[i, j] += a[i, k] * b[k, j]``
  runs over ``j`` — the unit-stride axis of ``b`` and of the fresh output;
* a 1-D ``b`` (matrix-vector, dot) and f16/bf16 operands: each output element is a
  reduction over ``k`` (``reduce_space``: 8 partial sums for floats; f16/bf16 multiply
  and accumulate in f32, as numpy does, and round once).

On ``i1`` the products are ``and`` and the sums ``or``.  In the first two paths each
step ``acc + a * b`` is a fused multiply-add for f32/f64 when the ``matmul_fma`` option
is on (the default) and the host has FMA (``multiply_add``; docs/math-accuracy.md), as
numpy's BLAS computes it; ``matmul_fma=False`` gives a multiply and an add.  An operand
that is a gather of table rows is read through its indices (``lower_matmul_gather``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops import math as mathops
from pyasc.ir.passes import lower_matmul_tiled as tiled
from pyasc.ir.passes.bufferize import Lowerer, LowerFn
from pyasc.ir.passes.loopgen import Broadcast, LoopGen, constant_of
from pyasc.ir.passes.lower_matmul_gather import GatheredRows
from pyasc.ir.passes.lower_reduce import LANES, identity, reduce_space
from pyasc.ir.types import DYN, ScalarType, TensorType, element_type, f32

FMA_ELEMENTS = frozenset({"f32", "f64"})
"""Float types whose matmul steps may be fused multiply-adds (``multiply_add``)."""


Operand = Value | GatheredRows
"""A lowered operand: a buffer, or rows of a table read through an index buffer."""


def _load(gen: LoopGen, v: Operand, idx: list[Value]) -> Value:
    return v.load(gen, idx) if isinstance(v, GatheredRows) else gen.load(v, idx)


class _Operands:
    """Index helpers for the two matmul operands."""

    def __init__(self, gen: LoopGen, ab: tuple[Operand, Operand], ranks: tuple[int, int],
                 nb: int, bc: Broadcast) -> None:
        self.gen, (self.a, self.b), self.nb, self.bc = gen, ab, nb, bc
        self.a_mat, self.b_mat = ranks[0] >= 2, ranks[1] >= 2

    def load_a(self, ivs: Sequence[Value], k: Value) -> Value:
        """``a[batch, i, k]`` for an output position ``ivs`` (batch + [i])."""
        i = [ivs[self.nb]] if self.a_mat else []
        return _load(self.gen, self.a, [*self.bc.index(self.gen, 0, ivs[:self.nb]), *i, k])

    def row_a(self, bidx: list[Value], i: Value) -> Callable[[Value], Value]:
        """The loader of ``a[batch, i, k]`` for each ``k`` (a matrix ``a``)."""
        if isinstance(self.a, GatheredRows):
            return self.a.row(self.gen, i)
        return lambda k: self.load_a([*bidx, i], k)

    def load_b(self, ivs: Sequence[Value], k: Value, j: Value | None) -> Value:
        js = [j] if j is not None else []
        return _load(self.gen, self.b, [*self.bc.index(self.gen, 1, ivs[:self.nb]), k, *js])


def _operand(cx: Lowerer, old: Value) -> tuple[Operand, list[Value]]:
    """The lowered operand and its sizes."""
    deferred = cx.deferred.get(old)
    if isinstance(deferred, GatheredRows):
        return deferred, deferred.dims(cx.gen)
    new = cx.get(old)
    return new, cx.gen.dims(new)


def multiply_add(cx: Lowerer, elem: ScalarType) -> tiled.MultiplyAdd:
    """One step ``acc + a * b`` of the matmul's sums: fused (one rounding) for floats
    when the ``matmul_fma`` option is on (the default) and the host has FMA, else a
    multiply and an add; ``and``/``or`` on ``i1``."""
    gen = cx.gen
    if elem.name in FMA_ELEMENTS and cx.options.get("matmul_fma", True) \
            and cx.options.get("fma", False):
        return lambda acc, a, b: gen.emit(mathops.FmaOp.new(a, b, acc))
    add_cls, mul_cls = (arith.OrOp, arith.AndOp) if elem.is_bool else (arith.AddOp, arith.MulOp)
    return lambda acc, a, b: gen.emit(add_cls.new(acc, gen.emit(mul_cls.new(a, b))))


def _lower_matmul(cx: Lowerer, op: tensor.MatmulOp) -> list[Value]:
    gen = cx.gen
    (a, da), (b, db) = _operand(cx, op.lhs), _operand(cx, op.rhs)
    a_mat, b_mat = len(da) >= 2, len(db) >= 2
    k_a, k_b = da[-1], (db[-2] if b_mat else db[0])
    gen.check(gen.cmp("eq", k_a, k_b), "matmul: Input operand 1 has a mismatch in its "
              "core dimension 0 (size {0} is different from {1})", "shape", [k_b, k_a])
    t = op.result.type
    shape = t.shape if isinstance(t, TensorType) else ()
    nb = len(shape) - a_mat - b_mat
    bc = gen.broadcast([da[:-2], db[:-2]], shape[:nb])
    rows = [*bc.out_dims, *([da[-2]] if a_mat else [])]
    cols = [db[-1]] if b_mat else []
    ops = _Operands(gen, (a, b), (len(da), len(db)), nb, bc)
    elem = element_type(op.lhs.type)
    tile = tiled.tiling(elem, int(cx.options.get("vector_bits", 256)))
    if not b_mat or elem.name in ("f16", "bf16"):
        return [_by_dot_products(cx, op, ops, rows, cols, k_a)]
    if a_mat and tiled.worth_tiling(elem, shape[-2], shape[-1], tile):
        return [_tiled(cx, op, ops, (rows, cols, k_a), (_static_k(op), tile))]
    return [_ikj(cx, op, ops, rows, cols, k_a)]


def _static_k(op: tensor.MatmulOp) -> int:
    k = op.lhs.type.shape[-1]
    return k if k != DYN else op.rhs.type.shape[-2 if op.rhs.type.rank >= 2 else 0]


def _tiled(cx: Lowerer, op: Operation, ops: _Operands,
           sizes: tuple[list[Value], list[Value], Value],
           how: tuple[int, tiled.Tiling]) -> Value:
    """The cache-blocked nest of ``lower_matmul_tiled``.  Its first k block starts from
    zero, so the output is zeroed beforehand only when ``k`` may be 0 (no k block runs):
    a zeroed output would be one more pass over it, read back from memory when it is
    larger than the caches (a batched product's output: 2 MB in a conv2d of batch 8)."""
    gen = cx.gen
    rows, cols, k = sizes
    elem = element_type(op.result.type)
    out = cx.alloc(op.result.type, [*rows, *cols], op.result.name_hint)
    k_static = constant_of(k)
    if not isinstance(k_static, int) or k_static == 0:
        def fill() -> list[Value]:
            gen.copy(gen.const(_zero(elem), elem), out, [*rows, *cols], parallel=True)
            return []
        if k_static == 0:
            fill()
        else:
            gen.if_(gen.cmp("eq", k, gen.const(0)), [], fill, lambda: [])
    nest = tiled.TiledMatmul(gen, out, (ops.row_a, ops.load_b), (rows[-1], cols[0], k),
                             multiply_add(cx, elem), how[0], how[1])
    tiled.batch_nest(gen, rows[:-1], nest.emit)
    return out


def _ikj(cx: Lowerer, op: Operation, ops: _Operands, rows: list[Value], cols: list[Value],
         k: Value) -> Value:
    """``out[i, :] = 0; for k: out[i, :] += a[i, k] * b[k, :]`` per row."""
    gen = cx.gen
    elem = element_type(op.result.type)
    out = cx.alloc(op.result.type, [*rows, *cols], op.result.name_hint)
    madd = multiply_add(cx, elem)
    zero = identity(gen, "zero", elem) if elem.is_bool else gen.const(_zero(elem), elem)

    def row(ivs: list[Value]) -> None:
        gen.nest(cols, lambda js: gen.store(zero, out, [*ivs, *js]), prefix="j")

        def k_step(ks: list[Value]) -> None:
            aik = ops.load_a(ivs, ks[0])

            def update(js: list[Value]) -> None:
                acc = gen.load(out, [*ivs, *js])
                gen.store(madd(acc, aik, ops.load_b(ivs, ks[0], js[0])), out, [*ivs, *js])
            gen.nest(cols, update, prefix="j")
        gen.nest([k], k_step, prefix="k")
    gen.nest(rows, row, parallel=True)
    return out


def _zero(t: ScalarType) -> int | float:
    return 0.0 if t.is_float else 0


def _by_dot_products(cx: Lowerer, op: Operation, ops: _Operands, rows: list[Value],
                     cols: list[Value], k: Value) -> Value:
    """Each output element as a reduction over ``k``."""
    gen = cx.gen
    elem = element_type(op.lhs.type)
    acc_t = f32 if elem.name in ("f16", "bf16") else elem
    add_cls, mul_cls = (arith.OrOp, arith.AndOp) if elem.is_bool else (arith.AddOp, arith.MulOp)
    lanes = LANES if acc_t.is_float else 1

    def value_at(ivs: list[Value]) -> Value:
        j = ivs[-1] if cols else None

        def element(ks: list[Value]) -> Value:
            x = gen.cast(ops.load_a(ivs, ks[0]), acc_t)
            y = gen.cast(ops.load_b(ivs, ks[0], j), acc_t)
            return gen.emit(mul_cls.new(x, y))
        v = reduce_space(gen, [k], element, lambda p, q: gen.emit(add_cls.new(p, q)),
                         identity(gen, "zero", acc_t), lanes)
        return gen.cast(v, elem)
    t = op.result.type
    if not isinstance(t, TensorType):
        return value_at([])
    out = cx.alloc(t, [*rows, *cols], op.result.name_hint)
    gen.nest([*rows, *cols], lambda ivs: gen.store(value_at(ivs), out, ivs),
             parallel=True)
    return out


RULES: dict[type[Operation], LowerFn] = {
    tensor.MatmulOp: _lower_matmul,  # type: ignore[dict-item]
}
