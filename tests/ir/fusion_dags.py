"""Hypothesis strategy for the fusion tests: random tensor-level DAGs of elementwise ops,
broadcasts, reductions (any axes, keepdims or not), slices (negative steps included)
and transposes, with values used by several consumers, plus matching inputs.

All tensors are broadcast-compatible with one "universe" shape (size-1 axes
included), so any two can meet in a binary op.  With ``dynamic`` every parameter size
is ``?``; inputs may be non-contiguous views (reversed or strided), and the element
type is one of f32, f64 and i32 per module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from pyasc.ir import Builder
from pyasc.ir.core import Value
from pyasc.ir.ops import arith, func, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.parser import parse_module
from pyasc.ir.types import DYN, MemRefType, TensorType, f32, f64, i32, index

FLOAT_UNARY = [arith.NegOp, m.AbsOp, m.ExpOp, m.TanhOp, m.SqrtOp]
INT_UNARY = [arith.NegOp, m.AbsOp]
FLOAT_BINARY = [arith.AddOp, arith.SubOp, arith.MulOp, arith.DivOp, arith.MaxOp, arith.MinOp]
INT_BINARY = [arith.AddOp, arith.SubOp, arith.MulOp, arith.MaxOp, arith.MinOp]
REDUCE = [tensor.SumOp, tensor.ReduceMaxOp, tensor.ReduceMinOp, tensor.SumOp]


@dataclass
class Dag:
    """A generated module (function ``f``) and arguments for it."""

    module: ModuleOp
    args: list
    notes: list[str] = field(default_factory=list)


class _Gen:
    def __init__(self, draw, b: Builder, elem, universe: tuple[int, ...]) -> None:
        self.draw, self.b, self.elem, self.universe = draw, b, elem, universe
        self.values: list[tuple[Value, tuple[int, ...]]] = []  # (value, concrete shape)

    def pick(self) -> tuple[Value, tuple[int, ...]]:
        return self.values[self.draw(st.integers(0, len(self.values) - 1))]

    def const(self, value, t=None):
        t = t or self.elem
        v = float(value) if t.is_float else int(value)
        return self.b.insert(arith.ConstantOp.new(v, t)).result

    def add(self, v: Value, shape: tuple[int, ...]) -> None:
        self.values.append((v, shape))

    # -- actions
    def unary(self) -> None:
        x, s = self.pick()
        ops = FLOAT_UNARY if self.elem.is_float else INT_UNARY
        cls = self.draw(st.sampled_from(ops))
        self.add(self.b.insert(cls.new(x)).result, s)

    def binary(self) -> None:
        (x, sx), (y, sy) = self.pick(), self.pick()
        try:
            shape = np.broadcast_shapes(sx, sy)
        except ValueError:
            return
        if self.draw(st.booleans()):
            y, sy = self.const(self.draw(st.integers(-3, 3))), ()
            shape = sx
        ops = FLOAT_BINARY if self.elem.is_float else INT_BINARY
        cls = self.draw(st.sampled_from(ops))
        self.add(self.b.insert(cls.new(x, y)).result, tuple(shape))

    def reduce(self) -> None:
        x, s = self.pick()
        if not s:
            return
        axes = sorted(set(self.draw(st.lists(st.integers(0, len(s) - 1), min_size=1,
                                             max_size=len(s)))))
        keep = self.draw(st.booleans())
        cls = self.draw(st.sampled_from(REDUCE))
        if cls is not tensor.SumOp and 0 in [s[a] for a in axes]:
            return
        op = self.b.insert(cls.new(x, axes, keep))
        shape = tuple(1 if a in axes else d for a, d in enumerate(s)) if keep else \
            tuple(d for a, d in enumerate(s) if a not in axes)
        if isinstance(op.result.type, TensorType):
            self.add(op.result, shape)

    def rowwise(self) -> None:
        """``x (op) reduce(x, trailing axes, keepdims)``: softmax/layernorm-shaped."""
        x, s = self.pick()
        if not s:
            return
        k = self.draw(st.integers(1, len(s)))
        axes = list(range(len(s) - k, len(s)))
        cls = self.draw(st.sampled_from(REDUCE))
        red = self.b.insert(cls.new(x, axes, True)).result
        comb = self.draw(st.sampled_from([arith.SubOp, arith.AddOp, arith.MulOp]))
        self.add(self.b.insert(comb.new(x, red)).result, s)

    def slice(self) -> None:
        x, s = self.pick()
        if not s or 0 in s:
            return
        offs, sizes, steps = [], [], []
        for d in s:
            step = self.draw(st.sampled_from([1, 2, -1]))
            off = self.draw(st.integers(0, d - 1))
            size = off + 1 if step < 0 else -(-(d - off) // step)
            offs.append(off)
            sizes.append(size)
            steps.append(step)
        t = TensorType(tuple(sizes), x.type.element)
        operands = [x, *[self.const(v, index) for v in offs + sizes + steps]]
        self.add(self.b.insert(tensor.SliceOp(operands, [t])).result, tuple(sizes))

    def transpose(self) -> None:
        x, s = self.pick()
        if len(s) < 2:
            return
        perm = tuple(self.draw(st.permutations(list(range(len(s))))))
        t = TensorType(tuple(x.type.shape[p] for p in perm), x.type.element)
        op = tensor.TransposeOp([x], [t], {"perm": perm})
        self.add(self.b.insert(op).result, tuple(s[p] for p in perm))

    def broadcast(self) -> None:
        x, s = self.pick()
        if any(d == DYN for d in x.type.shape) or len(s) > len(self.universe):
            return
        try:
            target = tuple(np.broadcast_shapes(s, self.universe))
        except ValueError:
            return
        t = TensorType(target, x.type.element)
        self.add(self.b.insert(tensor.BroadcastOp([x], [t])).result, target)


def _param_shape(draw, universe: tuple[int, ...]) -> tuple[int, ...]:
    rank = draw(st.integers(0, len(universe)))
    tail = universe[len(universe) - rank:]
    return tuple(d if draw(st.booleans()) or d == 1 else 1 for d in tail) if rank else ()


def _array(rng: np.random.Generator, shape: tuple[int, ...], dtype, view: str) -> np.ndarray:
    make = (lambda sh: rng.standard_normal(sh).astype(dtype)) if np.dtype(dtype).kind == "f" \
        else (lambda sh: rng.integers(-4, 5, sh).astype(dtype))
    if view == "reversed" and shape:
        return make(shape)[::-1]
    if view == "strided" and shape:
        big = make((*shape[:-1], 2 * shape[-1]))
        return big[..., ::2]
    return make(shape)


@st.composite
def dags(draw, dynamic: bool | None = None, max_ops: int = 8) -> Dag:
    """A random fusible DAG (see the module docstring)."""
    rank = draw(st.integers(1, 3))
    universe = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    dynamic = draw(st.booleans()) if dynamic is None else dynamic
    elem = draw(st.sampled_from([f32, f64, i32]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    shapes = [_param_shape(draw, universe) for _ in range(draw(st.integers(1, 3)))]
    views = [draw(st.sampled_from(["plain", "plain", "reversed", "strided"])) for _ in shapes]
    args = [_array(rng, s, elem.to_numpy(), v) for s, v in zip(shapes, views, strict=True)]
    params = []
    for a in args:
        shape = tuple(DYN if dynamic else d for d in a.shape)
        strides = None if a.flags.c_contiguous else (DYN,) * a.ndim
        params.append(MemRefType(shape, elem, strides))
    mod = ModuleOp.empty()
    fn = FuncOp.empty("f", params, [])
    mod.append(fn)
    b = Builder.at_end(fn.entry)
    g = _Gen(draw, b, elem, universe)
    for p, a in zip(fn.entry.args, args, strict=True):
        g.add(b.insert(mem.ToTensorOp([p], [p.type.tensor_type()])).result, a.shape)
    n_inputs = len(g.values)
    actions = [g.unary, g.binary, g.binary, g.reduce, g.rowwise, g.slice, g.transpose]
    if not dynamic:
        actions.append(g.broadcast)
    for _ in range(draw(st.integers(1, max_ops))):
        draw(st.sampled_from(actions))()
    made = g.values[n_inputs:] or g.values
    picks = draw(st.lists(st.integers(0, len(made) - 1), max_size=2))
    results = list(dict.fromkeys([made[-1][0], *[made[k][0] for k in picks]]))
    b.insert(func.ReturnOp(results))
    fn.set_result_types([v.type for v in results])
    return Dag(parse_module(str(mod)), args)
