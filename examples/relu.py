"""ReLU, as written in the pyasc seed article (section 2.2)."""

import numpy as np

from pyasc import hybrid


@hybrid
def relu(x):
    return np.maximum(x, 0)


if __name__ == "__main__":
    x = np.random.randn(4, 8).astype(np.float32)
    print(relu.ir(x))
    print(relu(x))


def _inputs(rng, size):
    n = {"small": 1 << 12, "default": 1 << 22}[size]
    return (rng.standard_normal(n).astype(np.float32),)


DEMO_CASES = [{"name": "relu", "fn": relu, "inputs": _inputs}]
