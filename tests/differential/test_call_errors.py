"""Bad input at the call site: coded errors that point at the user's line, never a crash.

* Wrong number of arguments, unknown keywords and argument kinds pyasc cannot take
  (dicts, sets, complex numbers, object and complex arrays, unaligned arrays, integers
  beyond 64 bits, lists holding any of those): ``ArgumentError`` (E50040) located at
  the call.
* ``None`` or a string where the function needs an array: both are compile-time values
  for pyasc (``mode="same"``, ``out=None``), so the error is found where the body uses
  them: ``TypeMismatchError`` (E50001) located at that use.
* A dtype the function cannot take (a bitwise operator on floats): E50001 at compile
  time, located at the operator in the user's function.
* A compiled kernel called directly with arguments of another specialization (dtype,
  shape, rank, layout, count, kind), or a read-only array the operator writes:
  ``ArgumentError`` naming the argument and the problem, checked before any memory is
  touched, located at the call like the errors above.
* Bounds checks are on by default: an index out of bounds raises
  ``IndexOutOfBoundsError`` (E50004, an ``IndexError``) naming the index, the size, the
  array and the user's file and line.  ``boundscheck=False`` opts out: indices are not
  checked (no checks in the IR; an out-of-bounds index is undefined behaviour, as in C),
  while ``target="interpret"`` runs Python, which always checks.

LLVM verification or JIT failures (an internal error naming the function and the saved
LLVM IR file) are tested with the backend: ``tests/backend/llvm/test_llvm_pipeline.py``.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from pyasc import errors, hybrid
from pyasc.jit.options import Options

X = np.ones((3, 4), np.float32)


@hybrid(target="cpu")
def add(x, y):
    return x + y  # USE_LINE


@hybrid(target="cpu")
def bitwise(x):
    return x & x  # BITWISE_LINE


def _line_of(fn, marker: str) -> int:
    lines, first = inspect.getsourcelines(inspect.unwrap(fn))
    return first + next(i for i, text in enumerate(lines) if marker in text)


def call_error(exc_type: type[errors.PyascError], fn, *args, **kwargs) -> errors.PyascError:
    """Call ``fn`` expecting ``exc_type``; the error must name this file and the call."""
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)  # CALL_LINE
    err = info.value
    assert (err.filename, err.lineno) == (__file__, _line_of(call_error, "# CALL_LINE"))
    assert "fn(*args, **kwargs)" in str(err)  # the rendered diagnostic shows the line
    return err


ARGUMENT_CASES = {
    "too few": ((X,), {}, "missing a required argument: 'y'"),
    "too many": ((X, X, X), {}, "too many positional arguments"),
    "unknown keyword": ((X, X), {"z": X}, "unexpected keyword argument 'z'"),
    "list holding an object": (([1.0, object()], X), {}, "'x'[1] of type object is not"),
    "dict": ((X, {}), {}, "type dict is not supported"),
    "set": ((X, {1}), {}, "type set is not supported"),
    "complex scalar": ((X, 1j), {}, "type complex is not supported"),
    "object array": ((np.array([1, None]), X), {}, "dtype object is not supported"),
    "complex array": ((np.ones(3, complex), X), {}, "dtype complex128 is not supported"),
    "int beyond 64 bits": ((X, 2 ** 70), {}, "does not fit in 64 bits"),
    "unaligned array": ((np.frombuffer(bytes(13), np.uint8)[1:].view(np.float32), X),
                        {}, "unaligned arrays are not supported"),
}


@pytest.mark.parametrize("case", ARGUMENT_CASES)
def test_bad_arguments_are_argument_errors_at_the_call(case):
    args, kwargs, needle = ARGUMENT_CASES[case]
    err = call_error(errors.ArgumentError, add, *args, **kwargs)
    assert err.code == "E50040" and needle in err.message


@pytest.mark.parametrize("value", [None, "abc"])
def test_none_or_string_for_an_array_is_located_at_its_use(value):
    with pytest.raises(errors.TypeMismatchError) as info:
        add(value, X)
    err = info.value
    assert err.code == "E50001" and type(value).__name__ in err.message
    assert (err.filename, err.lineno) == (__file__, _line_of(add, "# USE_LINE"))


def test_a_dtype_the_function_cannot_take_is_located_at_the_operator():
    with pytest.raises(errors.TypeMismatchError) as info:
        bitwise(X)
    err = info.value
    assert err.code == "E50001" and "bitwise_and" in err.message and "float32" in err.message
    assert (err.filename, err.lineno) == (__file__, _line_of(bitwise, "# BITWISE_LINE"))
    assert "return x & x" in str(err)
    ints = np.arange(6, dtype=np.int16)
    np.testing.assert_array_equal(bitwise(ints), ints & ints)  # the int specialization


KERNEL_CASES = {
    "dtype": ([X.astype(np.float64), X], "argument 0 ('x'): expected dtype float32, got "
              "float64"),
    "shape": ([np.ones((5, 4), np.float32), X], "expected shape (3, 4), got (5, 4)"),
    "rank": ([X, X[0]], "argument 1 ('y'): expected 2 dimension(s), got 1"),
    "layout": ([np.asfortranarray(X), X], "expected a C-contiguous array"),
    "count": ([X], "expected 2 arguments after flattening tuples, got 1"),
    "kind": (["abc", X], "expected a numpy array of float32, got str"),
}


@pytest.mark.parametrize("case", KERNEL_CASES)
def test_kernel_called_with_another_specialization_s_arguments(case):
    kernel = add.kernel(X, X)
    args, needle = KERNEL_CASES[case]
    with pytest.raises(errors.ArgumentError) as info:
        kernel(args)
    assert info.value.code == "E50040" and needle in info.value.message
    np.testing.assert_array_equal(kernel([X, X])[0], X + X)  # still usable


@hybrid(target="cpu")
def increment(x):
    x += 1
    return x


def test_read_only_array_written_by_the_operator_is_an_argument_error():
    x = np.zeros(4, np.float32)
    x.flags.writeable = False
    with pytest.raises(errors.ArgumentError, match="read-only but the operator writes"):
        increment(x)
    assert not x.any()


def test_kernel_argument_errors_point_at_the_call():
    # found by the generated caller's checks (dtype) and by the fast entry (shape)
    kernel = add.kernel(X, X)
    call_error(errors.ArgumentError, kernel, [X.astype(np.float64), X])
    call_error(errors.ArgumentError, kernel, [np.ones((5, 4), np.float32), X])


def test_read_only_argument_error_points_at_the_call():
    # the native entry refuses the call; the dispatcher's caller reaches the kernel
    x = np.zeros(4, np.float32)
    x.flags.writeable = False
    call_error(errors.ArgumentError, increment, x)


@hybrid(target="cpu")
def checked(x, i):
    return x[i] * 2  # INDEX_LINE


@hybrid(target="cpu", boundscheck=False)
def unchecked(x, i):
    return x[i] * 2


@pytest.mark.parametrize("i", [5, -6, 100])
def test_boundscheck_raises_index_error_naming_the_source_line(i):
    x = np.arange(5.0)
    with pytest.raises(IndexError) as info:
        checked(x, i)
    line = _line_of(checked, "# INDEX_LINE")
    assert isinstance(info.value, errors.IndexOutOfBoundsError)
    assert f"{__file__}:{line}:" in str(info.value)
    assert f"index {i} is out of bounds for axis 0 with size 5 (array 'x')" in str(info.value)
    assert "return x[i] * 2" in str(info.value)
    assert checked(x, -5) == 0.0 and checked(x, 4) == 8.0


def test_boundscheck_is_on_by_default_and_false_opts_out():
    assert Options().boundscheck is True
    x = np.arange(5.0)
    assert '"func.assert"' in checked.ir(x, 1) and 'kind = "bounds"' in checked.ir(x, 1)
    assert 'kind = "bounds"' not in unchecked.ir(x, 1)  # unchecked: no run-time test
    assert unchecked(x, 3) == 6.0 and unchecked(x, -1) == 8.0
    interpreted = hybrid(target="interpret")(unchecked.__wrapped__)
    with pytest.raises(IndexError):
        interpreted(x, 5)
