"""The seed's class-style convolution: ``CustomConv(AscendOperator)`` creates its
weights in ``__init__`` and its ``compute`` calls ``pyasc.ops.conv2d`` (NCHW input,
OIHW weights, PyTorch's semantics), checked against an im2col + numpy matmul.

The weights are state: the operator reads ``self.weights`` where it is on every call,
so updating them in place (a training step) is seen by the next call, and instances of
the class share the compiled kernels.
"""

import numpy as np

from pyasc import AscendOperator
from pyasc.ops import conv2d


class CustomConv(AscendOperator):
    def __init__(self, kernel_size):
        self.weights = np.random.randn(*kernel_size)

    def compute(self, x):
        return conv2d(x, self.weights)


def conv2d_numpy(x, w):
    """The im2col formulation: every window a row, one matrix product (OpenBLAS)."""
    o, c, kh, kw = w.shape
    cols = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    n, _, oh, ow = cols.shape[:4]
    cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)
    y = cols @ w.reshape(o, c * kh * kw).T
    return np.ascontiguousarray(y.reshape(n, oh, ow, o).transpose(0, 3, 1, 2))


SHAPES = [((2, 3, 12, 10), (8, 3, 3, 3)), ((1, 4, 9, 9), (5, 4, 2, 4))]


def check(shapes=SHAPES):
    """Compare with the im2col reference, then after updating the weights in place;
    returns the lines to print."""
    np.random.seed(0)
    rng = np.random.default_rng(0)
    lines = []
    for xshape, kernel_size in shapes:
        conv = CustomConv(kernel_size)
        x = rng.standard_normal(xshape).astype(np.float32)
        y = conv(x)
        np.testing.assert_allclose(y, conv2d_numpy(x, conv.weights), rtol=1e-10, atol=1e-10)
        lines.append(f"custom_conv: {xshape} * {kernel_size} -> {y.shape} {y.dtype}, "
                     "equal to im2col + numpy matmul")
        conv.weights *= 0.5  # in place: the next call sees it
        np.testing.assert_allclose(conv(x), 0.5 * y, rtol=1e-10, atol=1e-10)
        lines.append("custom_conv: weights halved in place, the output halves")
    return lines


_DEMO = CustomConv((16, 8, 3, 3))


def _inputs(rng, size):
    shape = {"small": (2, 8, 32, 32), "default": (8, 8, 128, 128)}[size]
    return (rng.standard_normal(shape).astype(np.float32),)


DEMO_CASES = [{"name": "custom_conv", "fn": _DEMO, "inputs": _inputs, "rtol": 1e-9,
               "reference": lambda x: conv2d_numpy(x, _DEMO.weights)}]

if __name__ == "__main__":
    print("\n".join(check()))
