"""Expression rules: constants, names, attributes, operators, conditionals, displays.

Operators on numbers and arrays go through the ufunc table (``elementwise``);
operators on other compile-time values (tuples, strings, dtypes) are evaluated by
Python.  ``and``/``or``/ternaries keep Python's short-circuit semantics: a compile-time
condition picks a side, a run-time one becomes ``arith.select`` (both sides cheap and
safe) or a ``loop.if``.
"""

from __future__ import annotations

import ast
import operator

from pyasc.errors import TypeMismatchError, UnsupportedSyntaxError
from pyasc.frontend import calls, sequences
from pyasc.frontend.conditional import branch_condition, select_value
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.indexing import load_subscript
from pyasc.frontend.iteration import iteration
from pyasc.frontend.lowering import Lowering, expr_rule
from pyasc.frontend.merge import KEEP
from pyasc.frontend.operators import binary
from pyasc.frontend.plainfuncs import lambda_def, local_function
from pyasc.frontend.truth import logical_not, truth
from pyasc.frontend.values import Buffer, Scalar, Tensor, is_runtime

_CONSTANT_TYPES = (bool, int, float, str, type(None), type(Ellipsis))


@expr_rule(ast.Constant)
def lower_constant(lw: Lowering, node: ast.Constant) -> object:
    """Literals: numbers, strings, None and ``...`` stay compile-time values."""
    if not isinstance(node.value, _CONSTANT_TYPES):
        raise lw.error(TypeMismatchError, f"{type(node.value).__name__} constants are not "
                       "supported", node, hint="use int, float or bool values")
    return node.value


@expr_rule(ast.Name)
def lower_name(lw: Lowering, node: ast.Name) -> object:
    """A name: local, closure, global or builtin."""
    return lw.lookup(node.id, node)


@expr_rule(ast.Attribute)
def lower_attribute(lw: Lowering, node: ast.Attribute) -> object:
    """``obj.attr``: numpy/math module members, array attributes and methods."""
    from pyasc.frontend.environment import get_attribute

    return get_attribute(lw, lw.expr(node.value), node.attr, node)


@expr_rule(ast.BinOp)
def lower_binop(lw: Lowering, node: ast.BinOp) -> object:
    """Binary operators with Python/numpy semantics."""
    left = lw.expr(node.left)
    right = lw.expr(node.right)
    return binary(lw, node.op, left, right)


_UNARY = {ast.USub: "negative", ast.UAdd: "positive", ast.Invert: "invert"}
_PY_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


@expr_rule(ast.UnaryOp)
def lower_unary(lw: Lowering, node: ast.UnaryOp) -> object:
    """``-x``, ``+x``, ``~x`` and ``not x``."""
    v = lw.expr(node.operand)
    if isinstance(node.op, ast.Not):
        return logical_not(lw, v)
    if not isinstance(v, int | float | Scalar | Tensor | Buffer):
        try:
            return _PY_UNARY[type(node.op)](v)
        except TypeError as exc:
            raise TypeMismatchError(str(exc)) from None
    return apply_ufunc(lw.em, _UNARY[type(node.op)], [v], python_op=True)


@expr_rule(ast.BoolOp)
def lower_boolop(lw: Lowering, node: ast.BoolOp) -> object:
    """``and``/``or`` with Python's short-circuit value semantics."""
    is_and = isinstance(node.op, ast.And)
    value = lw.expr(node.values[0])
    for rest in node.values[1:]:
        value = _short_circuit(lw, value, lambda n=rest: lw.expr(n), is_and)
    return value


def _short_circuit(lw: Lowering, left: object, right, is_and: bool) -> object:
    """``left and right()`` / ``left or right()`` with Python's value semantics."""
    t = truth(lw, left)
    if isinstance(t, bool):
        return right() if t == is_and else left
    if is_and:
        return select_value(lw, t.value, right, lambda: left)
    return select_value(lw, t.value, lambda: left, right)


