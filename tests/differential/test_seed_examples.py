"""The seed article's examples, ``examples/relu.py`` and ``examples/bilateral_filter.py``,
compiled for the CPU vs the Python functions: several sizes (down to the smallest the
filter accepts), float32 and float64, views, ``dynamic_shape=True`` and the sigma
arguments as Python floats and ints.

The filter's inputs are smooth images with noise, so that both weight kernels matter
(on white noise with ``sigma_color=0.1`` nearly every weight but the centre underflows
to 0 and the result is the input).  Large images are checked on the CPU only: the IR
interpreter runs the 2-d loop one iteration at a time.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from diff import Tol, check, in_layout, rand

from pyasc import hybrid

ROOT = Path(__file__).resolve().parents[2]


def _example(name: str):
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"seed_example_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


relu = _example("relu")
bilateral = _example("bilateral_filter")
relu_dyn = hybrid(dynamic_shape=True)(relu.__wrapped__)
bilateral_dyn = hybrid(dynamic_shape=True)(bilateral.__wrapped__)

# exp of the colour kernel in the image's dtype, exp of the space kernel in float64,
# two sums of 11 x 11 terms, a division
FILTER_TOL = Tol(math=2, terms=2 * 121)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (257,), (13, 7), (64, 64)])
def test_relu(shape, dtype):
    x = rand(shape, dtype)
    check(relu, x)
    check(relu_dyn, x)


@pytest.mark.parametrize("layout", ["F", "step2", "reversed", "reversed-inner", "transposed"])
def test_relu_on_views(layout):
    x = in_layout(rand((13, 7), "float32"), layout)
    check(relu, x)
    check(relu_dyn, x)


def image(shape: tuple[int, int], dtype: str, seed: int = 0) -> np.ndarray:
    """A smooth gradient in [0, 1] plus noise."""
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w]
    base = 0.5 + 0.4 * np.sin(yy / 5.0) * np.cos(xx / 7.0)
    noise = 0.05 * np.random.default_rng(seed).standard_normal(shape)
    return np.clip(base + noise, 0.0, 1.0).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(11, 11), (12, 17), (10, 10)])
def test_bilateral_filter_small_images(shape, dtype):
    img = image(shape, dtype)
    check(bilateral, img, rtol=FILTER_TOL)
    check(bilateral, img, 3, 0.2, rtol=FILTER_TOL)          # sigmas: int, float
    check(bilateral_dyn, img, 2.5, 1, rtol=FILTER_TOL)      # float, int


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bilateral_filter_64x64(dtype):
    img = image((64, 64), dtype, seed=1)
    check(bilateral, img, runners=("cpu",), rtol=FILTER_TOL)
    check(bilateral_dyn, img, 4, 0.15, runners=("cpu",), rtol=FILTER_TOL)


@pytest.mark.parametrize("layout", ["F", "step2", "reversed", "transposed"])
def test_bilateral_filter_on_views(layout):
    img = in_layout(image((12, 13), "float32", seed=2), layout)
    check(bilateral, img, rtol=FILTER_TOL)
    check(bilateral_dyn, img, 10, 0.1, runners=("cpu",), rtol=FILTER_TOL)


def test_bilateral_filter_weights_are_not_trivial():
    """The inputs exercise the colour kernel: the result is not the input."""
    img = image((16, 16), "float64")
    out = bilateral.__wrapped__(img)
    inner = (slice(5, -5), slice(5, -5))
    assert np.abs(out[inner] - img[inner]).max() > 1e-3
