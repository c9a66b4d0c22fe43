"""Shape conflicts that only the run-time sizes show (``dynamic_shape=True``) raise
E50002 (``ShapeInferenceError``, also a ``ValueError`` as in numpy) at the user's line
on every compiled target, and the message names the actual sizes in numpy's words."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.errors import ShapeInferenceError

TARGETS = ["cpu", "ascend-sim"]


def add(a, b):
    return a + b                                          # line: add


def mm(a, b):
    return a @ b                                          # line: mm


def copy_into(a, b):
    c = np.empty_like(a)
    c[:] = b                                              # line: copy_into
    return c


def reshaped(a, n):
    return a.reshape(n, 3) * 2.0                          # line: reshaped


def inferred(a):
    return a.reshape(-1, 2) + 1.0                         # line: inferred


@pytest.fixture
def float64_device_on_sim(request):
    # the cases are float64 data: on ascend-sim a SoC configuration that allows float64
    # (no real SoC does: E50041, docs/ascendc-backend.md#float64) keeps the scalar
    # kernels these checks were written against
    if request.getfixturevalue("target") == "ascend-sim":
        request.getfixturevalue("float64_soc")


CASES = [
    (add, (np.ones((3, 4)), np.ones((5, 4))), "with shapes (3,4) (5,4)"),
    (add, (np.ones((7,)), np.ones((6,))), "with shapes (7,) (6,)"),
    (mm, (np.ones((3, 4)), np.ones((5, 2))), "(size 5 is different from 4)"),
    (copy_into, (np.ones((3, 4)), np.ones((5, 4))), "from shape (5,"),
    # a view reshape of an argument read past its buffer on cpu before (a (7, 3) result
    # from 20 elements), with and without dynamic_shape
    (reshaped, (np.ones((4, 5)), 7), "cannot reshape array of size 20 into shape (7,3)"),
    (inferred, (np.ones(7),), "cannot reshape array of size 7 into shape (3,2)"),
]


def _line_of(fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    marker = f"# line: {fn.__name__}"
    return start + next(i for i, text in enumerate(lines) if marker in text)


@pytest.mark.filterwarnings("ignore:.*scalar AscendC")
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fn,args,text", CASES, ids=lambda c: getattr(c, "__name__", None))
def test_runtime_shape_conflict_is_e50002_at_the_users_line(fn, args, text, target,
                                                            float64_device_on_sim):
    with pytest.raises(ValueError) as numpy_error:
        fn(*args)                               # numpy refuses the same sizes
    compiled = hybrid(fn, dynamic_shape=True, target=target)
    with pytest.raises(ShapeInferenceError) as info:
        compiled(*args)
    err = info.value
    assert isinstance(err, ValueError) and err.code == "E50002"
    assert err.filename == __file__ and err.lineno == _line_of(fn)
    assert text in err.message, (err.message, str(numpy_error.value))
    assert "?" not in err.message


@pytest.mark.filterwarnings("ignore:.*scalar AscendC")
@pytest.mark.parametrize("target", TARGETS)
def test_view_reshape_by_a_runtime_size_is_checked_without_dynamic_shape(
        target, float64_device_on_sim):
    compiled = hybrid(reshaped, target=target)
    with pytest.raises(ShapeInferenceError, match="size 20 into shape"):
        compiled(np.ones((4, 5)), 7)
    np.testing.assert_array_equal(compiled(np.ones((4, 6)), 8), np.full((8, 3), 2.0))


@pytest.mark.filterwarnings("ignore:.*scalar AscendC")
@pytest.mark.parametrize("target", TARGETS)
def test_one_specialization_still_serves_matching_sizes(target, float64_device_on_sim):
    compiled = hybrid(add, dynamic_shape=True, target=target)
    for shape in [(3, 4), (5, 1), (2, 9)]:
        a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
        np.testing.assert_array_equal(compiled(a, a), a + a)
    with pytest.raises(ShapeInferenceError):
        compiled(np.ones((3, 4)), np.ones((2, 4)))
    assert len(compiled.specializations) == 1
