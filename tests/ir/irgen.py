"""Hypothesis strategies building random *valid* IR modules.

``modules(executable=...)`` draws a :class:`Generated`: a module whose function
``main`` mixes scalar and tensor types (dynamic dims included), constants (nan, inf,
-0.0, dense), elementwise ops with broadcasting, casts, selects, reductions, slices,
shape ops, memref reads and writes, and nested ``loop.for/if/while`` with carried
values.  With ``executable=True`` the module is also safe to run: every tensor's
concrete shape is tracked (all are broadcast-compatible suffixes of one "universe"
shape), indices are in bounds, loops terminate and asserts hold; ``args`` then holds
matching inputs.  With ``executable=False`` it adds what only the text format cares
about: bf16, static strides, odd strings in attributes, locations and function names,
and random value names.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from irgen_base import ALL_ELEMS, Generated, IRGen, draw_param, type_shape

from pyasc.ir import Builder, DenseArray
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith, func, loop, mem, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.arith import _kind_ok
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.types import (
    DYN,
    SCALAR_TYPES,
    MemRefType,
    ScalarType,
    TensorType,
    broadcast_shapes,
    element_type,
    i1,
    index,
)

BINARY = [arith.AddOp, arith.SubOp, arith.MulOp, arith.DivOp, arith.FloorDivOp, arith.RemOp,
          arith.MaxOp, arith.MinOp, arith.AndOp, arith.OrOp, arith.XorOp, arith.ShlOp,
          arith.ShrOp, m.PowOp]
UNARY = [arith.NegOp, arith.NotOp, m.AbsOp, m.SignOp, *m.UNARY_FLOAT_OPS]
IDENTITY_OPS = [arith.AddOp, arith.SubOp, arith.MulOp, arith.DivOp, arith.FloorDivOp,
                arith.MaxOp, arith.MinOp, arith.AndOp, arith.XorOp]
IDENTITY_VALUES = {"bool": [True, False], "int": [0, 1, -1],
                   "float": [0.0, -0.0, 1.0, -1.0, math.nan, math.inf]}


# ------------------------------------------------------------------ elementwise actions

def act_constant(g: IRGen) -> None:
    g.dense() if g.draw(st.booleans()) else g.constant()


def act_binary(g: IRGen) -> None:
    lhs = g.value()
    elem = element_type(lhs.type)
    cls = g.draw(st.sampled_from([c for c in BINARY if _kind_ok(elem, c.allowed)]))
    rhs = g.partner(lhs)
    g.emit(cls.new(lhs, rhs), g.bshape(lhs, rhs))


def act_identity(g: IRGen) -> None:
    """An op with an operand that identity rules look for: x, 0, 1, -0.0, NaN..."""
    x = g.value()
    elem = element_type(x.type)
    cls = g.draw(st.sampled_from([c for c in IDENTITY_OPS if _kind_ok(elem, c.allowed)]))
    if g.draw(st.booleans()):
        other = x
    else:
        kind = "bool" if elem.is_bool else ("float" if elem.is_float else "int")
        values = [v for v in IDENTITY_VALUES[kind] if v != -1 or not elem.is_unsigned]
        other = g.emit(arith.ConstantOp.new(g.draw(st.sampled_from(values)),
                                            elem)).result
    lhs, rhs = (x, other) if g.draw(st.booleans()) else (other, x)
    g.emit(cls.new(lhs, rhs), g.bshape(lhs, rhs))
    if g.draw(st.booleans()):  # a cast pair, for the cast(cast(x)) rules
        mid = g.draw(st.sampled_from(g.elems))
        first = g.emit(arith.CastOp.new(x, mid), g.cshape(x)).result
        g.emit(arith.CastOp.new(first, g.draw(st.sampled_from(g.elems))),
               g.cshape(x))


def act_unary(g: IRGen) -> None:
    x = g.value()
    elem = element_type(x.type)
    ops = [c for c in UNARY if _kind_ok(elem, c.allowed)]
    if elem.is_float:
        ops += [m.IsNanOp, m.IsInfOp, m.IsFiniteOp]
    g.emit(g.draw(st.sampled_from(ops)).new(x), g.cshape(x))


def act_cmp(g: IRGen) -> None:
    lhs = g.value()
    rhs = g.partner(lhs)
    pred = g.draw(st.sampled_from(arith.CMP_PREDICATES))
    g.emit(arith.CmpOp.new(pred, lhs, rhs), g.bshape(lhs, rhs))


def act_select(g: IRGen) -> None:
    a = g.value()
    b = g.partner(a)
    c = g.value(lambda w: element_type(w.type) == i1 and g.compatible(w, a, b), i1)
    g.emit(arith.SelectOp.new(c, a, b), g.bshape(c, a, b))


def act_cast(g: IRGen) -> None:
    x = g.value()
    g.emit(arith.CastOp.new(x, g.draw(st.sampled_from(g.elems))), g.cshape(x))


# ---------------------------------------------------------------------------- tensor actions

def act_reduce(g: IRGen) -> None:
    x = g.tensor_value()
    rank, keep = x.type.rank, g.draw(st.booleans())
    if x.type.element.is_bool:
        cls = g.draw(st.sampled_from([tensor.AnyOp, tensor.AllOp]))
    else:
        cls = g.draw(st.sampled_from([tensor.SumOp, tensor.ProdOp, tensor.ReduceMaxOp,
                                      tensor.ReduceMinOp, tensor.ArgMaxOp]))
    if cls is tensor.ArgMaxOp:
        axis = g.draw(st.none() | st.integers(0, rank - 1))
        if axis is None:
            t = TensorType((1,) * rank, index) if keep else index
            op = cls([x], [t], {"keepdims": keep})
        else:
            t = tensor.ReduceOp.result_type(x.type, [axis], keep, index)
            op = cls([x], [t], {"axis": axis, "keepdims": keep})
        axes = axis
    else:
        axes = tuple(sorted(g.draw(st.sets(st.integers(0, rank - 1), min_size=1))))
        op = cls.new(x, axes, keep)
    shape = np.sum(np.zeros(g.cshape(x)), axis=axes, keepdims=keep).shape
    g.emit(op, shape)


def act_extract(g: IRGen) -> None:
    x = g.tensor_value()
    idx = [g.index_const(g.draw(st.integers(0, d - 1))) for d in g.cshape(x)]
    g.emit(tensor.ExtractOp([x, *idx], [x.type.element]))


def act_slice(g: IRGen) -> None:
    x = g.tensor_value()
    offsets, sizes, steps = [], [], []
    for d in g.cshape(x):
        step = g.draw(st.sampled_from([1, 2, -1]))
        off = g.draw(st.integers(0, d - 1))
        most = -(-(d - off) // step) if step > 0 else off // -step + 1
        offsets.append(off)
        steps.append(step)
        sizes.append(g.draw(st.integers(1, most)))
    ones = [a for a, s in enumerate(sizes) if s == 1]
    drop = tuple(a for a in ones if g.draw(st.booleans()))[:len(sizes) - 1]
    shape = tuple(s for a, s in enumerate(sizes) if a not in drop)
    operands = [g.index_const(v) for v in offsets + sizes + steps]
    g.emit(tensor.SliceOp([x, *operands], [TensorType(shape, x.type.element)],
                          {"drop": drop} if drop else {}))


def act_shape(g: IRGen) -> None:
    x = g.tensor_value()
    kind = g.draw(st.sampled_from(["transpose", "reshape", "broadcast", "dim", "concat",
                                   "fill", "matmul", "gather"]))
    SHAPE_ACTIONS[kind](g, x)


def transpose(g: IRGen, x: Value, perm: tuple[int, ...] | None = None) -> Value:
    perm = perm or tuple(g.draw(st.permutations(range(x.type.rank))))
    t = TensorType(tuple(x.type.shape[p] for p in perm), x.type.element)
    conc = tuple(g.cshape(x)[p] for p in perm)
    return g.emit(tensor.TransposeOp([x], [t], {"perm": perm}), conc).result


def reshape(g: IRGen, x: Value) -> None:
    n = int(np.prod(g.cshape(x)))
    g.emit(tensor.ReshapeOp([x], [TensorType((n,), x.type.element)]), (n,))


def broadcast(g: IRGen, x: Value) -> None:
    if x.type.rank >= 3:
        return
    dims = [g.emit(tensor.DimOp([x], [index], {"axis": a})).result
            for a, d in enumerate(x.type.shape) if d == DYN]
    t = TensorType((2, *x.type.shape), x.type.element)
    g.emit(tensor.BroadcastOp([x, *dims], [t]), (2, *g.cshape(x)))


def dim(g: IRGen, x: Value) -> None:
    g.emit(tensor.DimOp([x], [index], {"axis": g.draw(st.integers(0, x.type.rank - 1))}))


def concat(g: IRGen, x: Value) -> None:
    d = x.type.shape[0]
    t = TensorType((DYN if d == DYN else 2 * d, *x.type.shape[1:]), x.type.element)
    conc = g.cshape(x)
    g.emit(tensor.ConcatOp([x, x], [t], {"axis": 0}), (2 * conc[0], *conc[1:]))


def fill(g: IRGen, x: Value) -> None:
    typ, conc = g.tensor_shape()
    dims = [g.index_const(c) for c, d in zip(conc, typ, strict=True) if d == DYN]
    v = g.value(lambda w: isinstance(w.type, ScalarType))
    g.emit(tensor.FillOp.new(v, TensorType(typ, v.type), dims), conc)


def matmul(g: IRGen, x: Value) -> None:
    if x.type.element.is_bool or x.type.rank > 2:
        return
    y = transpose(g, x, (1, 0)) if x.type.rank == 2 else x
    conc = np.matmul(np.zeros(g.cshape(x)), np.zeros(g.cshape(y))).shape
    g.emit(tensor.MatmulOp.new(x, y), conc)


def gather(g: IRGen, x: Value) -> None:
    axis = g.draw(st.integers(0, x.type.rank - 1))
    d = g.cshape(x)[axis]
    picks = g.draw(st.lists(st.integers(-d, d - 1), min_size=1, max_size=3))
    it = TensorType((len(picks),), SCALAR_TYPES["i64"])
    idx = g.emit(arith.ConstantOp([], [it], {"value": DenseArray(
        np.array(picks, np.int64), it)})).result
    t = TensorType((*x.type.shape[:axis], len(picks), *x.type.shape[axis + 1:]),
                   x.type.element)
    conc = (*g.cshape(x)[:axis], len(picks), *g.cshape(x)[axis + 1:])
    g.emit(tensor.GatherOp([x, idx], [t], {"axis": axis}), conc)


# ---------------------------------------------------------------------------- memref actions

def buffer(g: IRGen) -> Value | None:
    return g.pick(lambda w: isinstance(w.type, MemRefType))


def act_memory(g: IRGen) -> None:
    buf = buffer(g)
    if buf is None or g.draw(st.integers(0, 4)) == 0:
        return alloc(g)
    kind = g.draw(st.sampled_from(["to_tensor", "load", "store", "write", "fill",
                                   "subview", "dim"]))
    MEM_ACTIONS[kind](g, buf)


def alloc(g: IRGen) -> None:
    typ, conc = g.tensor_shape()
    elem = g.draw(st.sampled_from(g.elems))
    dims = [g.index_const(c) for c, d in zip(conc, typ, strict=True) if d == DYN]
    buf = g.emit(mem.AllocOp(dims, [MemRefType(typ, elem)]), conc).result
    g.emit(mem.FillOp([g.constant(elem), buf]))  # never read uninitialized memory


def mem_to_tensor(g: IRGen, buf: Value) -> None:
    g.emit(mem.ToTensorOp([buf], [buf.type.tensor_type()]), g.cshape(buf))


def mem_indices(g: IRGen, buf: Value) -> list[Value]:
    return [g.index_const(g.draw(st.integers(0, d - 1))) for d in g.cshape(buf)]


def mem_load(g: IRGen, buf: Value) -> None:
    g.emit(mem.LoadOp([buf, *mem_indices(g, buf)], [buf.type.element]))


def mem_store(g: IRGen, buf: Value) -> None:
    v = g.value(lambda w: w.type == buf.type.element, buf.type.element)
    g.emit(mem.StoreOp([v, buf, *mem_indices(g, buf)]))


def mem_write(g: IRGen, buf: Value) -> None:
    elem, shape = buf.type.element, g.cshape(buf)

    def fits(w: Value) -> bool:
        ws, cs = type_shape(w), g.cshape(w)
        return (element_type(w.type) == elem and len(ws) <= buf.type.rank
                and g.compatible(w, buf) and g.bshape(w, buf) == shape
                and all(a == b or DYN in (a, b) for a, b in zip(
                    broadcast_shapes(ws, buf.type.shape), buf.type.shape, strict=True))
                and len(cs) <= len(shape))
    g.emit(mem.WriteOp([g.value(fits, elem), buf]))


def mem_fill(g: IRGen, buf: Value) -> None:
    v = g.value(lambda w: w.type == buf.type.element, buf.type.element)
    g.emit(mem.FillOp([v, buf]))


def mem_subview(g: IRGen, buf: Value) -> None:
    offsets, sizes = [], []
    for d in g.cshape(buf):
        off = g.draw(st.integers(0, d - 1))
        offsets.append(off)
        sizes.append(g.draw(st.integers(1, d - off)))
    ops = [g.index_const(v) for v in offsets + sizes + [1] * len(sizes)]
    t = MemRefType(tuple(sizes), buf.type.element, (DYN,) * len(sizes))
    g.emit(mem.SubviewOp([buf, *ops], [t]), tuple(sizes))


def mem_dim(g: IRGen, buf: Value) -> None:
    axis = g.draw(st.integers(0, buf.type.rank - 1))
    g.emit(mem.DimOp([buf], [index], {"axis": axis}))


# ---------------------------------------------------------------------------- control flow

def open_scope(g: IRGen, args: list[Value], shapes: list[tuple[int, ...]]) -> None:
    """Open a scope for a region's block with arguments ``args``; see ``close``."""
    for a, s in zip(args, shapes, strict=True):
        if isinstance(a.type, TensorType | MemRefType):
            g.concrete[a] = s
    g.scopes.append(list(args))
    g.depth += 1


