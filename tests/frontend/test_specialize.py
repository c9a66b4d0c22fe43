"""Specialization keys: what selects a new compilation and what does not."""

from __future__ import annotations

import numpy as np
import pytest
from diff import ON_DEVICE, SUM, check, rand

from pyasc import errors, hybrid
from pyasc.frontend.signature import params_of
from pyasc.ir.types import DYN, MemRefType, f64, i1, index
from pyasc.jit.specialize import layout_of, spec_of


def make():
    @hybrid
    def f(x, k=1, flag=False):
        return x * k if flag else x + k
    return f


def specs(f):
    return list(f._specs)


def test_same_signature_compiles_once():
    f = make()
    x = np.ones((3, 4), np.float32)
    f.ir(x)
    f.ir(np.zeros((3, 4), np.float32), 5)
    f.ir(x, k=7, flag=False)
    assert len(specs(f)) == 1


@pytest.mark.parametrize("other", [
    np.ones((3, 4), np.float64),  # dtype
    np.ones((3, 5), np.float32),  # shape
    np.ones((3, 4, 1), np.float32),  # ndim
    np.ones((4, 3), np.float32).T,  # layout: transposed
    np.ones((3, 8), np.float32)[:, ::2],  # layout: strided
])
def test_dtype_shape_rank_and_layout_select_new_specializations(other):
    f = make()
    f.ir(np.ones((3, 4), np.float32))
    f.ir(other)
    assert len(specs(f)) == 2


def test_python_scalar_kinds_are_part_of_the_key_but_not_values():
    f = make()
    x = np.ones(2)
    f.ir(x, 1)
    f.ir(x, 2)
    f.ir(x, 2.5)
    f.ir(x, True)
    f.ir(x, np.float32(2))
    assert len(specs(f)) == 4


def test_dynamic_shape_shares_one_kernel_across_shapes():
    f = hybrid(dynamic_shape=True)(make().__wrapped__)
    for n in (1, 5, 17):
        f.ir(np.ones((n, 2), np.float32))
    assert len(specs(f)) == 1
    assert "memref<?x?xf32>" in f.ir(np.ones((1, 1), np.float32))


def test_layout_classes_and_memref_types():
    a = np.zeros((4, 6), np.float32)
    assert [layout_of(v) for v in (a, a[:, 1:], a[:, ::2], a.T)] == \
        ["C", "inner", "strided", "strided"]
    ps = params_of({"a": spec_of(a[:, 1:], ("a",), False, set()),
                    "b": spec_of(a.T, ("b",), True, set()),
                    "n": spec_of(3, ("n",), False, set()),
                    "t": spec_of((1.5, True), ("t",), False, set())})
    assert [p.type for p in ps] == [MemRefType((4, 5), ps[0].type.element, (DYN, 1)),
                                    MemRefType((DYN, DYN), ps[0].type.element, (DYN, DYN)),
                                    index, f64, i1]
    assert [p.name for p in ps] == ["a", "b", "n", "t_0", "t_1"]


@pytest.mark.parametrize("bad", [{"a": 1}, b"text", np.zeros(2, complex),
                                 object(), 2**70, [1, object()]])
def test_unsupported_arguments(bad):
    with pytest.raises(errors.ArgumentError) as info:
        make().ir(bad)
    assert info.value.code == "E50040" and info.value.filename == __file__


@hybrid
def reduce_along(x, axis, keep=False):
    return x.sum(axis=axis, keepdims=keep)


def test_arguments_needed_at_compile_time_are_specialized_by_value():
    x = rand((3, 4))
    device_order = ON_DEVICE(SUM(4))  # the device's ReduceSum adds in a tree
    check(reduce_along, x, 0, rtol=device_order)
    check(reduce_along, x, 1, True, rtol=device_order)
    check(reduce_along, x, -1, rtol=device_order)
    assert len(reduce_along._specs) == 3
    assert {p for p in reduce_along._by_value} == {("axis",), ("keep",)}
    assert "%axis" not in reduce_along.ir(x, 0)


@hybrid
def derived_axis(x, k):
    return x.sum(axis=k - 1)


def test_values_derived_from_parameters_are_specialized_too():
    check(derived_axis, rand((2, 3)), 1)
    check(derived_axis, rand((2, 3)), 2)


@hybrid
def adaptive_pool(x, output_size):
    h, w = x.shape[-2:]
    stride_h = h // output_size[0]
    kernel_h = h - (output_size[0] - 1) * stride_h
    return stride_h, kernel_h, w


def test_seed_adaptive_pool_with_dynamic_shapes():
    f = hybrid(dynamic_shape=True)(adaptive_pool.__wrapped__)
    for shape, size in (((2, 9, 7), (3, 3)), ((1, 10, 4), (4, 2))):
        check(f, rand(shape), size)
    assert len(f._specs) == 1
