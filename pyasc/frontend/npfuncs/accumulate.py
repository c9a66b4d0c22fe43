"""Unbuffered scatter: ``np.add.at`` (and ``subtract multiply maximum minimum`` ``.at``)
and ``np.bincount``.

numpy's ``ufunc.at(a, indices, b)`` applies the ufunc once per index, so a repeated
index accumulates (unlike ``a[idx] += b``, which writes each element once).  pyasc
lowers it to the loop a user would write, built as Python statements and lowered like
theirs (so every target runs it, bounds are checked and negative indices wrap)::

    for k in range(m):                       # m: the broadcast index shape, flattened
        a[i0[k], i1[k], ...] = ufunc(a[i0[k], i1[k], ...], b2[k])

where ``b2`` is ``b`` broadcast to ``a[indices].shape`` with the index axes flattened.
``np.bincount(x, weights, minlength)`` is ``zeros(max(x.max() + 1, minlength))`` and
the same loop of ``+= 1`` (or ``+= weights[k]``); its length is a run-time value.
Counts are ``int64``, weighted sums ``float64``, as in numpy.  On the device the loop
runs on the scalar unit: scatter with collisions has no vector form.
"""

from __future__ import annotations

import ast

from pyasc.errors import ShapeInferenceError, TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend import indexmath
from pyasc.frontend.calls import make_writable
from pyasc.frontend.elementwise import apply_ufunc, broadcast_dims
from pyasc.frontend.npfuncs.common import array_arg, static_int
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.pybuiltins import BUILTIN_CALLS
from pyasc.frontend.values import Buffer, Dim, NumpyFunction, Scalar, Tensor
from pyasc.ir.ops import func
from pyasc.ir.types import f64, i64, index


def _here(lw) -> ast.AST:
    """The node being lowered (the call), found by the builder's current location."""
    loc = lw.em.b.loc
    for node in ast.walk(lw.src.tree):
        if isinstance(node, ast.Call) and lw.src.location(node) == loc:
            return node
    return lw.src.tree


def _name(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())


def _run_loop(lw, count: Dim, make_body) -> None:
    """Lower ``for k in range(count): <make_body(k)>`` with hidden names."""
    k, it = lw.unit.fresh("atk"), lw.unit.fresh("atn")
    lw.scope[it] = BUILTIN_CALLS[range](lw, count)
    loop = ast.For(target=ast.Name(id=k, ctx=ast.Store()), iter=_name(it),
                   body=make_body(k), orelse=[])
    here = _here(lw)
    for n in ast.walk(loop):
        if "lineno" in n._attributes:
            ast.copy_location(n, here)
    lw.stmt(loop)


def _hide(lw, value: object, stem: str) -> str:
    name = lw.unit.fresh(stem)
    lw.scope[name] = value
    return name


def _flat_indices(lw, indices: object) -> tuple[list[Tensor], tuple[Dim, ...]]:
    """Index arrays broadcast together and flattened, and their broadcast shape."""
    items = indices if isinstance(indices, tuple) else (indices,)
    xs = []
    for it in items:
        if isinstance(it, slice) or it is None or it is Ellipsis:
            raise UnsupportedNumpyError("ufunc.at with slices in the indices is not "
                                        "supported", hint="index with integer arrays")
        x = array_arg(lw, it)
        if not x.type.element.is_int:
            raise TypeMismatchError("ufunc.at indices must be integers")
        xs.append(x)
    shape = broadcast_dims(lw.em, [tuple(lw.em.dims(x)) for x in xs])
    m: Dim = 1
    for d in shape:
        m = indexmath.mul(lw.em, m, d)
    flat = [lw.em.reshape(lw.em.broadcast(x, shape), (m,)) for x in xs]
    return flat, shape


