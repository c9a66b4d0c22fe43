"""The generated numpy page is up to date, the registry covers the required functions,
and the seed's examples compile (and match numpy through the IR interpreter)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from diff import MATH, check, rand

import pyasc
from pyasc.frontend.docgen import DEFAULT_PATH, main, numpy_support_markdown

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = """maximum minimum exp log sum zeros_like zeros ones empty full arange
ascontiguousarray abs sqrt tanh sin cos where clip max min mean var argmax argmin dot
matmul transpose reshape expand_dims concatenate stack floor ceil round power float32
int32 astype amax amin ones_like full_like empty_like square negative sign log2 log10
exp2 log1p expm1 isnan isinf isfinite logical_and logical_or logical_not any all prod
std take broadcast_to squeeze ravel float64""".split()
METHODS = "sum astype reshape copy max min mean T shape ndim dtype size flatten".split()


def test_committed_numpy_page_is_generated():
    assert DEFAULT_PATH.read_text() == numpy_support_markdown(), \
        "run: python -m pyasc.frontend.docgen"


def test_docgen_writes_the_page(tmp_path):
    assert main([str(tmp_path / "np.md")]) == 0
    assert (tmp_path / "np.md").read_text() == numpy_support_markdown()


def test_supported_numpy_lists_the_required_functions_and_methods():
    table = pyasc.supported_numpy()
    missing = [n for n in REQUIRED if f"np.{n}" not in table]
    missing += [m for m in METHODS if f"x.{m}" not in table]
    assert not missing
    assert table["np.sum"] == "a, axis=None, dtype=None, out=None, keepdims=False"
    assert table["x.shape"] == ""


def load_example(name: str):
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_relu_example():
    relu = load_example("relu").relu
    text = relu.ir(np.zeros((3, 5), np.float32))
    assert '"arith.max"' in text and "examples/relu.py" in text
    check(relu, rand((3, 5)))
    check(relu, rand((7,), "int8"))


@pytest.mark.parametrize("shape", [(12, 12), (11, 14)])
def test_bilateral_filter_example(shape):
    fn = load_example("bilateral_filter").bilateral_filter
    img = rand(shape, "float32")
    text = fn.ir(img)
    assert "memref<11x11xf32, strided<" in text and "tensor<11xf64>" in text
    check(fn, np.abs(img), rtol=MATH)


def test_bilateral_filter_with_dynamic_shapes():
    fn = pyasc.hybrid(dynamic_shape=True)(
        load_example("bilateral_filter").bilateral_filter.__wrapped__)
    check(fn, np.abs(rand((12, 11), "float32")), 5, 0.2, rtol=MATH)


def test_example_sources_keep_the_seed_code_verbatim():
    seed = (ROOT.parent / "shared" / "seed-article.txt")
    text = (ROOT / "examples" / "bilateral_filter.py").read_text()
    for line in ("space_kernel = np.exp(-(np.arange(-5,6)**2)/(2*sigma_space**2))",
                 "color_diff = img[i,j] - img[i-5:i+6, j-5:j+6]",
                 "result[i,j] = np.sum(img[i-5:i+6, j-5:j+6] * weights) / np.sum(weights)"):
        assert line in text
        if seed.exists():
            assert line in seed.read_text()