@expr_rule(ast.IfExp)
def lower_ifexp(lw: Lowering, node: ast.IfExp) -> object:
    """``a if c else b``."""
    t = branch_condition(lw, node.test)
    if isinstance(t, bool):
        return lw.expr(node.body if t else node.orelse)
    return select_value(lw, t.value, lambda: lw.expr(node.body), lambda: lw.expr(node.orelse),
                        KEEP if id(node) in lw.view_choices else "")


_COMPARE = {ast.Eq: "equal", ast.NotEq: "not_equal", ast.Lt: "less", ast.LtE: "less_equal",
            ast.Gt: "greater", ast.GtE: "greater_equal"}
_PY_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
               ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}


@expr_rule(ast.Compare)
def lower_compare(lw: Lowering, node: ast.Compare) -> object:
    """Comparisons, including chains (``0 < i < n``)."""
    left = lw.expr(node.left)
    result: object = None
    for op, comparator in zip(node.ops, node.comparators, strict=True):
        right = lw.expr(comparator)
        r = compare(lw, op, left, right)
        result = r if result is None else _short_circuit(lw, result, lambda r=r: r, True)
        if result is False:
            return False
        left = right
    return result


def compare(lw: Lowering, op: ast.cmpop, a: object, b: object) -> object:
    """One comparison with Python/numpy semantics."""
    if isinstance(op, ast.Is | ast.IsNot):
        same = a is b or (is_runtime(a) and is_runtime(b) and a.value is b.value)  # type: ignore
        return same if isinstance(op, ast.Is) else not same
    if isinstance(op, ast.In | ast.NotIn):
        found = _contains(lw, b, a)
        return found if isinstance(op, ast.In) else logical_not(lw, found)
    numeric = (int, float, Scalar, Tensor, Buffer)
    if not isinstance(a, numeric) or not isinstance(b, numeric):
        if is_runtime(a) or is_runtime(b):
            raise TypeMismatchError(f"cannot compare {type(a).__name__} with "
                                    f"{type(b).__name__}")
        if _holds_runtime(a) or _holds_runtime(b):
            return _compare_sequences(lw, op, a, b)
        return _PY_COMPARE[type(op)](a, b)
    return apply_ufunc(lw.em, _COMPARE[type(op)], [a, b], python_op=True)


def _holds_runtime(v: object) -> bool:
    """A tuple or list with a run-time value somewhere inside."""
    return isinstance(v, tuple | list) and any(is_runtime(x) or _holds_runtime(x) for x in v)


def _compare_sequences(lw: Lowering, op: ast.cmpop, a: object, b: object) -> object:
    """Python's tuple/list comparison when items are run-time values: equality item by
    item, ordering by the first unequal item (then by length).  Python's own operators
    would compare the frontend's value objects by identity: a silently wrong answer."""
    if type(a) is not type(b) or not isinstance(a, tuple | list):
        if isinstance(op, ast.Eq | ast.NotEq):  # a tuple never equals a list or number
            return isinstance(op, ast.NotEq)
        raise TypeMismatchError(f"'{_OP_TEXT[type(op)]}' not supported between "
                                f"{type(a).__name__} and {type(b).__name__}")
    if isinstance(op, ast.Eq | ast.NotEq):
        same: object = len(a) == len(b)
        for x, y in zip(a, b, strict=False):
            same = _short_circuit(lw, same, lambda x=x, y=y: _equal(lw, x, y), True)
        same = _python_bool(same)
        return same if isinstance(op, ast.Eq) else logical_not(lw, same)
    # ordering: the first unequal items decide (their comparison's value and kind:
    # np.bool_ for numpy scalars), else the lengths (a Python bool); where which one
    # decides is only known at run time, the kind is that of the items' comparisons
    result: object = _PY_COMPARE[type(op)](len(a), len(b))
    for x, y in reversed(list(zip(a, b, strict=False))):
        t = _equal(lw, x, y)
        if isinstance(t, bool):
            result = result if t else compare(lw, op, x, y)
        else:
            result = select_value(lw, t.value, lambda r=result: r,
                                  lambda x=x, y=y: compare(lw, op, x, y))
    return result