def close(g: IRGen) -> None:
    g.scopes.pop()
    g.depth -= 1


def body(g: IRGen, block, args: list[Value], shapes, terminator) -> None:
    """Fill ``block`` with random ops; ``terminator()`` builds its last op."""
    open_scope(g, args, shapes)
    with g.b.at(block):
        ops(g, g.draw(st.integers(0, 3)))
        g.b.insert(terminator())
    close(g)


def act_for(g: IRGen) -> None:
    lb, step = g.draw(st.integers(-2, 2)), g.draw(st.sampled_from([1, 2, -1]))
    bounds = [g.index_const(v) for v in (lb, lb + step * g.draw(st.integers(0, 3)),
                                         step)]
    inits = [g.value() for _ in range(g.draw(st.integers(0, 2)))]
    op = loop.ForOp.empty(*bounds, inits)
    blk = op.body.block
    body(g, blk, blk.args, [()] + [g.cshape(v) for v in inits],
         lambda: loop.YieldOp([g.same_as(a) for a in blk.args[1:]]))
    g.emit(op, *[g.cshape(v) for v in inits])


def act_if(g: IRGen) -> None:
    cond = g.value(lambda w: w.type == i1, i1)
    templates = [g.value() for _ in range(g.draw(st.integers(0, 2)))]
    op = loop.IfOp.empty(cond, [v.type for v in templates])
    for region in (op.then_region, op.else_region):
        body(g, region.block, [], [],
             lambda: loop.YieldOp([g.same_as(v) for v in templates]))
    g.emit(op, *[g.cshape(v) for v in templates])


