"""Row softmax and layer normalization: reductions feeding elementwise math."""

import numpy as np

from pyasc import hybrid


@hybrid
def softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


@hybrid
def layernorm(x, gamma, beta, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _rows(rng, size):
    return {"small": (64, 256), "default": (4096, 1024)}[size]


def _softmax_inputs(rng, size):
    return (rng.standard_normal(_rows(rng, size)).astype(np.float32),)


def _layernorm_inputs(rng, size):
    n, d = _rows(rng, size)
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x, rng.random(d).astype(np.float32), rng.random(d).astype(np.float32)


DEMO_CASES = [
    {"name": "softmax", "fn": softmax, "inputs": _softmax_inputs, "rtol": 1e-5},
    {"name": "layernorm", "fn": layernorm, "inputs": _layernorm_inputs, "rtol": 1e-4},
]

if __name__ == "__main__":
    x = np.random.randn(4, 8).astype(np.float32)
    print(softmax.ir(x))
    print(softmax(x).sum(axis=-1))
