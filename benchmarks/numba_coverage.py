"""Which numpy-style constructs pyasc and Numba (nopython mode) each compile: every row
is run, not assumed.

    /work/venv/bin/python benchmarks/numba_coverage.py      # a Python with numba

Each case is an ordinary function below (``k_*``), called three ways on the same
arguments: plain Python (the reference), ``pyasc.hybrid(target="cpu")`` and
``numba.njit``.  A result is ``yes`` when the compiled function runs and returns the
reference's values with the reference's dtypes, ``dtype`` when the values match but a
dtype differs, ``wrong`` when values differ and ``no`` when compiling or running raises
(the first line of the error is kept for the notes with ``--why``).  The table printed
is the one in ``docs/numba-comparison.md``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyasc  # noqa: E402

GAUSS3 = ((1, 2, 1), (2, 4, 2), (1, 2, 1))
rng = np.random.default_rng(0)
A = rng.standard_normal((6, 8)).astype(np.float32)
B = rng.standard_normal((6, 8)).astype(np.float32)
V = rng.standard_normal(8).astype(np.float32)
H = A.astype(np.float16)
I8 = rng.integers(-9, 9, (6, 8)).astype(np.int8)
V3 = rng.standard_normal((5, 3)).astype(np.float32)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


# ------------------------------------------------------------------ reductions / shapes

def k_sum_axis(x):
    return np.sum(x, axis=1)


def k_keepdims(x):
    return x - np.max(x, axis=-1, keepdims=True)


def k_mean_axis(x):
    return np.mean(x, axis=0)


def k_tuple_axis(x):
    return np.sum(x, axis=(0, 1))


def k_var_axis(x):
    return np.var(x, axis=1)


def k_softmax_rows(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def k_argmax_axis(x):
    return np.argmax(x, axis=1)


def k_reshape_transpose(x):
    return x.reshape(4, 12).T.copy()


def k_float16_math(x):
    return x * x + np.float16(1)


def k_int8_wrap(x):
    return x * np.int8(100)


def k_median_axis(x):
    return np.median(x, axis=0)


def k_quantile_axis(x):
    return np.quantile(x, 0.25, axis=1)


def k_cumsum_axis(x):
    return np.cumsum(x, axis=1)


def k_einsum(x, y):
    return np.einsum("ij,kj->ik", x, y)


def k_pad(x):
    return np.pad(x, 1, mode="edge")


def k_matmul(x, y):
    return x @ y.T


def k_linalg_norm_axis(x):
    return np.linalg.norm(x, axis=1)


def k_add_at(x):
    out = np.zeros(4, np.float32)
    np.add.at(out, np.array([0, 1, 1, 3]), x[0, :4])
    return out


def k_bool_mask_select(x):
    return x[x > 0]


def k_where_assign(x):
    y = x.copy()
    y[y < 0] = 0
    return y


def k_unique(x):
    return np.unique(x)


def k_nonzero(x):
    return np.nonzero(x > 0)[0]


def k_sort_axis(x):
    return np.sort(x, axis=0)


# ------------------------------------------------------------- the new ufuncs / arrays

def k_hypot(x, y):
    return np.hypot(x, y)


def k_logaddexp(x, y):
    return np.logaddexp(x, y)


def k_sinh_cosh(x):
    return np.sinh(x) + np.cosh(x)


def k_copysign(x, y):
    return np.copysign(x, y)


def k_heaviside(x):
    return np.heaviside(x, 0.5)


def k_fmod(x, y):
    return np.fmod(x, y)


def k_fmax(x, y):
    return np.fmax(x, y), np.fmin(y, x)


def k_nextafter(x, y):
    return np.nextafter(x, y)


def k_deg2rad(x):
    return np.deg2rad(x)


def k_sinc(x):
    return np.sinc(x)


def k_float_power(x):
    return np.float_power(x, 2.0)


def k_bitwise_count(x):
    return np.bitwise_count(x)


def k_arctan2(x, y):
    return np.arctan2(x, y)


def k_arcsinh(x):
    return np.arcsinh(x)


def k_cbrt(x):
    return np.cbrt(x)


def k_flip_axis(x):
    return np.flip(x, axis=0)


def k_tile(x):
    return np.tile(x, (2, 3))


def k_diag_trace(x):
    return np.diag(x).sum() + np.trace(x, 1)


def k_count_nonzero_axis(x):
    return np.count_nonzero(x, axis=0)


def k_select(x):
    return np.select([x > 0.5, x < -0.5], [x, -x], 0.0)


def k_isclose(x, y):
    return np.isclose(x, y, rtol=0.5)


def k_cross(x):
    return np.cross(x, x[::-1])


def k_kron(x):
    return np.kron(x[:2, :2], x[:3, :3])


# ------------------------------------------------------------------------ language

def k_plain_helper(x):
    return gelu_tanh(x)


def k_nested_def(x):
    def sq(v):
        return v * v
    return sq(x) + 1


def k_lambda(x):
    f = lambda v: v * 2  # noqa: E731
    return f(x)


def k_constant_table(x):
    out = np.zeros_like(x)
    for i in range(1, x.shape[0] - 1):
        for j in range(1, x.shape[1] - 1):
            acc = 0.0
            for di in range(3):
                for dj in range(3):
                    acc += GAUSS3[di][dj] * x[i + di - 1, j + dj - 1]
            out[i, j] = acc / 16
    return out


def k_list_of_arrays(x):
    parts = []
    for k in range(3):
        parts.append(x * k)
    return np.stack(parts)


def k_ndindex(x):
    out = np.zeros_like(x)
    for i, j in np.ndindex(x.shape[0], x.shape[1]):
        out[i, j] = x[i, j] * (i + j)
    return out


def k_itertools_product(x):
    out = np.zeros_like(x)
    for i, j in itertools.product(range(x.shape[0]), range(x.shape[1])):
        out[i, j] = x[i, j] + i
    return out


def k_raise_fstring(x):
    n = x.shape[0]
    if n > 100:
        raise ValueError(f"too many rows: {n}")
    return x + 1


def k_while_break(x):
    s = 0.0
    i = 0
    while i < x.shape[0]:
        if x[i] > 1.0:
            break
        s += x[i]
        i += 1
    return s


def k_math_module(x):
    return math.exp(float(x[0])) + math.sqrt(abs(float(x[1])))


def k_tuple_return(x):
    return x.min(), x.max()


def k_dict(x):
    d = {"a": 1.0, "b": 2.0}
    return x * d["a"] + d["b"]


def k_mask_1d(v):
    return v[v > 0]


def k_where_one_arg(v):
    return np.where(v > 0)[0]


def k_histogram(v):
    return np.histogram(v, bins=4, range=(-2.0, 2.0))[0]


def k_convolve(v):
    return np.convolve(v, np.array([0.25, 0.5, 0.25], np.float32))


def k_argsort(v):
    return np.argsort(v)


def k_interp(v):
    return np.interp(v, np.array([-1.0, 0.0, 1.0]), np.array([0.0, 1.0, 4.0]))


def k_growing_list(v):
    out = []
    for i in range(v.shape[0]):
        if v[i] > 0:
            out.append(v[i])
    return len(out)


def k_try_except(v):
    try:
        y = v * 2
    except ValueError:
        y = v
    return y


def k_complex(x):
    return (x * 1j).real


def k_linalg_inv(x):
    return np.linalg.inv(x[:4, :4].astype(np.float64) + 4 * np.eye(4))


def k_random(x):
    np.random.seed(0)
    return x + np.random.random(x.shape)


def k_string_format(x):
    return len(str(x.shape[0]))


CASES: list[tuple[str, Callable, tuple]] = [
    ("`np.sum(x, axis=1)`", k_sum_axis, (A,)),
    ("`keepdims=True`", k_keepdims, (A,)),
    ("`np.mean(x, axis=0)`", k_mean_axis, (A,)),
    ("tuple `axis=(0, 1)`", k_tuple_axis, (A,)),
    ("`np.var(x, axis=1)`", k_var_axis, (A,)),
    ("softmax over rows", k_softmax_rows, (A,)),
    ("`np.argmax(x, axis=1)`", k_argmax_axis, (A,)),
    ("reshape + `.T` + copy", k_reshape_transpose, (A,)),
    ("float16 arithmetic (dtype kept)", k_float16_math, (H,)),
    ("int8 wrap-around (dtype kept)", k_int8_wrap, (I8,)),
    ("`np.median(x, axis=0)`", k_median_axis, (A,)),
    ("`np.quantile(x, q, axis=1)`", k_quantile_axis, (A,)),
    ("`np.cumsum(x, axis=1)`", k_cumsum_axis, (A,)),
    ("`np.einsum`", k_einsum, (A, B)),
    ("`np.pad(mode='edge')`", k_pad, (A,)),
    ("`x @ y.T`", k_matmul, (A, B)),
    ("`np.linalg.norm(x, axis=1)`", k_linalg_norm_axis, (A,)),
    ("`np.add.at`", k_add_at, (A,)),
    ("`x[x > 0]` (data-dependent size)", k_bool_mask_select, (A,)),
    ("`y[y < 0] = 0`", k_where_assign, (A,)),
    ("`np.unique`", k_unique, (I8,)),
    ("`np.nonzero`", k_nonzero, (V,)),
    ("`np.sort(x, axis=0)`", k_sort_axis, (A,)),
    ("`np.hypot`", k_hypot, (A, B)),
    ("`np.logaddexp`", k_logaddexp, (A, B)),
    ("`np.sinh`, `np.cosh`", k_sinh_cosh, (A,)),
    ("`np.copysign`", k_copysign, (A, B)),
    ("`np.heaviside`", k_heaviside, (A,)),
    ("`np.fmod`", k_fmod, (A, B)),
    ("`np.fmax`, `np.fmin`", k_fmax, (A, B)),
    ("`np.nextafter`", k_nextafter, (A, B)),
    ("`np.deg2rad`", k_deg2rad, (A,)),
    ("`np.sinc`", k_sinc, (A,)),
    ("`np.float_power`", k_float_power, (A,)),
    ("`np.bitwise_count`", k_bitwise_count, (I8,)),
    ("`np.arctan2`", k_arctan2, (A, B)),
    ("`np.arcsinh`", k_arcsinh, (A,)),
    ("`np.cbrt`", k_cbrt, (A,)),
    ("`np.flip(x, axis=0)`", k_flip_axis, (A,)),
    ("`np.tile`", k_tile, (A,)),
    ("`np.diag`, `np.trace(x, 1)`", k_diag_trace, (A,)),
    ("`np.count_nonzero(x, axis=0)`", k_count_nonzero_axis, (I8,)),
    ("`np.select`", k_select, (A,)),
    ("`np.isclose(rtol=...)`", k_isclose, (A, B)),
    ("`np.cross` (3-vectors)", k_cross, (V3,)),
    ("`np.kron`", k_kron, (A,)),
    ("undecorated helper function", k_plain_helper, (A,)),
    ("nested `def`", k_nested_def, (A,)),
    ("lambda assigned and called", k_lambda, (A,)),
    ("module-level tuple table `T[i][j]`", k_constant_table, (A,)),
    ("list of arrays -> `np.stack`", k_list_of_arrays, (A,)),
    ("`for i, j in np.ndindex(h, w)`", k_ndindex, (A,)),
    ("`itertools.product(range, range)`", k_itertools_product, (A,)),
    ("`raise ValueError(f\"...{n}\")`", k_raise_fstring, (A,)),
    ("`while` + `break`", k_while_break, (V,)),
    ("`math.exp`, `math.sqrt` on scalars", k_math_module, (V,)),
    ("tuple of results", k_tuple_return, (A,)),
    ("`dict` literal", k_dict, (A,)),
    ("1-D mask `v[v > 0]`", k_mask_1d, (V,)),
    ("`np.where(cond)` (one argument)", k_where_one_arg, (V,)),
    ("`np.histogram`", k_histogram, (V,)),
    ("`np.convolve`", k_convolve, (V,)),
    ("`np.argsort`", k_argsort, (V,)),
    ("`np.interp`", k_interp, (V,)),
    ("list of scalars grown in a loop", k_growing_list, (V,)),
    ("`try`/`except`", k_try_except, (V,)),
    ("complex numbers", k_complex, (A,)),
    ("`np.linalg.inv`", k_linalg_inv, (A,)),
    ("`np.random`", k_random, (A,)),
    ("`str()` of a number", k_string_format, (A,)),
]


NOTES = {
    "`x @ y.T`": "Numba's matmul/dot/linalg need SciPy's BLAS/LAPACK, not installed in "
                 "the checking venv",
    "`np.linalg.inv`": "Numba: as for `@` (SciPy); pyasc has no `linalg.inv`",
    "float16 arithmetic (dtype kept)": "Numba has no float16 arithmetic on the CPU",
    "tuple `axis=(0, 1)`": "Numba: sum of the whole array, returned as a Python float",
    "tuple of results": "Numba returns float32 scalars as Python floats",
    "`while` + `break`": "Numba types the `0.0` accumulator float64; numpy 2 keeps "
                         "float32 (NEP 50)",
    "`dict` literal": "Numba computes in float64 where numpy 2 keeps float32",
    "complex numbers": "pyasc: coded error E50001 (complex dtypes unsupported); Numba "
                       "computes in complex128",
    "`np.diag`, `np.trace(x, 1)`": "Numba: float64 trace of float32",
    "`np.select`": "Numba: float64 result (numpy 2: the weak `0.0` keeps float32)",
    "`x[x > 0]` (data-dependent size)": "2-D mask; Numba takes 1-D masks only",
    "`y[y < 0] = 0`": "2-D mask; Numba takes 1-D masks only",
    "undecorated helper function": "Numba needs the helper decorated with `@njit`",
    "`np.isclose(rtol=...)`": "Numba fails on 2-D operands",
}


def _same(got: object, want: object) -> str:
    """``yes``/``dtype``/``wrong`` for a compiled result against the reference."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return "wrong"
        marks = [_same(g, w) for g, w in zip(got, want, strict=True)]
        return "wrong" if "wrong" in marks else "dtype" if "dtype" in marks else "yes"
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return "wrong"
    if w.dtype.kind in "fc":
        ok = np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=2e-3,
                         atol=1e-5, equal_nan=True)
    else:
        ok = np.array_equal(g, w)
    if not ok:
        return "wrong"
    return "yes" if g.dtype == w.dtype else "dtype"


