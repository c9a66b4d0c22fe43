"""A call of a ``@hybrid`` function that has a registered gradient, for automatic
differentiation: ``autodiff.custom_vjp`` instead of a plain inlined body.

Only when the build option :data:`AUTODIFF_CALLS` is set (the IR that
``pyasc.ir.autodiff`` differentiates; a forward compiled to run never has it): the
callee's body is inlined into the op's ``forward`` region and its registered gradient
(called as ``fn.vjp`` calls it: the inputs as bound, defaults filled in, then ``dout``)
into its ``backward`` region, so the transform uses the registered gradient there.
A call whose result is not one array or scalar is inlined plainly.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections.abc import Callable

from pyasc.errors import ArgumentError, TypeMismatchError
from pyasc.frontend.callee import Callee
from pyasc.frontend.lowering import Lowering
from pyasc.frontend.values import Buffer, Scalar, Tensor
from pyasc.ir.core import Block, Region
from pyasc.ir.ops import loop
from pyasc.ir.ops.autodiff import CustomVjpOp
from pyasc.ir.types import MemRefType

AUTODIFF_CALLS = "autodiff_calls"
"""The build option that keeps calls of functions with a registered gradient whole."""

Inline = Callable[[Lowering, Callee, list, dict, ast.Call], object]
RUNTIME = (Tensor, Buffer, Scalar)


def inline_custom_vjp(lw: Lowering, hf: Callee, grad: Callee, args: list,
                      kwargs: dict, node: ast.Call, inline: Inline) -> object:
    """Lower the call of ``hf`` (``inline`` lowers a body in place) as a custom_vjp."""
    try:
        bound = hf.__signature__.bind(*args, **kwargs)
    except TypeError as exc:
        raise lw.error(ArgumentError, f"{hf.__name__}(): {exc}", node) from None
    bound.apply_defaults()
    params = hf.__signature__.parameters
    items = list(bound.arguments.items())
    if any(params[n].kind in (inspect.Parameter.VAR_POSITIONAL,
                              inspect.Parameter.VAR_KEYWORD) for n, _ in items):
        return inline(lw, hf, args, kwargs, node)
    b = lw.em.b
    fwd = Block()
    with b.at(fwd):
        out = inline(lw, hf, args, kwargs, node)
        if isinstance(out, Tensor | Scalar):
            b.insert(loop.YieldOp([out.value]))
    if not isinstance(out, Tensor | Scalar):
        for op in list(fwd.ops):  # not one value: the plain inlined body
            b.insert(fwd.detach(op))
        return out
    bwd = Block([out.value.type])
    dout = dataclasses.replace(out, value=bwd.args[0])
    positional = [v for n, v in items if params[n].kind is not inspect.Parameter.KEYWORD_ONLY]
    keywords = {n: v for n, v in items if params[n].kind is inspect.Parameter.KEYWORD_ONLY}
    inputs = [(n, v) for n, v in items if isinstance(v, RUNTIME)]
    with b.at(bwd):
        grads = inline(lw, grad, [*positional, dout], keywords, node)
        wrt = _yield_grads(lw, grad, items, inputs, grads, node)
    op = CustomVjpOp([v.value for _, v in inputs], [out.value.type],
                     {"callee": hf.__name__, "wrt": tuple(wrt)},
                     [Region([fwd]), Region([bwd])], lw.src.location(node))
    b.insert(op)
    return dataclasses.replace(out, value=op.result)


def _yield_grads(lw: Lowering, grad: Callee, items: list, inputs: list, grads: object,
                 node: ast.Call) -> list[int]:
    """Yield the gradient of each array input (in ``inputs`` order); their indices."""
    got = list(grads) if isinstance(grads, tuple | list) else [grads]
    arrays = [n for n, v in inputs if isinstance(v, Tensor | Buffer)]
    if len(got) == len(items):
        by_name = dict(zip([n for n, _ in items], got, strict=True))
    elif len(got) == len(arrays):
        by_name = dict(zip(arrays, got, strict=True))
    else:
        raise lw.error(TypeMismatchError, f"'{grad.__name__}' returned {len(got)} "
                       f"value(s) for {len(arrays)} array input(s)", node,
                       hint="return one gradient per array input")
    wrt, values = [], []
    for k, (name, v) in enumerate(inputs):
        g = by_name.get(name)
        if name not in arrays or not isinstance(g, Tensor):
            continue
        want = v.value.type.tensor_type() if isinstance(v.value.type, MemRefType) \
            else v.value.type
        if g.value.type != want:
            raise lw.error(TypeMismatchError, f"the gradient of '{name}' from "
                           f"'{grad.__name__}' is {g.value.type}, the input {want}", node,
                           hint="a gradient has its input's shape and dtype")
        wrt.append(k)
        values.append(g.value)
    lw.em.b.insert(loop.YieldOp(values))
    return wrt
