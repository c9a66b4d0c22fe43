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

``...`` stands for the same fresh letters in every operand, right-aligned and
broadcast (a size-1 axis takes the other operands' size).  The result dtype is
``np.result_type`` of the operands (numpy's einsum keeps small integer types: no
accumulator promotion).  ``out=`` is not supported.
"""

from __future__ import annotations

from string import ascii_letters

from pyasc.errors import ShapeInferenceError, TypeMismatchError, UnsupportedNumpyError
from pyasc.frontend import indexmath
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.npfuncs.common import array_arg, as_dtype
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.promotion import result_type
from pyasc.frontend.values import Dim, Tensor

Term = tuple[Tensor, str]  # an operand and the letter of each of its axes


def parse(spec: str, ranks: list[int]) -> tuple[list[str], str, str]:
    """The input letter strings, the output letters and the letters standing for
    ``...`` (right-aligned across operands, as numpy broadcasts them)."""
    spec = spec.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ranks):
        raise TypeMismatchError(f"np.einsum: {len(terms)} subscripts for {len(ranks)} "
                                "operands")
    if not all(t.replace("...", "").isalpha() or t.replace("...", "") == ""
               for t in [*terms, output]) or any(t.count("...") > 1 for t in terms):
        raise TypeMismatchError(f"np.einsum: invalid subscripts {spec!r}")
    spare = [c for c in ascii_letters if c not in spec]
    widths = [r - len(t.replace("...", "")) if "..." in t else 0
              for t, r in zip(terms, ranks, strict=True)]
    ellipsis = "".join(spare[:max(widths, default=0)])
    terms = [t.replace("...", ellipsis[len(ellipsis) - w:]) for t, w in zip(terms, widths,
                                                                           strict=True)]
    if not arrow:  # implicit mode: ... first, then the letters seen once, sorted
        letters = "".join(terms)
        output = ellipsis + "".join(sorted(c for c in set(letters) - set(ellipsis)
                                           if letters.count(c) == 1))
    elif "..." in output:
        output = output.replace("...", ellipsis)
    elif ellipsis:
        raise ShapeInferenceError("output has more dimensions than subscripts given in "
                                  "einstein sum, but no '...' ellipsis provided to "
                                  "broadcast the extra dimensions.")
    if len(set(output)) != len(output) or not set(output) <= set("".join(terms)):
        raise TypeMismatchError(f"np.einsum: invalid output subscripts {output!r}")
    return terms, output, ellipsis


def _sizes(lw, terms: list[Term], ellipsis: str) -> dict[str, Dim]:
    """The size of each letter; a ``...`` axis of size 1 broadcasts, as in numpy."""
    sizes: dict[str, Dim] = {}
    for x, letters in terms:
        if len(letters) != x.type.rank:
            raise ShapeInferenceError(f"np.einsum: subscripts {letters!r} for an operand "
                                      f"of {x.type.rank} dimensions")
        for c, d in zip(letters, lw.em.dims(x), strict=True):
            old = sizes.get(c)
            if c in ellipsis and (old == 1 or d == 1):
                sizes[c] = d if old in (None, 1) else old
            elif isinstance(old, int) and isinstance(d, int) and old != d:
                raise ShapeInferenceError(f"np.einsum: size of label '{c}' is {old} in one "
                                          f"place and {d} in another")
            elif old is None or not isinstance(old, int):
                sizes[c] = d
    return sizes


def _broadcast(lw, term: Term, sizes: dict[str, Dim]) -> Term:
    """A ``...`` axis of size 1 broadcast to the other operands' size."""
    x, letters = term
    want = [sizes[c] for c in letters]
    if all(a == b for a, b in zip(lw.em.dims(x), want, strict=True)):
        return term
    return lw.em.broadcast(x, want), letters


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
    xs = [array_arg(lw, v) for v in operands]
    letters, output, ellipsis = parse(spec, [x.type.rank for x in xs])
    t, _ = result_type(xs)
    t = as_dtype(lw, dtype) or t
    terms = [(lw.em.cast(x, t), s) for x, s in zip(xs, letters, strict=True)]
    sizes = _sizes(lw, terms, ellipsis)  # type: ignore[arg-type]
    terms = [_diagonal(lw, _broadcast(lw, term, sizes), sizes)  # type: ignore[arg-type]
             for term in terms]
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
