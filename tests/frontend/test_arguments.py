"""What a call accepts (``pyasc.jit.arguments``): plain arrays, memmaps, numbers,
tuples and lists of them, buffers and ``__array__`` objects converted read-only,
non-native byte order converted for reading; masked arrays, matrices, structured dtypes
and other ndarray subclasses refused with a coded error naming the argument and what to
pass instead, on every path of a call (the native entry, the signature table, the full
path, keywords, inspection).  Also: tuples and lists of run-time numbers used as arrays
follow numpy, and a negative size is numpy's ``ValueError``, not "out of memory"."""

from __future__ import annotations

import array
import ctypes
import warnings

import numpy as np
import pytest
from diff import Tol, check

from pyasc import errors, hybrid

X = np.arange(6, dtype=np.float32)


@hybrid
def total(x):
    return np.sum(x) * 2


@hybrid
def scaled(x, pair=(2.0, 1.0)):  # a tuple parameter: no native entry, the table path
    return x * pair[0] + pair[1]


@hybrid
def bump(x):
    x[0] = 7.0
    return x * 1


class Units(np.ndarray):
    """An ndarray subclass with its own meaning."""


def _matrix() -> np.matrix:
    with warnings.catch_warnings():  # numpy discourages np.matrix: users still pass it
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return np.matrix([[1.0, 2.0]])


REFUSED = {  # noqa: RUF012
    "masked": (np.ma.array(X, mask=[0, 1, 0, 0, 0, 0]), "is a masked array", "x.filled("),
    "matrix": (_matrix(), "is an np.matrix", "np.asarray(x)"),
    "structured": (np.zeros(3, [("a", "f4"), ("b", "i4")]), "has the structured dtype",
                   "x['a']"),
    "recarray": (np.rec.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")]),
                 "has the structured dtype", "x['a']"),
    "subclass": (X.view(Units), "is a Units (an ndarray subclass)", "np.asarray(x)"),
    "bytes": (b"\0\0\x80?", "is bytes: a byte string", "np.frombuffer(b, dtype=...)"),
    "bytearray": (bytearray(8), "is bytearray", "np.frombuffer"),
}


def _refused(call, needle: str, hint: str) -> None:
    with pytest.raises(errors.ArgumentError) as info:
        call()
    err = info.value
    assert err.code == "E50040" and "argument 'x'" in err.message and needle in err.message
    assert hint in err.hint and err.filename == __file__


@pytest.mark.parametrize("case", REFUSED)
def test_refused_kinds_on_every_path(case):
    value, needle, hint = REFUSED[case]
    total(X), total(X)  # the native entry and the signature table know a plain array
    scaled(X), scaled(X)
    assert total._fast is not None
    _refused(lambda: total(value), needle, hint)
    _refused(lambda: scaled(value), needle, hint)
    _refused(lambda: scaled(x=value), needle, hint)
    _refused(lambda: total.ir(value), needle, hint)
    assert total(X) == np.sum(X) * 2  # and the plain array still works


def test_refused_inside_a_tuple_or_list_names_the_item():
    with pytest.raises(errors.ArgumentError) as info:
        scaled(X, (2.0, np.ma.array([1.0], mask=[1])))
    assert "argument 'pair'[1] is a masked array" in info.value.message


def test_memmap_is_an_array(tmp_path):
    mm = np.memmap(tmp_path / "data.bin", dtype=np.float32, mode="w+", shape=(6,))
    mm[:] = X
    assert total(mm) == np.sum(X) * 2
    np.testing.assert_array_equal(scaled(mm), X * 2 + 1)
    np.testing.assert_array_equal(scaled(mm), X * 2 + 1)  # remembered signature
    bump(mm)  # in place: the write reaches the file
    mm.flush()
    assert np.fromfile(tmp_path / "data.bin", np.float32)[0] == 7.0


@pytest.mark.parametrize("make", [
    lambda: X.astype(">f4"), lambda: np.arange(6, dtype=">i8"),
    lambda: np.arange(12, dtype=">f8").reshape(3, 4)[:, ::2]])
def test_non_native_byte_order_is_read_through_a_native_copy(make):
    x = make()
    expected = np.sum(x.astype(x.dtype.newbyteorder("="))) * 2
    for _ in range(3):  # first call, then the dispatch paths a repeat takes
        got = total(x)
        assert got == expected and got.dtype == expected.dtype
    assert total(X) == np.sum(X) * 2  # the native array's specialization is not disturbed
    check(scaled, x)


def test_writing_into_a_non_native_array_is_refused_and_changes_nothing():
    x = X.astype(">f4")
    before = x.copy()
    with pytest.raises(errors.ArgumentError) as info:
        bump(x)
    err = info.value
    assert "argument 'x' has non-native byte order (>f4)" in err.message
    assert "the operator writes into it" in err.message and "x.astype('=f4')" in err.hint
    assert err.filename == __file__
    np.testing.assert_array_equal(x, before)
    native = x.astype("=f4")
    bump(native)
    assert native[0] == 7.0


