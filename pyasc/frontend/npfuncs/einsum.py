"""``np.einsum`` with subscripts (explicit ``'ij,jk->ik'`` or implicit ``'ij,jk'``).

The subscripts are read at compile time and the product becomes the ops pyasc already
has, so a contraction reaches the matrix unit wherever ``matmul`` does:

1. a letter repeated in one operand (``'ii'``, a trace or a diagonal) takes the
   diagonal: both axes moved last, merged, and every ``n + 1``-th element taken;
2. a letter found in one operand only and not in the output is summed away first;
3. operands are contracted left to right, two at a time, as one ``matmul``: each is
   transposed to ``(batch, free, contracted)`` / ``(batch, contracted, free)``,
   reshaped to 3-D (2-D without batch letters) and the product reshaped back;
4. the result is summed over letters the output does not keep and transposed to the
   output's order.

The result dtype is ``np.result_type`` of the operands (numpy's einsum keeps small
integer types: no accumulator promotion).  ``...`` (ellipsis) subscripts and
``out=`` are not supported.
"""

from __future__ import annotations

from pyasc.errors import ShapeInferenceError, TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend import indexmath
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.npfuncs.common import array_arg, as_dtype
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.promotion import result_type
from pyasc.frontend.values import Dim, Tensor

Term = tuple[Tensor, str]  # an operand and the letter of each of its axes


def parse(spec: str, count: int) -> tuple[list[str], str]:
    """The input letter strings and the output letters of ``spec``."""
    spec = spec.replace(" ", "")
    if "." in spec:
        raise UnsupportedNumpyError("np.einsum with '...' subscripts is not supported",
                                    hint="name every axis with a letter")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise TypeMismatchError(f"np.einsum: {len(terms)} subscripts for {count} operands")
    if not all(t.isalpha() or t == "" for t in [*terms, output]):
        raise TypeMismatchError(f"np.einsum: invalid subscripts {spec!r}")
    if not arrow:  # implicit mode: the letters seen once, in alphabetical order
        letters = "".join(terms)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(output)) != len(output) or not set(output) <= set("".join(terms)):
        raise TypeMismatchError(f"np.einsum: invalid output subscripts {output!r}")
    return terms, output


def _sizes(lw, terms: list[Term]) -> dict[str, Dim]:
    sizes: dict[str, Dim] = {}
    for x, letters in terms:
        if len(letters) != x.type.rank:
            raise ShapeInferenceError(f"np.einsum: subscripts {letters!r} for an operand "
                                      f"of {x.type.rank} dimensions")
        for c, d in zip(letters, lw.em.dims(x), strict=True):
            old = sizes.get(c)
            if isinstance(old, int) and isinstance(d, int) and old != d:
                raise ShapeInferenceError(f"np.einsum: size of label '{c}' is {old} in one "
                                          f"place and {d} in another")
            if old is None or not isinstance(old, int):
                sizes[c] = d
    return sizes


def _transpose(lw, term: Term, order: str) -> Tensor:
    x, letters = term
    if letters == order:
        return x
    free = list(range(len(letters)))
    perm = tuple(free.pop(next(k for k, i in enumerate(free) if letters[i] == c))
                 for c in order)  # a repeated letter's axes in their order
    return array_arg(lw, call_numpy(lw, "transpose", [x, perm], {}))


def _diagonal(lw, term: Term, sizes: dict[str, Dim]) -> Term:
    """Step 1: one axis per letter (the diagonal of repeated letters)."""
    x, letters = term
    for c in dict.fromkeys(letters):
        if letters.count(c) == 1:
            continue
        rest = "".join(k for k in letters if k != c)
        x = _transpose(lw, (x, letters), rest + c * letters.count(c))
        n, stride, power = sizes[c], 0, 1
        for _ in range(letters.count(c)):  # (i, i, ..., i) is i * (1 + n + n**2 ...)
            stride, power = indexmath.add(lw.em, stride, power), indexmath.mul(lw.em, power, n)
        x = lw.em.reshape(x, [*lw.em.dims(x)[:len(rest)], power])
        iota = array_arg(lw, call_numpy(lw, "arange", [n], {}))
        idx = apply_ufunc(lw.em, "multiply", [iota, stride])
        x = array_arg(lw, call_numpy(lw, "take", [x, idx], {"axis": len(rest)}))
        letters = rest + c
    return x, letters


def _sum_out(lw, term: Term, drop: set[str]) -> Term:
    """Sum over the letters in ``drop`` (keeping the dtype, as einsum does)."""
    x, letters = term
    axes = tuple(i for i, c in enumerate(letters) if c in drop)
    if not axes:
        return term
    dt = x.type.element.to_numpy().name
    s = call_numpy(lw, "sum", [x], {"axis": axes, "dtype": dt})
    return array_arg(lw, s), "".join(c for c in letters if c not in drop)


def _group(lw, sizes: dict[str, Dim], letters: str) -> Dim:
    n: Dim = 1
    for c in letters:
        n = indexmath.mul(lw.em, n, sizes[c])
    return n


def _contract(lw, a: Term, b: Term, keep: set[str], sizes: dict[str, Dim]) -> Term:
    """Step 3: ``a`` times ``b`` summed over their shared letters not in ``keep``."""
    shared = [c for c in a[1] if c in b[1]]
    batch = "".join(c for c in shared if c in keep)
    inner = "".join(c for c in shared if c not in keep)
    free_a = "".join(c for c in a[1] if c not in shared)
    free_b = "".join(c for c in b[1] if c not in shared)
    groups = [_group(lw, sizes, g) for g in (batch, free_a, inner, free_b)]
    lead = [groups[0]] if batch else []
    x = lw.em.reshape(_transpose(lw, a, batch + free_a + inner), [*lead, *groups[1:3]])
    y = lw.em.reshape(_transpose(lw, b, batch + inner + free_b), [*lead, *groups[2:]])
    product = array_arg(lw, call_numpy(lw, "matmul", [x, y], {}))
    letters = batch + free_a + free_b
    return lw.em.reshape(product, [sizes[c] for c in letters]), letters


@register("einsum")
def einsum(lw, subscripts, /, *operands, dtype=None, optimize=False):
    """Einstein summation with letter subscripts, as transposes, reductions and matmul"""
    spec = lw.static(subscripts, "subscripts")
    if not isinstance(spec, str):
        raise UnsupportedNumpyError("np.einsum needs its subscripts as a string")
    letters, output = parse(spec, len(operands))
    xs = [array_arg(lw, v) for v in operands]
    t, _ = result_type(xs)
    t = as_dtype(lw, dtype) or t
    terms = [(lw.em.cast(x, t), s) for x, s in zip(xs, letters, strict=True)]
    sizes = _sizes(lw, terms)  # type: ignore[arg-type]
    terms = [_diagonal(lw, term, sizes) for term in terms]  # type: ignore[arg-type]
    for i, term in enumerate(terms):
        elsewhere = set(output).union(*(s for j, (_, s) in enumerate(terms) if j != i))
        terms[i] = _sum_out(lw, term, set(term[1]) - elsewhere)
    acc = terms[0]
    for k, term in enumerate(terms[1:], start=2):
        keep = set(output).union(*(s for _, s in terms[k:]))
        acc = _contract(lw, acc, term, keep, sizes)
    acc = _sum_out(lw, acc, set(acc[1]) - set(output))
    return _transpose(lw, acc, output) if output else \
        call_numpy(lw, "sum", [acc[0]], {"dtype": t.to_numpy().name})
