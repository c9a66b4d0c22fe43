"""The seed's dynamic-shape adaptive pooling (section 6.1), completed for both axes."""

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


def _inputs(rng, size):
    shape = {"small": (2, 8, 28, 28), "default": (8, 64, 112, 112)}[size]
    return rng.standard_normal(shape).astype(np.float32), (7, 7)


DEMO_CASES = [{"name": "adaptive_pool", "fn": adaptive_pool, "inputs": _inputs, "rtol": 1e-5}]

if __name__ == "__main__":
    x = np.random.randn(1, 2, 14, 14).astype(np.float32)
    print(adaptive_pool(x, (7, 7)).shape)
