"""Seeded draws of the newest AscendC lowerings (``test_cols_conv_properties`` runs them
on ``ascend-sim`` against the Python function): reductions over the leading axes (the
``cols`` schedule: ``sum``/``max``/``min``/``mean``/``var`` over ``axis=0``,
``axis=(0, 1)``, softmax over axis 0, ``sum(axis=(0, 2))`` split into rows and columns,
integer whole-array ``max``/``min``) with random shapes (1, odd, 4097 rows), dtypes,
``keepdims`` and views; and ``ops.conv2d`` with a random epilogue (bias, relu, gelu,
silu, a scale, a residual, a cast) and geometry.  Sums of small integers are exact in
the device's float32 accumulation, so a mismatch there is a wrong result, not rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from progen import load
from window_forms import as_view

REDUCTIONS = ("sum", "max", "min", "mean", "var")


def col_reduce(x, how: str, axis, keepdims: bool):
    """``x.<how>(axis=axis, keepdims=keepdims)``: the reduction of the draw."""
    return getattr(x, how)(axis=axis, keepdims=keepdims)


def col_sum(x):
    return x.sum(axis=0)


def col_max_keep(x):
    return np.max(x, axis=0, keepdims=True)


def col_min(x):
    return x.min(axis=0)


def col_mean_scaled(x):
    return x.mean(axis=0) * 2 + 1


def col_var(x):
    return x.var(axis=0)


def col_abs_sum_keep(x):
    return np.abs(x).sum(axis=0, keepdims=True)


def softmax0(x):
    e = np.exp(x - x.max(axis=0))
    return e / e.sum(axis=0)


def lead2_sum(x):
    return x.sum(axis=(0, 1))


def lead2_max_keep(x):
    return x.max(axis=(0, 1), keepdims=True)


def outer_sum(x):
    return x.sum(axis=(0, 2))


def outer_mean_keep(x):
    return np.mean(x, axis=(0, 2), keepdims=True)


def whole_max(x):
    return x.max()


def whole_min(x):
    return np.min(x)


FLOAT2 = (col_sum, col_max_keep, col_min, col_mean_scaled, col_var, col_abs_sum_keep,
          softmax0)
FLOAT3 = (lead2_sum, lead2_max_keep, outer_sum, outer_mean_keep)
INT2 = (col_max_keep, col_min, whole_max, whole_min)
ROWS = (1, 2, 3, 7, 16, 17, 31, 127, 128, 129, 300, 4097)
COLS = (1, 2, 3, 7, 8, 16, 17, 33, 64, 100, 257)


@dataclass
class Case:
    """One draw: the function, its arguments, the relative tolerance."""

    fn: object
    args: tuple
    rtol: float


def _array(rng: np.random.Generator, shape: tuple[int, ...], dtype: type,
           exact: bool) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    if exact:
        return rng.integers(-3, 4, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def draw_cols(seed: int) -> Case:
    """A column, leading-axes or whole-array reduction of ``seed``."""
    rng = np.random.default_rng(seed)
    kind = rng.integers(3)
    rows, cols = int(rng.choice(ROWS)), int(rng.choice(COLS))
    if rows == 4097:
        cols = min(cols, 33)
    if kind == 0:
        dtype = (np.int32, np.int16)[rng.integers(2)]
        fn, shape = INT2[rng.integers(len(INT2))], (rows, cols)
    else:
        dtype = (np.float32, np.float16)[rng.integers(2)]
        if kind == 1:
            fn, shape = FLOAT2[rng.integers(len(FLOAT2))], (rows, cols)
        else:
            fn = FLOAT3[rng.integers(len(FLOAT3))]
            shape = (int(rng.integers(1, 6)), max(1, rows // 16), cols)
    exact = fn in (col_sum, col_max_keep, col_min, lead2_sum, lead2_max_keep, outer_sum,
                   col_abs_sum_keep) or bool(rng.integers(2))
    x = as_view(rng, _array(rng, shape, dtype, exact))
    rtol = 0.0 if dtype in (np.int32, np.int16) else (4e-3 if dtype == np.float16 else 2e-5)
    return Case(fn, (x,), rtol)


EPILOGUE = {"scale": "y = y * 0.5", "residual": "y = y + r", "relu": "y = np.maximum(y, 0)",
            "gelu": "y = ops.gelu(y)", "silu": "y = ops.silu(y)",
            "cast": "y = y.astype(np.float16)"}
"""The epilogue steps after ``ops.conv2d`` (``bias`` is its third argument)."""


def conv_epilogue(seed: int) -> tuple[str, tuple[int, int, int], list[str]]:
    """The source of ``prog(x, w, b, r)``: ``conv2d`` of ``seed``'s geometry and a
    random epilogue, with the geometry and the steps."""
    rng = np.random.default_rng(seed)
    geo = (int(rng.integers(1, 3)), int(rng.integers(0, 3)), int(rng.integers(1, 3)))
    steps = [str(s) for s in rng.choice([*EPILOGUE, "bias"], size=int(rng.integers(1, 4)),
                                        replace=False)]
    bias = "b" if "bias" in steps else "None"
    lines = [f"y = ops.conv2d(x, w, {bias}, stride={geo[0]}, padding={geo[1]}, "
             f"dilation={geo[2]})"]
    lines += [line for step, line in EPILOGUE.items() if step in steps]
    body = "".join(f"    {line}\n" for line in lines)
    source = ("import numpy as np\nfrom pyasc import ops\n\n\n"
              f"def prog(x, w, b, r):\n{body}    return y\n")
    return source, geo, steps


def draw_conv(seed: int) -> Case:
    """``ops.conv2d`` with a random epilogue and geometry, float16 or float32 inputs."""
    rng = np.random.default_rng(seed + 10_000)
    source, (s, p, d), steps = conv_epilogue(seed)
    dtype = (np.float16, np.float32)[rng.integers(2)]
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    n, c, o = int(rng.integers(1, 3)), int(rng.integers(1, 20)), int(rng.integers(1, 40))
    h = int(rng.integers(d * (kh - 1) + 1 - 2 * p if d * (kh - 1) + 1 > 2 * p else 1, 14))
    w_ = int(rng.integers(d * (kw - 1) + 1 - 2 * p if d * (kw - 1) + 1 > 2 * p else 1, 14))
    oh, ow = (h + 2 * p - d * (kh - 1) - 1) // s + 1, (w_ + 2 * p - d * (kw - 1) - 1) // s + 1
    x = _array(rng, (n, c, h, w_), dtype, True)
    w = _array(rng, (o, c, kh, kw), dtype, True)
    b = _array(rng, (o,), dtype, True)
    r = _array(rng, (n, o, max(oh, 1), max(ow, 1)), dtype, True)
    exact = not ({"gelu", "silu"} & set(steps))
    rtol = 0.0 if exact and dtype == np.float32 else 4e-3
    return Case(load(source), (x, w, b, r), rtol)
