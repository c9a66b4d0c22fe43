"""Differential tests of ``np.einsum``: contractions, transposes, traces, diagonals,
batch letters, chains of three operands, implicit output and ``...`` (broadcast), on the interpreter, the
CPU backend and ascend-sim; a contraction is a ``tensor.matmul`` (the cube unit's
``Mmad`` on the device)."""

from __future__ import annotations

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, SUM, check, in_layout, rand

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")


@hybrid
def products(a, b, c, v):
    return (np.einsum("ij,jk->ik", a, b), np.einsum("ij->ji", a), np.einsum("ii->", c),
            np.einsum("ii->i", c), np.einsum("ij,jk", a, b),
            np.einsum("bij,bkj->bik", v, v), np.einsum("i,i->", a[0], a[1]),
            np.einsum("i,j->ij", a[0], b[0]), np.einsum("ij->", a), np.einsum("ij->j", a),
            np.einsum("ij,ij->i", a, a), np.einsum("ij,jk,kl->il", a, b, c),
            np.einsum("ii", c), np.einsum("bij->jbi", v), np.einsum("bij,jk->bki", v, c),
            np.einsum("ijk->k", v), np.einsum("iji->ij", v[:, :2, :2]),
            np.einsum("ij,kj->ikj", a, a), np.einsum("ba,ca->bc", b, c),
            np.einsum("...ij,jk->...ik", v, c), np.einsum("...ij,jk", v, c),
            np.einsum("i...,i...->...", a[:3], c), np.einsum("...j,j", v[:, :1], c[0]),
            np.einsum("...", a), np.einsum("b...j,...jk->b...k", v, c))


def operands(dtype: str, layout: str) -> tuple[np.ndarray, ...]:
    shapes = [(4, 5), (5, 3), (3, 3), (2, 4, 3)]
    return tuple(in_layout(rand(s, dtype, seed=k), layout) for k, s in enumerate(shapes))


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int16"])
@pytest.mark.parametrize("layout", ["C", "step2", "transposed"])
def test_einsum(dtype, layout):
    device = dtype in ("float32", "float16") and layout == "C"
    check(products, *operands(dtype, layout), runners=RUNNERS if device else DEFAULT_RUNNERS,
          rtol=SUM(15, 3))


def test_einsum_with_runtime_sizes():
    fn = hybrid(dynamic_shape=True)(products.__wrapped__)
    check(fn, *operands("float64", "C"), runners=("ir", "cpu"), rtol=SUM(15, 3))


def test_a_contraction_is_one_matmul():
    @hybrid
    def contract(a, b):
        return np.einsum("ik,kj->ij", a, b), np.einsum("bik,bkj->bij", a[None], b[None])

    text = contract.ir(np.ones((8, 4), np.float32), np.ones((4, 6), np.float32))
    assert text.count("tensor.matmul") == 2 and "tensor.sum" not in text


def test_einsum_on_the_cube_unit():
    @hybrid(target="ascend-sim")
    def mm(a, b):
        return np.einsum("ik,kj->ij", a, b)

    a, b = rand((32, 64), "float16"), rand((64, 16), "float16", 1)
    assert "Mmad" in str(mm.ascendc(a, b))
    check(mm, a, b, runners=("ascend-sim",), rtol=SUM(64))


@pytest.mark.parametrize("spec, message", [
    ("...->", "no '...' ellipsis"), ("ij,jk->ik,", "subscripts"), ("ij->ii", "output"),
    ("ijk->i", "operand of 2 dimensions"), ("ij,ij->ij", "2 subscripts for 1 operands")])
def test_einsum_errors(spec, message):
    @hybrid
    def bad(a):
        return np.einsum(spec, a)

    with pytest.raises(errors.PyascError, match=message):
        bad(np.ones((2, 2)))

