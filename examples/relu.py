"""ReLU, as written in the pyasc seed article (section 2.2)."""

import numpy as np

from pyasc import hybrid


@hybrid
def relu(x):
    return np.maximum(x, 0)


def check(shapes=((4, 8), (1000,), (3, 5, 7))):
    """Compare with numpy on a few shapes; returns the lines to print."""
    rng = np.random.default_rng(0)
    lines = []
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        assert np.array_equal(relu(x), np.maximum(x, 0))
        lines.append(f"relu: {shape} float32, equal to numpy")
    return lines


if __name__ == "__main__":
    x = np.random.randn(4, 8).astype(np.float32)
    print(relu.ir(x))
    print("\n".join(check()))


def _inputs(rng, size):
    n = {"small": 1 << 12, "default": 1 << 22}[size]
    return (rng.standard_normal(n).astype(np.float32),)


DEMO_CASES = [{"name": "relu", "fn": relu, "inputs": _inputs}]
