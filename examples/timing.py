"""The seed's benchmarking pattern (section 7): ``timeit`` around the operator.

The first call compiles (and is left out of the timing); the mean printed is the
seed's ``t.timeit(number=100)/100``, next to the same function run by numpy.
"""

import timeit

import numpy as np

from pyasc import hybrid


@hybrid
def your_operator(data):
    return np.tanh(data) * np.exp(-data * data)


def check(n=1 << 16, number=100):
    """Time the operator as the seed does; returns the lines to print."""
    data = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(your_operator(data), your_operator.__wrapped__(data),
                               rtol=1e-5, atol=1e-6)  # (the first call compiles)
    t = timeit.Timer(lambda: your_operator(data))
    mean = t.timeit(number=number) / number
    t_np = timeit.Timer(lambda: your_operator.__wrapped__(data))
    mean_np = t_np.timeit(number=number) / number
    return [f"timing: {n} float32 values, result equal to numpy",
            f"平均执行时间 (mean time): {mean:.6f}s; numpy {mean_np:.6f}s"]


def _inputs(rng, size):
    n = {"small": 1 << 12, "default": 1 << 22}[size]
    return (rng.standard_normal(n).astype(np.float32),)


DEMO_CASES = [{"name": "timing", "fn": your_operator, "inputs": _inputs, "rtol": 1e-5}]

if __name__ == "__main__":
    print("\n".join(check()))