_OP_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def _contains(lw: Lowering, container: object, item: object) -> object:
    if not isinstance(container, tuple | list | str):
        raise TypeMismatchError("'in' needs a tuple, list or string known at compile time")
    if not is_runtime(item) and not _holds_runtime(item) and not _holds_runtime(container):
        return item in container
    found: object = False
    for c in container:  # Python's ``in``: item == c (as bool) until one holds
        found = _short_circuit(lw, found, lambda c=c: _equal(lw, item, c), False)
    return _python_bool(found)


def _equal(lw: Lowering, x: object, y: object) -> bool | Scalar:
    """``bool(x == y)``."""
    return truth(lw, compare(lw, ast.Eq(), x, y))


def _python_bool(v: object) -> object:
    """A truth value of Python's ``bool`` kind (not ``np.bool_``), as ``==`` of tuples
    and ``in`` return whatever their items compare to."""
    return Scalar(v.value, weak=True) if isinstance(v, Scalar) else v


@expr_rule(ast.Tuple, ast.List)
def lower_display(lw: Lowering, node: ast.Tuple | ast.List) -> object:
    """Tuple and list displays (with ``*`` unpacking of compile-time sequences)."""
    items: list[object] = []
    for elt in node.elts:
        if isinstance(elt, ast.Starred):
            items.extend(calls.starred_items(lw, elt))
        else:
            items.append(lw.expr(elt))
    return tuple(items) if isinstance(node, ast.Tuple) else sequences.record(lw, items)


@expr_rule(ast.ListComp)
def lower_list_comprehension(lw: Lowering, node: ast.ListComp) -> list:
    """``[f(x, k) for k in range(3)]`` over a compile-time range or sequence."""
    return sequences.comprehension(lw, node, lambda value: static_items(lw, value))


def static_items(lw: Lowering, value: object) -> list | None:
    """The items of an iterable known at compile time, else None."""
    it = iteration(lw, value)
    if isinstance(it, list):
        return it
    rng, item = it
    if not all(isinstance(b, int) for b in (rng.start, rng.stop, rng.step)):
        return None
    return [item(k) for k in range(rng.start, rng.stop, rng.step)]


@expr_rule(ast.Slice)
def lower_slice(lw: Lowering, node: ast.Slice) -> slice:
    """A slice inside a subscript: a Python slice of frontend values."""
    parts = [None if n is None else lw.expr(n) for n in (node.lower, node.upper, node.step)]
    return slice(*parts)


@expr_rule(ast.JoinedStr)
def lower_fstring(lw: Lowering, node: ast.JoinedStr) -> str:
    """f-strings of compile-time values (assert messages)."""
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
            continue
        assert isinstance(part, ast.FormattedValue)
        value = lw.expr(part.value)
        if is_runtime(value):
            raise lw.error(UnsupportedSyntaxError, "f-strings may only format values "
                           "known at compile time", part.value)
        spec = lower_fstring(lw, part.format_spec) if part.format_spec else ""
        out.append(format(value, spec))
    return "".join(out)


@expr_rule(ast.Subscript)
def lower_subscript(lw: Lowering, node: ast.Subscript) -> object:
    """``x[...]`` reads."""
    return load_subscript(lw, node)


@expr_rule(ast.Call)
def lower_call(lw: Lowering, node: ast.Call) -> object:
    """Calls (see ``calls``)."""
    return calls.lower_call(lw, node)



@expr_rule(ast.Lambda)
def lower_lambda(lw: Lowering, node: ast.Lambda) -> object:
    """``lambda``: a local function, inlined where it is called (``plainfuncs``)."""
    return local_function(lw, lambda_def(node, "<lambda>"))
