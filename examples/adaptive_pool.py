"""The seed's dynamic-shape adaptive pooling (section 6.1), completed for the width axis.

The seed computes the height windows (``stride_h = h // out_h``, ``kernel_h = h -
(out_h - 1) * stride_h``) and leaves "the other dimensions" to the reader; the width
axis below is the same rule.  With ``dynamic_shape=True`` one compiled kernel serves
every input shape of the same rank and dtype (the output size is a compile-time value).
"""

import numpy as np

from pyasc import hybrid


@hybrid(dynamic_shape=True)
def adaptive_pool(x, output_size):
    h, w = x.shape[-2:]
    stride_h = h // output_size[0]
    kernel_h = h - (output_size[0]-1)*stride_h
    stride_w = w // output_size[1]
    kernel_w = w - (output_size[1]-1)*stride_w
    out = np.zeros(x.shape[:-2] + (output_size[0], output_size[1]), dtype=x.dtype)
    for i in range(output_size[0]):
        for j in range(output_size[1]):
            window = x[..., i*stride_h:i*stride_h+kernel_h, j*stride_w:j*stride_w+kernel_w]
            out[..., i, j] = np.mean(window, axis=(-2, -1))
    return out


def adaptive_pool_numpy(x, output_size):
    """The same windows in numpy: every window of the kernel size, taken every stride."""
    (h, w), (oh, ow) = x.shape[-2:], output_size
    sh, sw = h // oh, w // ow
    windows = np.lib.stride_tricks.sliding_window_view(
        x, (h - (oh - 1) * sh, w - (ow - 1) * sw), axis=(-2, -1))
    return windows[..., ::sh, ::sw, :, :].mean(axis=(-2, -1)).astype(x.dtype)


def adaptive_avg_pool_divisible(x, output_size):
    """The usual adaptive average pool where the sizes divide: one reshape and a mean."""
    *lead, h, w = x.shape
    oh, ow = output_size
    return x.reshape(*lead, oh, h // oh, ow, w // ow).mean(axis=(-3, -1))


SHAPES = [(2, 3, 14, 14), (1, 4, 28, 21), (3, 2, 15, 17), (1, 1, 7, 7)]


def check(shapes=SHAPES, output_size=(7, 7)):
    """Compare with numpy on several shapes; returns the lines to print."""
    rng = np.random.default_rng(0)
    lines = []
    before = len(adaptive_pool.specializations)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        got = adaptive_pool(x, output_size)
        np.testing.assert_allclose(got, adaptive_pool_numpy(x, output_size), rtol=1e-5,
                                   atol=1e-6)
        how = "numpy windows"
        if shape[-2] % output_size[0] == 0 and shape[-1] % output_size[1] == 0:
            np.testing.assert_allclose(got, adaptive_avg_pool_divisible(x, output_size),
                                       rtol=1e-5, atol=1e-6)
            how += " and the reshape adaptive average pool"
        lines.append(f"adaptive_pool: {shape} -> {got.shape}, equal to {how}")
    compiled = len(adaptive_pool.specializations) - before
    assert compiled <= 1, adaptive_pool.specializations
    lines.append(f"adaptive_pool: {compiled} compilation(s) for {len(shapes)} shapes")
    return lines


def _inputs(rng, size):
    shape = {"small": (2, 8, 28, 28), "default": (8, 64, 112, 112)}[size]
    return rng.standard_normal(shape).astype(np.float32), (7, 7)


DEMO_CASES = [{"name": "adaptive_pool", "fn": adaptive_pool, "inputs": _inputs, "rtol": 1e-5}]

if __name__ == "__main__":
    print("\n".join(check()))
