"""Matrix products in generated programs: ``x @ y``, ``np.matmul``, ``np.dot`` and
``x.dot(y)`` of 1-d and 2-d operands (vector-vector, matrix-vector, vector-matrix,
matrix-matrix), the second operand a name or a transposed name whose contracted dim
matches the first's.

Products of integers wrap like numpy's (the order of the additions does not matter
modulo 2**k); float products are fuzzy: each output sums ``k`` terms (the contracted
dim), added to the program's budget.
"""

from __future__ import annotations

from progen_expr import Expr, ExprGen, bshape, dim_size

FORMS = ("({x} @ {y})", "np.matmul({x}, {y})", "np.dot({x}, {y})", "{x}.dot({y})")


def product_shape(x: tuple[str, ...], y: tuple[str, ...]) -> tuple[str, ...] | None:
    """numpy's matmul shape rule for 1-d and 2-d operands, or None if they do not fit."""
    if not (1 <= len(x) <= 2 and 1 <= len(y) <= 2):
        return None
    inner_y = y[0] if len(y) == 1 else y[-2]
    if x[-1] != inner_y:
        return None
    return x[:-1] + y[1:] if len(y) == 2 else x[:-1]


def partners(gen: ExprGen, k: str, exact: bool) -> list[tuple[str, tuple[str, ...], bool]]:
    """Names (or their transposes) whose leading (1-d) or second-to-last dim is ``k``."""
    out = []
    for name, shape in gen.scope.shapes.items():
        fuzzy = gen.scope.fuzzy[name]
        if exact and fuzzy:
            continue
        if shape and shape[0] == k and len(shape) <= 2:
            out.append((name, shape, fuzzy))
        if len(shape) == 2 and shape[1] == k:
            out.append((f"{name}.T", (shape[1], shape[0]), fuzzy))
    return out


def matmul_rule(gen: ExprGen, depth: int, within, exact: bool) -> Expr | None:
    """A matrix product of a random expression with a fitting name (see the module)."""
    x = gen.expr(depth - 1, None, exact)
    if not 1 <= len(x.shape) <= 2:
        return None
    cands = partners(gen, x.shape[-1], exact)
    if not cands:
        return None
    y_text, y_shape, y_fuzzy = gen.pick(cands)
    shape = product_shape(x.shape, y_shape)
    if shape is None or (within is not None and bshape(shape, within) != within):
        return None
    form = gen.pick(FORMS)
    if form.startswith("{x}.") and x.sig[:1] != ("array",):
        return None
    e = gen.scope.expr(form.format(x=x.text, y=y_text), shape, x.fuzzy or y_fuzzy)
    if e is None:
        return None
    if "float" in e.dtype:
        if exact:
            return None
        gen.terms += max(dim_size(x.shape[-1], gen.sizes), 1)
        gen.work.add(e.dtype)
        return Expr(e.text, e.shape, True, e.sig)
    return e