def act_while(g: IRGen) -> None:
    zero, one = g.index_const(0), g.index_const(1)
    limit = g.index_const(g.draw(st.integers(0, 3)))
    others = [g.value() for _ in range(g.draw(st.integers(0, 2)))]
    shapes = [()] + [g.cshape(v) for v in others]
    op = loop.WhileOp.empty([zero, *others], [index, *(v.type for v in others)])
    before, after = op.before.block, op.after.block

    def condition() -> Operation:
        lt = g.b.insert(arith.CmpOp.new("lt", before.args[0], limit)).result
        return loop.ConditionOp([lt, before.args[0], *map(g.same_as, before.args[1:])])

    def advance() -> Operation:
        nxt = g.b.insert(arith.AddOp.new(after.args[0], one)).result
        return loop.YieldOp([nxt, *map(g.same_as, after.args[1:])])
    body(g, before, before.args, shapes, condition)
    body(g, after, after.args, shapes, advance)
    g.emit(op, *shapes)


def act_assert(g: IRGen) -> None:
    if g.exec:  # x <= x holds for every integer
        x = g.value(lambda w: w.type in (index, SCALAR_TYPES["i32"]), index)
        cond = g.emit(arith.CmpOp.new("le", x, x)).result
        message = "x <= x"
    else:
        cond = g.value(lambda w: w.type == i1, i1)
        message = g.draw(st.text(max_size=12))
    kind = g.draw(st.sampled_from(["assert", "bounds"]))
    g.emit(func.AssertOp([cond], attributes={"message": message, "kind": kind}))


