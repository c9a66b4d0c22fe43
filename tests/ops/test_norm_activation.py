"""``pyasc.ops`` softmax, log_softmax, layer_norm, rms_norm, gelu and silu against
their numpy formulas on every target, over odd shapes, axes and dtypes; and inside a
``@hybrid`` function with a residual epilogue."""

from __future__ import annotations

import numpy as np
import ops_reference as ref
import pytest

from pyasc import hybrid
from pyasc.errors import ShapeInferenceError
from pyasc.ops import gelu, layer_norm, log_softmax, rms_norm, silu, softmax

TARGETS = ref.TARGETS
OPS = {"softmax": softmax, "log_softmax": log_softmax, "layer_norm": layer_norm,
       "rms_norm": rms_norm, "gelu": gelu, "silu": silu}
CASES = {  # name: (function, x shape, positional, keywords; "w"/"b" are made arrays)
    "softmax_last": ("softmax", (3, 7), (), {}),
    "softmax_dim1": ("softmax", (2, 5, 3), (), dict(dim=1)),
    "log_softmax_dim0": ("log_softmax", (9, 4), (), dict(dim=0)),
    "log_softmax_last": ("log_softmax", (2, 3, 11), (), {}),
    "layer_norm_int": ("layer_norm", (4, 13), (13,), dict(weight="w", bias="b")),
    "layer_norm_2axes": ("layer_norm", (2, 3, 5), ((3, 5),), dict(weight="w", eps=1e-3)),
    "layer_norm_plain": ("layer_norm", (5, 6), ([6],), {}),
    "rms_norm_weight": ("rms_norm", (3, 9), (9,), dict(weight="w")),
    "rms_norm_2axes": ("rms_norm", (2, 4, 3), ((4, 3),), dict(eps=1e-6)),
    "gelu_erf": ("gelu", (3, 17), (), {}),
    "gelu_tanh": ("gelu", (33,), (), dict(approximate="tanh")),
    "silu": ("silu", (4, 5, 3), (), {}),
}
SIM_DTYPE_CASES = ("softmax_dim1", "layer_norm_int", "gelu_erf", "silu")


def make(case: str, dtype):
    name, shape, args, kw = CASES[case]
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    tail = args[0] if args and np.ndim(args[0]) == 0 else None
    norm = (tail,) if tail is not None else tuple(args[0]) if args else ()
    kw = {k: rng.standard_normal(norm).astype(dtype) if v in ("w", "b") else v
          for k, v in kw.items()}
    return name, x, args, kw


@pytest.mark.parametrize("target, case, dtype", list(ref.grid(CASES, SIM_DTYPE_CASES)))
def test_op_matches_numpy(target, case, dtype, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    ref.float64_device(monkeypatch, target, dtype)
    name, x, args, kw = make(case, dtype)
    got = OPS[name](x, *args, **kw)
    # the AI Core's erf is Abramowitz & Stegun 7.1.26 (docs/math-accuracy.md)
    scale = 1e5 if target == "ascend-sim" and name == "gelu" and dtype == np.float64 else 4
    ref.assert_close(got, getattr(ref, name)(x, *args, **kw), dtype, scale=scale)


def test_silu_and_softmax_do_not_overflow_float16(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = np.array([-12.0, -30.0, 0.0, 30.0], np.float16)  # exp(12) overflows float16
    ref.assert_close(silu(x), ref.silu(x), np.float16)
    ref.assert_close(softmax(x * 100), ref.softmax(x * 100), np.float16)


def test_normalized_shape_must_match_the_trailing_axes(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    with pytest.raises(ShapeInferenceError, match="normalized_shape") as info:
        layer_norm(np.ones((4, 8), np.float32), 5)
    assert info.value.filename == __file__


@hybrid
def block(x, w, b):
    return x + gelu(layer_norm(x, x.shape[-1], w, b), approximate="tanh")


@pytest.mark.parametrize("target", TARGETS)
def test_ops_inside_hybrid_with_residual(target, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    rng = np.random.default_rng(6)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 12), 12, 12))
    want = x + ref.gelu(ref.layer_norm(x, 12, w, b), approximate="tanh")
    ref.assert_close(block(x, w, b), want, np.float32, scale=4)
