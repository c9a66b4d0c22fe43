"""``pyasc.ops.conv2d`` against the im2col/einsum numpy reference on every target, over
odd shapes, strides, paddings, dilations, groups and dtypes; called directly, inside a
``@hybrid`` function and inside an ``AscendOperator.compute`` with an epilogue."""

from __future__ import annotations

import numpy as np
import ops_reference as ref
import pytest

from pyasc import AscendOperator, hybrid
from pyasc.errors import ShapeInferenceError
from pyasc.ir import parse_module
from pyasc.ops import conv2d

TARGETS = ref.TARGETS
CASES = {  # name: (x shape, w shape, bias?, keyword arguments)
    "plain": ((1, 1, 5, 5), (1, 1, 3, 3), False, {}),
    "stride_pad": ((2, 3, 7, 9), (4, 3, 3, 2), True, dict(stride=2, padding=1)),
    "pairs_groups": ((2, 4, 9, 11), (6, 2, 3, 2), True,
                     dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)),
    "depthwise": ((1, 4, 6, 5), (4, 1, 3, 3), True, dict(padding=1, groups=4)),
    "pointwise": ((1, 2, 8, 7), (3, 2, 1, 1), False, dict(stride=3)),
    "dilated": ((2, 3, 10, 7), (5, 3, 5, 3), False, dict(dilation=2, padding=(2, 0))),
}
SIM_DTYPE_CASES = ("pairs_groups", "depthwise")  # (the simulator runs scalar code)


def inputs(case: str, dtype, seed: int = 0):
    xs, ws, has_bias, kw = CASES[case]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype) if has_bias else None
    return x, w, b, kw


def terms(w) -> int:
    return int(np.prod(w.shape[1:]))


@pytest.mark.parametrize("target, case, dtype", list(ref.grid(CASES, SIM_DTYPE_CASES)))
def test_conv2d_matches_numpy(target, case, dtype, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    ref.float64_device(monkeypatch, target, dtype)
    x, w, b, kw = inputs(case, dtype)
    got = conv2d(x, w, b, **kw)
    ref.assert_close(got, ref.conv2d(x, w, b, **kw), dtype, scale=terms(w))


def test_conv2d_float16_accumulates_in_float32(monkeypatch):
    # 4096 products of 1 + 1/1024: float16 sums stall at 2048, float32 gives 4100
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x = np.ones((1, 4096, 1, 1), np.float16)
    w = np.full((1, 4096, 1, 1), 1 + 1 / 1024, np.float16)
    assert conv2d(x, w)[0, 0, 0, 0] == np.float16(4096 * (1 + 1 / 1024))


def test_conv2d_keywords_are_compile_time_values(monkeypatch):
    # shapes depend on padding and groups: one specialization per value, static shapes
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x, w, b, _ = inputs("depthwise", np.float32)
    for pad in (0, 1, 2):
        got = conv2d(x, w, b, padding=pad, groups=4)
        ref.assert_close(got, ref.conv2d(x, w, b, padding=pad, groups=4), np.float32, 9)
    text = conv2d.ir(x, w, b, padding=1, groups=4)
    assert "?" not in text.split("\n", 3)[2], "the kernel's parameters have static shapes"
    assert "%padding" not in text and "%groups" not in text


TILED_CASES = {  # big enough for the CPU's register tiles: row, column and k-block edges
    "batch_tails": ((3, 5, 13, 11), (20, 5, 3, 3), True, dict(padding=1)),
    "batch_k_blocks": ((2, 16, 9, 12), (11, 16, 3, 3), False,
                       dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2))),
    "groups_dilated": ((2, 24, 10, 9), (27, 8, 3, 3), True,
                       dict(padding=1, dilation=2, groups=3)),
    "groups_deep": ((2, 64, 7, 9), (16, 32, 3, 3), False, dict(padding=(0, 1), groups=2)),
    "pointwise_batch": ((3, 40, 6, 7), (17, 40, 1, 1), False, {}),
    "strided_batch": ((4, 3, 23, 21), (9, 3, 5, 5), True, dict(stride=2, padding=2)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(TILED_CASES))