def _run(compile_fn: Callable, fn: Callable, args: tuple, want: object) -> tuple[str, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = compile_fn(fn)(*args)
    except Exception as exc:  # the point is to record what fails
        first = (str(exc).strip().splitlines() or [""])[0]
        return "no", f"{type(exc).__name__}: {first[:90]}".replace("|", "/")
    mark = _same(got, want)
    return mark, "" if mark == "yes" else f"got {np.asarray(got).dtype}"


def main() -> None:
    import numba

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--why", action="store_true", help="add the first error line")
    args = parser.parse_args()
    print(f"numba {numba.__version__}, numpy {np.__version__}, pyasc {pyasc.__version__}")
    print()
    cols = ["construct", "pyasc", "Numba", "note"] + (["pyasc error", "Numba error"]
                                                      if args.why else [])
    print("| " + " | ".join(cols) + " |")
    print("|---" * len(cols) + "|")
    totals = {"pyasc": 0, "Numba": 0}
    for label, fn, fargs in CASES:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = fn(*fargs)
        ours = _run(lambda f: pyasc.hybrid(f, target="cpu"), fn, fargs, want)
        theirs = _run(numba.njit, fn, fargs, want)
        totals["pyasc"] += ours[0] == "yes"
        totals["Numba"] += theirs[0] == "yes"
        row = [label, ours[0], theirs[0], NOTES.get(label, "")] + \
            ([ours[1], theirs[1]] if args.why else [])
        print("| " + " | ".join(row) + " |", flush=True)
    print()
    print(f"{len(CASES)} cases: pyasc {totals['pyasc']} yes, Numba {totals['Numba']} yes")


if __name__ == "__main__":
    main()
