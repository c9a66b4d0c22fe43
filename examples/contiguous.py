"""The seed's memory-layout advice (section 4.2): a strided view against the same data
made contiguous with ``np.ascontiguousarray``.

pyasc takes the view as it is (a kernel for its strides, no copy); the contiguous copy
gets the unit-stride kernel the NPU's DMA rules favour.  Both give the same result; the
times printed are medians measured side by side in this run.
"""

import statistics
import time

import numpy as np

from pyasc import hybrid


@hybrid
def scale_shift(x):
    return np.maximum(x * 0.5 + 1.0, 0.0)


def median_time(fn, repeat=15):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def check(n=100, repeat=15):
    """The seed's two inputs (``n`` x ``n`` data, every other row and column); returns
    the lines to print."""
    # 优化前 (before): a non-contiguous view
    x = np.random.randn(n, n)[::2, ::2]
    # 优化后 (after): the same values, contiguous
    y = np.ascontiguousarray(x)
    assert not x.flags.c_contiguous and y.flags.c_contiguous
    want = np.maximum(x * 0.5 + 1.0, 0.0)
    assert np.array_equal(scale_shift(x), want) and np.array_equal(scale_shift(y), want)
    strided = median_time(lambda: scale_shift(x), repeat)
    contiguous = median_time(lambda: scale_shift(y), repeat)
    copy = median_time(lambda: np.ascontiguousarray(x), repeat)
    return [f"contiguous: {x.shape} view with strides {x.strides} and its contiguous copy: "
            "equal results",
            f"contiguous: strided {strided * 1e6:.1f} us, contiguous {contiguous * 1e6:.1f} us, "
            f"np.ascontiguousarray {copy * 1e6:.1f} us (medians of {repeat})"]


def _inputs(rng, size):
    n = {"small": 200, "default": 1000}[size]
    return (rng.standard_normal((n, n))[::2, ::2],)


DEMO_CASES = [{"name": "strided_view", "fn": scale_shift, "inputs": _inputs}]

if __name__ == "__main__":
    print("\n".join(check(100) + check(1000)))