def test_conv2d_tiled_products_match_interpret_and_numpy(case, dtype, monkeypatch):
    """Batches, groups, odd sizes, strides, paddings and dilations through the CPU's
    blocked product (tails of rows and columns, several k blocks): the compiled result
    against ``interpret`` and the float64 reference."""
    xs, ws, has_bias, kw = TILED_CASES[case]
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype) if has_bias else None
    monkeypatch.setenv("PYASC_TARGET", "interpret")
    want = conv2d(x, w, b, **kw)
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    got = conv2d(x, w, b, **kw)
    ref.assert_close(got, want.astype(np.float64), dtype, scale=terms(w))
    ref.assert_close(got, ref.conv2d(x, w, b, **kw), dtype, scale=terms(w))


def test_conv2d_result_is_the_products_buffer(monkeypatch):
    """The result, a reshape of the product's output, is returned without a copy (a
    fresh array and a pass over the whole output: 2 MB for a batch of 8 32 x 32 images
    of 64 channels)."""
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x, w, _, kw = inputs("dilated", np.float32)
    module = parse_module(conv2d.kernel(x, w, **kw).loop_ir)
    returned = module.get("conv2d").entry.terminator.operand_values[0]
    assert returned.op.name == "mem.reshape"
    product = returned.op.operand_values[0]
    assert product.op.name == "mem.alloc"
    stores = [op for op in module.walk() if op.name == "mem.store"
              and op.operand_values[1] is product]
    assert stores  # the product's own nest writes it
    ref.assert_close(conv2d(x, w, **kw), ref.conv2d(x, w, **kw), np.float32, terms(w))


@hybrid
def conv_bias_relu(x, w, b):
    return np.maximum(conv2d(x, w, stride=2, padding=1) + b.reshape(1, -1, 1, 1), 0)


class ConvReLU(AscendOperator):
    def __init__(self, w, b, padding):
        self.w = w
        self.b = b
        self.padding = padding

    def compute(self, x):
        y = conv2d(x, self.w, padding=self.padding, groups=2)
        return np.maximum(y + self.b.reshape(1, -1, 1, 1), 0.0)


@pytest.mark.parametrize("target", TARGETS)
def test_conv2d_inside_hybrid_with_epilogue(target, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    x, w, b, _ = inputs("stride_pad", np.float32, seed=1)
    want = np.maximum(ref.conv2d(x, w, stride=2, padding=1) + b.reshape(1, -1, 1, 1), 0)
    ref.assert_close(conv_bias_relu(x, w, b), want, np.float32, scale=terms(w))


@pytest.mark.parametrize("target", TARGETS)
def test_conv2d_inside_operator_compute_with_epilogue(target, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    x, w, b, _ = inputs("pairs_groups", np.float32, seed=2)
    op = ConvReLU(w, b, padding=(1, 0))
    want = np.maximum(ref.conv2d(x, w, padding=(1, 0), groups=2) + b.reshape(1, -1, 1, 1), 0)
    ref.assert_close(op(x), want, np.float32, scale=terms(w))


def test_conv2d_epilogue_is_fused_into_the_kernel(monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", "cpu")
    x, w, b, _ = inputs("stride_pad", np.float32)
    text = conv_bias_relu.ir(x, w, b)
    assert text.count("tensor.matmul") == 1 and "func.call" not in text


@pytest.mark.parametrize("target", ["interpret", "cpu"])
def test_conv2d_refuses_channels_groups_do_not_divide(target, monkeypatch):
    monkeypatch.setenv("PYASC_TARGET", target)
    x = np.ones((1, 4, 5, 5), np.float32)
    with pytest.raises(ShapeInferenceError, match="C // groups") as info:
        conv2d(x, np.ones((2, 3, 3, 3), np.float32))
    assert info.value.filename == __file__  # the user's line, not pyasc/ops/conv.py