# ---------------------------------------------------------------------------- driver

def ops(g: IRGen, n: int) -> None:
    # Identity-prone ops are drawn more often: they are what canonicalize rewrites.
    names = [*ACTIONS, "identity", "identity"] if g.depth < 2 else [*FLAT_ACTIONS]
    for _ in range(n):
        ACTIONS[g.draw(st.sampled_from(names))](g)


SHAPE_ACTIONS = {"transpose": transpose, "reshape": reshape,
                 "broadcast": broadcast, "dim": dim, "concat": concat,
                 "fill": fill, "matmul": matmul, "gather": gather}
MEM_ACTIONS = {"to_tensor": mem_to_tensor, "load": mem_load,
               "store": mem_store, "write": mem_write, "fill": mem_fill,
               "subview": mem_subview, "dim": mem_dim}
FLAT_ACTIONS = {
    "constant": act_constant, "binary": act_binary, "unary": act_unary,
    "identity": act_identity,
    "cmp": act_cmp, "select": act_select, "cast": act_cast,
    "reduce": act_reduce, "extract": act_extract, "slice": act_slice,
    "shape": act_shape, "memory": act_memory, "assert": act_assert,
}
ACTIONS = {**FLAT_ACTIONS, "for": act_for, "if": act_if, "while": act_while}


