"""The bilateral filter of the pyasc seed article (section 3.2), verbatim."""

import numpy as np

from pyasc import hybrid


@hybrid
def bilateral_filter(img, sigma_space=10, sigma_color=0.1):
    h, w = img.shape
    result = np.zeros_like(img)
    # 空间域核
    space_kernel = np.exp(-(np.arange(-5,6)**2)/(2*sigma_space**2))
    for i in range(5, h-5):
        for j in range(5, w-5):
            # 颜色差异核
            color_diff = img[i,j] - img[i-5:i+6, j-5:j+6]
            color_kernel = np.exp(-(color_diff**2)/(2*sigma_color**2))
            # 组合权重
            weights = space_kernel * color_kernel
            result[i,j] = np.sum(img[i-5:i+6, j-5:j+6] * weights) / np.sum(weights)
    return result


def check(sizes=(16, 32)):
    """Compare with the Python function run by numpy; returns the lines to print."""
    rng = np.random.default_rng(0)
    lines = []
    for n in sizes:
        img = rng.random((n, n)).astype(np.float32)
        np.testing.assert_allclose(bilateral_filter(img), bilateral_filter.__wrapped__(img),
                                   rtol=1e-5, atol=1e-6)
        lines.append(f"bilateral_filter: {n}x{n} float32 image, equal to numpy")
    return lines


if __name__ == "__main__":
    img = np.random.rand(32, 32).astype(np.float32)
    print(bilateral_filter.ir(img))
    print("\n".join(check()))


def _inputs(rng, size):
    n = {"small": 48, "default": 256}[size]
    return (rng.random((n, n)).astype(np.float32),)


DEMO_CASES = [{"name": "bilateral_filter", "fn": bilateral_filter, "inputs": _inputs,
               "rtol": 1e-5}]