def _at(ufunc: str):
    def handler(lw, a, indices, b, /):
        if isinstance(a, Tensor):  # an array value: its names now share one buffer
            a = make_writable(lw, a)
        if not isinstance(a, Buffer):
            raise TypeMismatchError(f"np.{ufunc}.at needs an array to write into")
        idx, shape = _flat_indices(lw, indices)
        rest = lw.em.dims(a)[len(idx):]
        m = idx[0].dims[0] if idx else 1
        vals = lw.em.operand(b)
        if isinstance(vals, Tensor):  # one row of b per index; a number stays weak
            if vals.type.rank > len(shape) + len(rest):
                raise ShapeInferenceError("operands could not be broadcast together")
            vals = lw.em.reshape(lw.em.broadcast(vals, (*shape, *rest)), (m, *rest))
        names = [_hide(lw, i, "ati") for i in idx]
        arr, val, op = _hide(lw, a, "ata"), _hide(lw, vals, "atb"), \
            _hide(lw, NumpyFunction(ufunc), "atf")
        per_index = isinstance(vals, Tensor)

        def body(k: str) -> list[ast.stmt]:
            key = ast.Tuple(elts=[ast.Subscript(value=_name(n), slice=_name(k), ctx=ast.Load())
                                  for n in names], ctx=ast.Load())
            cur = ast.Subscript(value=_name(arr), slice=key, ctx=ast.Load())
            item = ast.Subscript(value=_name(val), slice=_name(k), ctx=ast.Load()) \
                if per_index else _name(val)
            new = ast.Call(func=_name(op), args=[cur, item], keywords=[])
            return [ast.Assign(targets=[ast.Subscript(value=_name(arr), slice=key,
                                                      ctx=ast.Store())], value=new)]
        _run_loop(lw, m, body)
    handler.__doc__ = (f"unbuffered `np.{ufunc}` at integer-array `indices` (repeated "
                       "indices apply again), in place")
    return handler


for _ufunc in ("add", "subtract", "multiply", "maximum", "minimum"):
    register(f"{_ufunc}.at")(_at(_ufunc))


@register("bincount")
def bincount(lw, x, /, weights=None, minlength=0):
    """occurrences (int64) or `weights` sums (float64) of each non-negative int of `x`"""
    xs = array_arg(lw, x)
    if xs.type.rank != 1 or not xs.type.element.is_int:
        raise TypeMismatchError("np.bincount needs a 1-D array of non-negative integers")
    least = static_int(lw, minlength, "minlength")
    if least < 0:
        raise ShapeInferenceError("'minlength' must not be negative")
    n = lw.em.dims(xs)[0]
    ok = call_numpy(lw, "all", [apply_ufunc(lw.em, "greater_equal", [xs, 0])], {})
    lw.em.op(func.AssertOp([ok.value], [], {  # type: ignore[union-attr]
        "message": "'list' argument must have no negative elements", "kind": "shape"}))
    top = call_numpy(lw, "max", [call_numpy(lw, "concatenate", [[
        lw.em.cast(xs, i64), lw.em.constant_array([least - 1])]], {})], {})
    length = lw.em.cast_scalar(apply_ufunc(lw.em, "add", [top, 1]), index)  # type: ignore
    elem = i64 if weights is None else f64
    out = lw.em.alloc((Scalar(length.value, weak=True, lo=least),), elem)
    lw.em.write(lw.em.scalar(0, elem), out)
    arr, keys = _hide(lw, out, "bco"), _hide(lw, xs, "bcx")
    amount: ast.expr = ast.Constant(value=1)
    if weights is not None:
        w = lw.em.cast(array_arg(lw, weights), f64)
        if tuple(lw.em.dims(w)) != tuple(lw.em.dims(xs)) and all(
                isinstance(d, int) for d in (*lw.em.dims(w), n)):
            raise ShapeInferenceError("The weights and list don't have the same length.")
        amount = ast.Subscript(value=_name(_hide(lw, w, "bcw")), slice=None, ctx=ast.Load())

    def body(k: str) -> list[ast.stmt]:
        if isinstance(amount, ast.Subscript):
            amount.slice = _name(k)
        key = ast.Subscript(value=_name(keys), slice=_name(k), ctx=ast.Load())
        return [ast.AugAssign(target=ast.Subscript(value=_name(arr), slice=key,
                                                   ctx=ast.Store()), op=ast.Add(),
                              value=amount)]
    _run_loop(lw, n, body)
    return lw.scope[arr]
