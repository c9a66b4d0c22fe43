"""``canonicalize``: constant folding, algebraic identities and dead-op removal.

Folding evaluates a pure, region-free op whose operands are all ``arith.constant`` with
the interpreter's reference semantics (``pyasc.ir.semantics.eval_op``), so the folder
and the interpreter cannot disagree.  Scalar results are always folded; tensor results
only when static and at most ``MAX_DENSE_ELEMENTS`` elements, to keep the IR readable,
or at most ``MAX_TABLE_ELEMENTS`` when an operand is itself a tensor constant: a literal
table computed on (``np.array([[1, 4, 6, 4, 1], ...]) / 256``, ``np.outer(g, g)``,
``k / k.sum()``) is already in the IR, and left unfolded it costs a kernel at run time
beside the one that reads it.  The folded values are numpy's in the op's own dtype,
exactly what the interpreter (and so numpy) computes.
An op that fails when evaluated (an out-of-bounds slice, say) is left for run time.

The identities are the rule table of ``identities``; both run to a fixpoint with the
greedy worklist driver of ``pyasc.ir.rewrite``, which also erases ops left dead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pyasc.ir.core import DenseArray, Operation, Value
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.effects import is_dead
from pyasc.ir.passes.identities import IDENTITIES
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.rewrite import MAX_DENSE_ELEMENTS, Rewriter, constant_value, rewrite_greedily
from pyasc.ir.semantics import eval_op, np_dtype
from pyasc.ir.types import ScalarType, TensorType, Type

# What evaluating an op may raise when it would fail at run time (or cannot be
# evaluated on this host, e.g. bf16 without ml_dtypes): then the op is not folded.
_EVAL_ERRORS = (ArithmeticError, ValueError, TypeError, IndexError, NotImplementedError)


MAX_TABLE_ELEMENTS = 4096
"""Largest tensor folded from a tensor constant (a weight table; 16 KiB of float32)."""


def _foldable_type(t: Type, from_table: bool) -> bool:
    if isinstance(t, ScalarType):
        return True
    cap = MAX_TABLE_ELEMENTS if from_table else MAX_DENSE_ELEMENTS
    return isinstance(t, TensorType) and t.is_static and t.num_elements() <= cap


def _numpy_value(attr: object, t: Type) -> object:
    if isinstance(attr, DenseArray):
        return attr.array
    return np_dtype(t).type(attr)


def _fits(value: object, t: Type) -> bool:
    """The evaluated value has exactly ``t``'s dtype and shape."""
    arr = np.asarray(value)
    shape = t.shape if isinstance(t, TensorType) else ()
    return arr.dtype == np_dtype(t) and arr.shape == tuple(shape)


def fold_constants(op: Operation, rw: Rewriter) -> Sequence[Value] | None:
    """Replace a pure op over constants by constants of its evaluated results."""
    if (not op.has_trait("pure") or op.has_trait("constant") or op.region_list
            or not op.result_values):
        return None
    attrs = [constant_value(v) for v in op.operand_values]
    types = [r.type for r in op.result_values]
    if any(a is None for a in attrs):
        return None
    from_table = any(isinstance(a, DenseArray) for a in attrs)
    if not all(_foldable_type(t, from_table) for t in types):
        return None
    operands = [_numpy_value(a, v.type) for a, v in zip(attrs, op.operand_values,
                                                         strict=True)]
    try:
        with np.errstate(all="ignore"):
            results = eval_op(op, operands)
    except _EVAL_ERRORS:
        return None
    if not all(_fits(r, t) for r, t in zip(results, types, strict=True)):
        return None
    return [rw.constant(r, t) for r, t in zip(results, types, strict=True)]


@register_pass
class Canonicalize(Pass):
    """Fold constants and apply the identity rules until nothing changes."""

    name = "canonicalize"
    description = "constant folding, algebraic identities, trivially dead ops"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        rewrite_greedily(module, [fold_constants, IDENTITIES], is_dead=is_dead)