def _add_callee(g: IRGen, mod: ModuleOp, main: FuncOp) -> None:
    """Round-trip mode: a second function with an odd name, called from ``main``."""
    name = g.draw(st.text(min_size=1, max_size=8).filter(lambda s: s != main.sym_name))
    t = g.draw(st.sampled_from(ALL_ELEMS))
    callee = FuncOp.empty(name, [t], [t], ["arg"])
    Builder.at_end(callee.entry).insert(func.ReturnOp([callee.entry.args[0]]))
    mod.append(callee)
    g.emit(func.CallOp([g.value(lambda w: w.type == t, t)], [t], {"callee": name}))


@st.composite
def modules(draw, executable: bool = True) -> Generated:
    """A random valid module with one function ``main`` (plus a callee when not
    executable) and, when executable, arguments to call ``main`` with."""
    g = IRGen(draw, executable)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    params = [draw_param(g, rng) for _ in range(draw(st.integers(1, 4)))]
    name = "main" if executable else draw(st.text(min_size=1, max_size=10))
    mod, fn = ModuleOp.empty(), FuncOp.empty(name, [p[0] for p in params], [])
    mod.append(fn)
    g.b = Builder.at_end(fn.entry)
    for arg, (_, conc, _) in zip(fn.entry.args, params, strict=True):
        g.concrete[arg] = conc
        g.add(arg)
        if isinstance(arg.type, MemRefType):  # its contents, as a value to compute with
            mem_to_tensor(g, arg)
    ops(g, draw(st.integers(2, 14)))
    if not executable:
        _add_callee(g, mod, fn)
    # Return about half of the top-level values, so most rewrites are observable while
    # dead code remains for DCE.
    top = [v for v in g.scopes[0] if isinstance(v.type, ScalarType | TensorType)]
    results = [v for v in top if draw(st.booleans())] or [g.value()]
    g.b.insert(func.ReturnOp(results))
    fn.set_result_types([v.type for v in results])
    return Generated(mod, [p[2] for p in params] if executable else [])
