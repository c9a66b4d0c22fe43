"""Messages that named pyasc's internals or gave a hint that did not fit the construct."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import errors, hybrid


@hybrid
def divide_at(x, idx):
    np.divide.at(x, idx, 2.0)
    return x


@hybrid
def reduce_method(x):
    return np.maximum.reduce(x)


@hybrid
def range_attribute(x):
    return x * range(3).start


def test_ufunc_methods_are_named_as_written_with_a_hint():
    x, idx = np.zeros(4, np.float32), np.array([1, 1])
    with pytest.raises(errors.UnsupportedNumpyError) as info:
        divide_at.ir(x, idx)
    assert "np.divide.at is not supported" in info.value.message
    assert "NumpyFunction" not in str(info.value)
    assert "x[idx[k]] = f(x[idx[k]], v[k])" in info.value.hint
    with pytest.raises(errors.UnsupportedNumpyError, match="np.maximum.reduce"):
        reduce_method.ir(x)
    with pytest.raises(errors.UnsupportedSyntaxError) as info:
        range_attribute.ir(x)
    assert "of a range is not supported" in info.value.message


@hybrid(dynamic_shape=True, target="ascend-sim")
def branch_binds_a_row(logits):
    out = np.empty_like(logits)
    for i in range(logits.shape[0]):
        row = logits[i]
        if row[0] > 0:
            row = row * 2
        out[i] = row
    return out


@hybrid(dynamic_shape=True, target="ascend-sim")
def loop_carries_a_row(logits):
    acc = np.zeros(logits.shape[1], logits.dtype)
    for i in range(logits.shape[0]):
        acc = acc + logits[i]
    return acc


def test_device_message_for_arrays_of_runtime_size_fits_the_construct():
    from pyasc.backend.ascendc.unsupported import DeviceUnsupportedError

    x = np.ones((3, 4), np.float32)
    with pytest.raises(DeviceUnsupportedError) as info:
        branch_binds_a_row(x)
    assert "bound to a name in this branch" in info.value.message
    assert "carried by a loop" not in info.value.message and "np.where" in info.value.hint
    with pytest.raises(DeviceUnsupportedError) as info:
        loop_carries_a_row(x)
    assert "kept from one iteration of this loop" in info.value.message
    assert "in place" in info.value.hint


@hybrid
def unpack_shape(x):
    n, c, h, w = x.shape
    return x * (n + c + h + w)


@hybrid
def unpack_too_many(x):
    a, b = x.shape
    return x * (a + b)


@hybrid
def unpack_starred(x):
    a, b, *rest = x.shape
    return x * (a + b)


def test_unpacking_of_the_wrong_length_says_so_in_pythons_words():
    # the hint was E50001's generic one ("check the dtypes of the inputs; cast
    # explicitly"), which has nothing to do with counting names
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(errors.TypeMismatchError) as info:
        unpack_shape.ir(x)
    assert info.value.message.endswith("not enough values to unpack (expected 4, got 3)")
    assert "the right side has 3 values" in info.value.hint and "dtype" not in info.value.hint
    with pytest.raises(errors.TypeMismatchError, match=r"too many values to unpack "
                       r"\(expected 2, got 3\)"):
        unpack_too_many.ir(x)
    with pytest.raises(errors.TypeMismatchError, match=r"expected at least 2, got 1"):
        unpack_starred.ir(np.ones(5, np.float32))
    assert np.array_equal(unpack_starred(x), x * 5)


def test_decorating_a_hybrid_function_again_says_how_to_change_its_options():
    with pytest.raises(errors.UnsupportedSyntaxError) as info:
        hybrid(unpack_starred, target="interpret")
    assert "'unpack_starred' is already a @hybrid function" in info.value.message
    assert "hybrid(unpack_starred.__wrapped__, ...)" in info.value.hint
    assert np.array_equal(hybrid(unpack_starred.__wrapped__, target="interpret")(
        np.ones((2, 3), np.float32)), np.full((2, 3), 5.0))
