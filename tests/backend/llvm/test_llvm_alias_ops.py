"""``mem.disjoint`` / ``mem.same_view``: the CPU emitter and the interpreter's semantics
against a brute-force reference built from every element's address, on pairs of views
of one array (shifted, reversed, transposed, strided, broadcast-like, empty) and of two
arrays, in several dtypes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from llvmkit import both, compile_ir

from pyasc.ir import parse_module
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.verifier import verify_module


def _module(elem_a: str, elem_b: str) -> str:
    ta = f"memref<?x?x{elem_a}, strided<[?, ?]>>"
    tb = f"memref<?x?x{elem_b}, strided<[?, ?]>>"
    return f"""
"builtin.module"() ({{
  "func.func"() ({{
  ^bb0(%a: {ta}, %b: {tb}):
    %d = "mem.disjoint"(%a, %b) : ({ta}, {tb}) -> i1
    %s = "mem.same_view"(%a, %b) : ({ta}, {tb}) -> i1
    "func.return"(%d, %s) : (i1, i1) -> ()
  }}) {{function_type = ({ta}, {tb}) -> (i1, i1), sym_name = "f"}} : () -> ()
}}) : () -> ()
"""


def _addresses(a: np.ndarray) -> np.ndarray:
    """The address of every element of ``a``, in ``a``'s index order."""
    start = a.__array_interface__["data"][0]
    idx = np.indices(a.shape).reshape(a.ndim, -1)
    return start + (np.asarray(a.strides)[:, None] * idx).sum(axis=0)


def _reference(a: np.ndarray, b: np.ndarray) -> tuple[bool, bool]:
    """(byte spans apart, same elements in the same order), element by element."""
    ea, eb = _addresses(a), _addresses(b)
    if ea.size == 0 or eb.size == 0:
        apart = True
    else:
        apart = (ea.max() + a.itemsize <= eb.min()) or (eb.max() + b.itemsize <= ea.min())
    same = (a.shape == b.shape and a.itemsize == b.itemsize
            and bool(np.array_equal(ea, eb)))
    return bool(apart), same


BASE = np.arange(7 * 9, dtype=np.float32).reshape(7, 9)
VIEWS = {
    "whole": lambda x: x, "rows_lo": lambda x: x[:3], "rows_hi": lambda x: x[3:],
    "rows_mid": lambda x: x[2:5], "shift1": lambda x: x[1:4], "rev": lambda x: x[::-1],
    "rev_cols": lambda x: x[:, ::-1], "cols": lambda x: x[:, 2:5], "step": lambda x: x[::2, 1::3],
    "T": lambda x: x[:7, :7].T, "sq": lambda x: x[:7, :7], "empty": lambda x: x[3:3],
    "one": lambda x: x[4:5, 2:3], "other_one": lambda x: x[6:7, 8:9],
    "row_as_2d": lambda x: x[2:3], "flat_tail": lambda x: x.reshape(1, 63)[:, 30:],
}


def _pairs() -> list[tuple[str, str]]:
    return list(itertools.product(VIEWS, repeat=2))


@pytest.fixture(scope="module")
def f32_kernel():
    return compile_ir(_module("f32", "f32"))


@pytest.mark.parametrize("pair", _pairs(), ids=lambda p: f"{p[0]}-{p[1]}")
def test_views_of_one_array_match_the_element_addresses(f32_kernel, pair):
    base = BASE.copy()
    a, b = VIEWS[pair[0]](base), VIEWS[pair[1]](base)
    expected = _reference(a, b)
    got = both(f32_kernel, [a, b])
    assert (bool(got[0]), bool(got[1])) == expected
    interp = Interpreter(parse_module(_module("f32", "f32"))).call("f", a, b)
    assert (bool(interp[0]), bool(interp[1])) == expected


def test_separate_arrays_are_disjoint_and_never_the_same_view(f32_kernel):
    x, y = BASE.copy(), BASE.copy()
    d, s = both(f32_kernel, [x, y])
    assert bool(d) and not bool(s)


@pytest.mark.parametrize("other", ["i32", "f64", "i8"])
def test_another_element_type_over_the_same_bytes(other):
    """A reinterpreting view (``x.view(np.int32)``) shares bytes: never disjoint; the
    same view only with the same element size."""
    kernel = compile_ir(_module("f32", other))
    base = np.arange(7 * 8, dtype=np.float32).reshape(7, 8)
    dtype = {"i32": np.int32, "f64": np.float64, "i8": np.int8}[other]
    for a, b in [(base, base.view(dtype)), (base[1:], base.view(dtype)[:2])]:
        expected = _reference(a, b)
        got = both(kernel, [a, b])
        assert (bool(got[0]), bool(got[1])) == expected
        interp = Interpreter(parse_module(_module("f32", other))).call("f", a, b)
        assert (bool(interp[0]), bool(interp[1])) == expected


@pytest.mark.parametrize("bad, message", [
    ('"mem.disjoint"(%a, %t) : (memref<4xf32>, tensor<4xf32>) -> i1', "memref"),
    ('"mem.same_view"(%a, %a) : (memref<4xf32>, memref<4xf32>) -> i32', "i1"),
])
def test_verify_rejects_non_buffers_and_non_i1_results(bad, message):
    text = f"""
"builtin.module"() ({{
  "func.func"() ({{
  ^bb0(%a: memref<4xf32>, %t: tensor<4xf32>):
    %r = {bad}
    "func.return"() : () -> ()
  }}) {{function_type = (memref<4xf32>, tensor<4xf32>) -> (), sym_name = "f"}} : () -> ()
}}) : () -> ()
"""
    with pytest.raises(Exception, match=message):
        verify_module(parse_module(text))
