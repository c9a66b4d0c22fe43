"""GELU (tanh approximation): a chain of elementwise ops the compiler fuses."""

import numpy as np

from pyasc import hybrid


@hybrid
def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def _inputs(rng, size):
    n = {"small": 1 << 12, "default": 1 << 22}[size]
    return (rng.standard_normal(n).astype(np.float32),)


DEMO_CASES = [{"name": "gelu_tanh", "fn": gelu, "inputs": _inputs, "rtol": 1e-5}]

if __name__ == "__main__":
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    print(gelu(x))
