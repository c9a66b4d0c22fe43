"""Functions without ``@hybrid`` called from compiled code (``frontend/plainfuncs.py``):
plain helpers of the user's module, nested ``def``\\ s and lambdas, compiled as if
decorated, on the IR, the CPU and the AscendC simulator; their errors and cache keys."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, MATH, SUM, Tol, compare, rand
from test_errors import compile_error

from pyasc import errors, hybrid

RUNNERS = (*DEFAULT_RUNNERS, "ascend-sim")


def check(fn, *args, rtol=None, runners=RUNNERS):
    """``diff.check`` on every runner, the simulator included (none may be skipped)."""
    expected, skipped = compare(fn, *args, runners=runners, rtol=rtol)
    assert not skipped, skipped
    return expected


def gelu_tanh(x):
    inner = 0.7978845608 * (x + 0.044715 * x ** 3)
    return 0.5 * x * (1.0 + np.tanh(inner))


@hybrid
def mlp(x, w, b):
    return gelu_tanh(x @ w + b)


def test_plain_helper_in_a_return():
    x, w, b = rand((4, 8)), rand((8, 16), seed=1), rand((16,), seed=2)
    check(mlp, x, w, b, rtol=MATH + SUM(8, 3.0) + Tol(math=2))


def scale_shift(v, scale=2.0, *, shift=0):
    return clamp(v * scale) + shift


def clamp(v, lo=-1.0, hi=1.0):
    return np.minimum(np.maximum(v, lo), hi)


def fill_row(out, i, value):
    out[i] = value  # writes into the caller's array, as Python does


@hybrid
def uses_helpers(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        fill_row(out, i, scale_shift(x[i], shift=1))
    return out, scale_shift(x, 0.5), clamp(x, hi=0.25)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_helpers_calling_helpers_defaults_keywords_and_writes(dtype):
    check(uses_helpers, rand((6,), dtype))


def test_non_contiguous_argument():
    check(uses_helpers, rand((12,), "float32")[::-2])


def make_scaler(k):
    def scaler(v):
        return v * k
    return scaler


TRIPLE = make_scaler(3)


@hybrid
def uses_closure_helper(x):
    return TRIPLE(x) + make_scaler(2)(x)


def test_plain_helper_with_its_own_closure():
    check(uses_closure_helper, rand((5,), "float32"))


@hybrid
def nested(x, n):
    offset = 1.0

    def shifted(v, times=2):
        return v * times + offset  # read from the kernel when called (late binding)

    first = shifted(x)
    offset = 3.0
    acc = x * 0
    for i in range(n):
        acc = acc + shifted(x[i], times=i)
    return first, shifted(x), acc


def test_nested_def_reads_the_kernels_names_when_called():
    check(nested, rand((4,), "float32"), 3)


@hybrid
def lambdas(x):
    sq = lambda v: v * v  # noqa: E731 - what the test is about
    axpy = lambda a, v, b=1.0: a * v + b  # noqa: E731
    return sq(x), axpy(2.0, x), (lambda v: -v)(x)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_lambdas_assigned_and_called(dtype):
    check(lambdas, rand((5,), dtype))


@hybrid
def nested_writes(x):
    out = np.zeros_like(x)

    def put(i, v):
        out[i] = v  # a write to the kernel's array

    for i in range(x.shape[0]):
        put(i, x[i] * 2)
    return out


def test_nested_def_writes_into_an_array_of_the_kernel():
    check(nested_writes, rand((5,), "float32"))


def countdown(n):
    return countdown(n - 1) if n > 0 else 0


@hybrid
def recursive(x):
    return x + countdown(3)


@hybrid
def uses_library(x):
    return x * statistics.fmean([1.0, 2.0])


def test_recursion_and_library_functions_are_coded_errors():
    with pytest.raises(errors.UnsupportedSyntaxError, match="recursive call"):
        recursive.ir(rand((3,), "float32"))
    with pytest.raises(errors.UnsupportedSyntaxError,
                       match="'fmean' is a function of 'statistics'"):
        uses_library.ir(rand((3,), "float32"))


HELPER_ERROR = """\
def helper(v):
    y = v * 2
    return {1: y}

@hybrid
def f(x):
    return helper(x) + 1
"""


def test_an_error_in_a_helper_is_at_its_line_with_the_call_as_context(tmp_path):
    err = compile_error(tmp_path, HELPER_ERROR, np.ones(3, np.float32))
    assert (err.code, err.lineno, err.col_offset) == ("E50010", 6, 11)  # {1: y}
    text = str(err)
    assert "in 'helper', called at " in text and ":10:12: return helper(x) + 1" in text


NESTED_ERROR = """\
@hybrid
def f(x):
    def inner(v):
        return v + undefined_name
    return inner(x)
"""


def test_an_error_in_a_nested_def_names_its_call(tmp_path):
    err = compile_error(tmp_path, NESTED_ERROR, np.ones(3, np.float32))
    assert (err.code, err.lineno) == ("E50012", 7)
    assert "in 'inner', called at" in str(err) and ":8:12:" in str(err)


HELPERS_V1 = "import numpy as np\n\ndef helper(v):\n    return v * 2\n"
KERNELS = {
    "global": "from helpers import helper\n\n@hybrid\ndef f(x):\n    return helper(x) + 1\n",
    # a module's member: the key covers what the code reads of the module
    "module": "import helpers\n\n@hybrid\ndef f(x):\n    return helpers.helper(x) + 1\n",
}
RUN = "import numpy as np, kern; print(kern.f(np.ones(2, np.float32)).tolist())"


@pytest.mark.parametrize("style", sorted(KERNELS))
def test_editing_a_helper_invalidates_the_cached_kernel(tmp_path: Path, style: str):
    # a fresh process per run: the second finds the first's kernel on disk unless the
    # key covers the helper's source
    (tmp_path / "helpers.py").write_text(HELPERS_V1)
    (tmp_path / "kern.py").write_text("from pyasc import hybrid\n" + KERNELS[style])
    env = dict(os.environ, PYASC_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))

    def run() -> str:
        done = subprocess.run([sys.executable, "-c", RUN], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run() == "[3.0, 3.0]"
    assert run() == "[3.0, 3.0]"  # from the disk cache
    (tmp_path / "helpers.py").write_text(textwrap.dedent(HELPERS_V1).replace("* 2", "* 5"))
    assert run() == "[6.0, 6.0]"


@hybrid
def chosen_at_run_time(x):
    if x[0] > 0:
        f = lambda v: v * 2  # noqa: E731
    else:
        f = lambda v: v * 3  # noqa: E731
    return f(x)


@hybrid
def chosen_when_compiling(x):
    f = (lambda v: v * 2) if x.shape[0] > 2 else (lambda v: v * 3)  # noqa: E731
    return f(x)


def test_a_function_chosen_at_run_time_is_a_coded_error():
    check(chosen_when_compiling, rand((3,), "float32"))
    with pytest.raises(errors.TypeMismatchError, match="different functions"):
        chosen_at_run_time.ir(rand((3,), "float32"))
