"""Value pools, types and constants of the random IR generator (see ``irgen``).

``IRGen`` tracks what a random function has built so far: scoped pools of visible
values, each shaped value's concrete run-time shape (every tensor is a broadcast-
compatible suffix of one "universe" shape), and helpers that draw types, constants and
operands that are valid together.  ``draw_param`` draws parameters and matching arguments.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from pyasc.ir import Builder, DenseArray, Location
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import arith
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.types import (
    DYN,
    SCALAR_TYPES,
    MemRefType,
    ScalarType,
    TensorType,
    Type,
    broadcast_shapes,
    element_type,
    index,
)

EXEC_ELEMS = [SCALAR_TYPES[n] for n in
              ("i1", "i8", "i16", "i32", "i64", "ui8", "ui32", "f16", "f32", "f64", "index")]
ALL_ELEMS = EXEC_ELEMS + [SCALAR_TYPES[n] for n in ("ui16", "ui64", "bf16")]
SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -2.5, 1e-3, 65504.0, math.nan, math.inf,
                  -math.inf]



class Generated:
    """A random module, and (if executable) arguments for its ``main`` function."""

    def __init__(self, module: ModuleOp, args: list) -> None:
        self.module, self.args = module, args

    def __repr__(self) -> str:  # shown by hypothesis for a failing example
        return f"{self.module}\nargs = {self.args!r}"


def _is_constant(v: Value) -> bool:
    return isinstance(v, OpResult) and isinstance(v.op, arith.ConstantOp)


def type_shape(v: Value) -> tuple[int, ...]:
    t = v.type
    return tuple(t.shape) if isinstance(t, TensorType | MemRefType) else ()


class IRGen:
    """Builds one function; ``self.concrete`` maps shaped values to run-time shapes."""

    def __init__(self, draw, executable: bool) -> None:
        self.draw, self.exec = draw, executable
        self.elems = EXEC_ELEMS if executable else ALL_ELEMS
        rank = draw(st.integers(1, 2))
        self.universe = tuple(draw(st.integers(1, 4)) for _ in range(rank))
        self.concrete: dict[Value, tuple[int, ...]] = {}
        self.scopes: list[list[Value]] = [[]]
        self.buffers: list[Value] = []
        self.b: Builder | None = None
        self.depth = 0

    # -- pools
    def visible(self) -> list[Value]:
        return [v for scope in self.scopes for v in scope]

    def add(self, v: Value) -> Value:
        self.scopes[-1].append(v)
        if not self.exec and self.draw(st.integers(0, 4)) == 0:
            v.name_hint = self.draw(st.sampled_from(["x", "x_1", "acc", "t", "i", "_"]))
        return v

    def pick(self, pred=lambda v: True) -> Value | None:
        """A visible value satisfying ``pred``, preferring non-constants (3 in 4)."""
        cands = [v for v in self.visible() if pred(v)]
        computed = [v for v in cands if not _is_constant(v)]
        if computed and (len(computed) == len(cands) or self.draw(st.integers(0, 3))):
            cands = computed
        return self.draw(st.sampled_from(cands)) if cands else None

    def same_as(self, v: Value) -> Value:
        """A visible value with ``v``'s type and concrete shape (``v`` itself at worst)."""
        return self.pick(lambda w: w.type == v.type and self.cshape(w) == self.cshape(v)) or v

    def cshape(self, v: Value) -> tuple[int, ...]:
        return self.concrete.get(v, ())

    def emit(self, op: Operation, *shapes: tuple[int, ...]) -> Operation:
        """Insert ``op``; ``shapes`` are its results' concrete shapes (default: static)."""
        if not self.exec and self.draw(st.integers(0, 3)) == 0:
            op.loc = Location(self.draw(st.text(max_size=8)), self.draw(st.integers(0, 99)),
                              self.draw(st.integers(0, 99)))
        self.b.insert(op)
        for i, r in enumerate(op.result_values):
            if isinstance(r.type, TensorType | MemRefType):
                self.concrete[r] = tuple(shapes[i]) if i < len(shapes) else type_shape(r)
            self.add(r)
        return op

    # -- types and constants
    def tensor_shape(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(type shape, concrete shape) of a new tensor: a suffix of the universe."""
        rank = self.draw(st.integers(1, len(self.universe)))
        conc = tuple(d if self.draw(st.booleans()) else 1 for d in self.universe[-rank:])
        typ = tuple(DYN if self.draw(st.integers(0, 3)) == 0 else d for d in conc)
        return typ, conc

    def scalar_value(self, t: ScalarType) -> object:
        if t.is_bool:
            return self.draw(st.booleans())
        if t.is_float:
            width = 16 if t.name in ("f16", "bf16") else t.bitwidth
            special = st.sampled_from(SPECIAL_FLOATS if width > 16 else SPECIAL_FLOATS[:-4])
            value = self.draw(special | st.floats(width=width))
            return float(np.array(value, t.to_numpy())) if t.name != "bf16" else value
        info = np.iinfo(t.to_numpy())
        edges = st.sampled_from([0, 1, -1 if t.is_signed else 2, int(info.min), int(info.max)])
        return self.draw(edges | st.integers(int(info.min), int(info.max)))

    def constant(self, t: ScalarType | None = None) -> Value:
        t = t or self.draw(st.sampled_from(self.elems))
        return self.emit(arith.ConstantOp.new(self.scalar_value(t), t)).result

    def index_const(self, value: int) -> Value:
        """A bookkeeping constant (bounds, offsets): inserted, but kept out of the pool."""
        return self.b.insert(arith.ConstantOp.new(value, index)).result

    def dense(self) -> Value:
        elem = self.draw(st.sampled_from([e for e in self.elems if e.name != "bf16"]))
        _, conc = self.tensor_shape()
        values = [self.scalar_value(elem) for _ in range(int(np.prod(conc)))]
        t = TensorType(conc, elem)
        arr = np.array(values, dtype=elem.to_numpy()).reshape(conc)
        return self.emit(arith.ConstantOp([], [t], {"value": DenseArray(arr, t)})).result

    def value(self, pred=lambda v: True, elem: ScalarType | None = None) -> Value:
        """A visible scalar/tensor value satisfying ``pred``, else a constant of ``elem``
        (which must then satisfy ``pred``)."""
        v = self.pick(lambda w: isinstance(w.type, ScalarType | TensorType) and pred(w))
        return v if v is not None else self.constant(elem)

    def partner(self, v: Value) -> Value:
        """A value of ``v``'s element type that broadcasts with it (types and shapes)."""
        elem = element_type(v.type)
        return self.value(lambda w: element_type(w.type) == elem and self.compatible(v, w),
                          elem)

    def compatible(self, *vs: Value) -> bool:
        if broadcast_shapes(*(type_shape(v) for v in vs)) is None:
            return False
        try:
            np.broadcast_shapes(*(self.cshape(v) for v in vs))
        except ValueError:
            return False
        return True

    def bshape(self, *vs: Value) -> tuple[int, ...]:
        return np.broadcast_shapes(*(self.cshape(v) for v in vs))

    def tensor_value(self, pred=lambda v: True) -> Value:
        v = self.pick(lambda w: isinstance(w.type, TensorType) and w.type.rank > 0
                      and pred(w))
        return v if v is not None else self.dense()


def _array(rng: np.random.Generator, elem: ScalarType, shape: tuple[int, ...]) -> np.ndarray:
    """Random values of ``elem``, rich in edge cases (nan, inf, -0.0, extremes)."""
    dt = elem.to_numpy()
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        arr = (rng.standard_normal(shape) * 4).astype(dt)
        special = np.array([np.nan, np.inf, -np.inf, -0.0, -0.0, 0.0, 1.0], dt)
        return np.where(rng.random(shape) < 0.3, rng.choice(special, shape), arr).astype(dt)
    info = np.iinfo(dt)
    wide = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    small = rng.integers(max(info.min, -5), 6, shape).astype(dt)
    return np.where(rng.random(shape) < 0.6, small, wide).astype(dt)


def _strides(g: IRGen, typ: tuple[int, ...]) -> tuple[int, ...] | None:
    if g.exec:  # run-time views: any strides (see _param_value)
        return g.draw(st.sampled_from([None, (DYN,) * len(typ)]))
    static = st.tuples(*(st.integers(0, 64) | st.just(DYN) for _ in typ))
    return g.draw(st.none() | st.just((DYN,) * len(typ)) | static)


def draw_param(g: IRGen, rng: np.random.Generator) -> tuple[Type, tuple[int, ...], object]:
    """A parameter type, its concrete shape and an argument value."""
    elem = g.draw(st.sampled_from(g.elems))
    kind = g.draw(st.sampled_from(["scalar", "tensor", "memref"]))
    if kind == "scalar":
        value = g.scalar_value(elem)
        return elem, (), (elem.to_numpy().type(value) if g.exec else None)
    typ, conc = g.tensor_shape()
    if kind == "tensor":
        return TensorType(typ, elem), conc, (_array(rng, elem, conc) if g.exec else None)
    strides = _strides(g, typ)
    if not g.exec:
        return MemRefType(typ, elem, strides), conc, None
    if strides is None:
        return MemRefType(typ, elem), conc, _array(rng, elem, conc)
    base = _array(rng, elem, tuple(2 * d for d in conc))
    return MemRefType(typ, elem, strides), conc, base[tuple(slice(None, None, 2) for _ in conc)]