class HasArray:
    def __init__(self, data):
        self.data = np.asarray(data)

    def __array__(self, dtype=None, copy=None):
        return self.data.copy()


@pytest.mark.parametrize("make", [
    lambda: memoryview(array.array("f", X.tolist())), lambda: array.array("d", [1.0, 2.5]),
    lambda: (ctypes.c_int32 * 3)(1, 2, 3), lambda: HasArray([[1.0, 2.0], [3.0, 4.0]])])
def test_buffers_and_array_objects_are_converted_for_reading(make):
    value = make()
    assert total(value) == np.sum(np.asarray(make())) * 2
    with pytest.raises(errors.ArgumentError) as info:
        bump(make())
    assert "converted with np.asarray()" in info.value.message
    assert "the operator writes into it" in info.value.message


def test_a_writable_view_of_a_buffer_keeps_the_writes():
    buf = array.array("f", [1.0, 2.0, 3.0])
    bump(np.asarray(memoryview(buf)))  # the hint's way: an ndarray viewing the buffer
    assert buf[0] == 7.0


def test_unconvertible_objects_are_refused():
    class Opaque:
        def __array__(self, dtype=None, copy=None):
            raise RuntimeError("no")

    with pytest.raises(errors.ArgumentError, match="np.asarray\\(\\) of a Opaque failed"):
        total(Opaque())
    with pytest.raises(errors.ArgumentError, match="converts to an array of dtype object"):
        total(HasArray([object()]))


@hybrid
def as_arrays(t):
    return np.sum(t), np.exp(np.asarray(t)), t[0], len(t)


@hybrid
def concatenated(t):
    return t + t, t * 2  # Python sequence operators, as in the reference


@pytest.mark.parametrize("value", [
    (1.0, 2.5), [1.0, 2.5], [1, 2, 3], (True, False), [True, 2], (np.float32(1), 2.0),
    (np.float32(1), np.float32(3)), (np.int8(1), np.int8(2)), [[1.0, 2.0], [3.0, 4.0]],
    ((1, 2), (3, 4)), [np.float16(1), np.float16(2)]])
def test_tuples_and_lists_of_numbers_as_numpy_sees_them(value):
    check(as_arrays, value, rtol=Tol(math=1))
    check(concatenated, value)


def test_ragged_or_object_sequences_are_errors():
    with pytest.raises(errors.TypeMismatchError, match="ragged"):
        as_arrays([[1.0, 2.0], [3.0]])
    with pytest.raises(errors.ArgumentError, match="of type object is not supported"):
        as_arrays([1.0, object()])


@pytest.mark.parametrize("value", [np.array(2.5), np.array(3, np.int16), 3, 2.5, True,
                                   np.float32(1.5)])
def test_zero_d_arrays_and_scalars(value):
    check(total, value)


def test_read_only_arrays_are_read_and_a_write_is_refused():
    x = X.copy()
    x.flags.writeable = False
    assert total(x) == np.sum(X) * 2
    with pytest.raises(errors.ArgumentError) as info:
        bump(x)
    assert "read-only" in info.value.message and "np.array(x)" in info.value.hint


# -- negative sizes: numpy's ValueError


@hybrid
def zeros(n):
    return np.zeros(n)


@hybrid
def ones_sum(n):
    a = np.ones((n, 2))  # a temporary: never a result buffer
    return a.sum()


@hybrid
def filled(n, v):
    return np.full((2, n), v), v


@pytest.mark.parametrize("fn, args", [(zeros, (-3,)), (ones_sum, (-1,)),
                                      (filled, (-2, 1.5))])
def test_negative_dimension_is_a_value_error(fn, args):
    for _ in range(2):  # the first call and the dispatch fast paths
        with pytest.raises(ValueError, match="negative dimensions are not allowed"):
            fn(*args)
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        fn.__wrapped__(*args)  # as numpy says
    check(fn, *[abs(a) if isinstance(a, int) else a for a in args])


def test_negative_constant_dimensions():
    @hybrid
    def literal():
        return np.zeros(-2)

    @hybrid
    def numpy_scalar():
        return np.zeros(np.int64(-2))

    with pytest.raises(errors.ShapeInferenceError, match="negative dimensions"):
        literal()  # found while compiling
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        numpy_scalar()


def test_conversions_and_sequences_on_ascend_sim():
    check(scaled, X.astype(">f4"), runners=("ascend-sim",))
    check(as_arrays, [1.0, 2.5], runners=("ascend-sim",), rtol=Tol(math=1))
    check(zeros, 3, runners=("ascend-sim",))
