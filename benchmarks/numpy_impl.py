"""Vectorized numpy formulations, for kernels whose user formulation is loop-based.

The numpy column of the results is the best of the plain kernel (run by CPython + numpy)
and the formulation here, so pyasc is compared with what a numpy expert would write, not
only with a Python loop driving numpy.  Each function computes exactly what its kernel in
``kernels.py`` computes (the harness checks it like every other variant).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def adaptive_avg_pool_reshape(x, output_size):
    """Adaptive average pooling as one reshape + mean (valid when the sizes divide)."""
    n, c, h, w = x.shape
    oh, ow = output_size
    if h % oh or w % ow:
        raise ValueError("the reshape formulation needs output sizes that divide the input")
    return x.reshape(n, c, oh, h // oh, ow, w // ow).mean(axis=(3, 5))


def conv2d_im2col(x, w):
    """Valid 2-D convolution as im2col + one BLAS product (``tensordot``)."""
    windows = sliding_window_view(x, w.shape[2:], axis=(2, 3))  # n, c, oh, ow, r, s
    out = np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3]))  # n, oh, ow, k
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


def nms_vectorized(boxes, scores, iou_threshold):
    """Greedy NMS, each kept box compared against all remaining candidates at once."""
    order = np.argsort(-scores)
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    areas = (x2 - x1) * (y2 - y1)
    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        w = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0.0)
        h = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0.0)
        inter = w * h
        order = rest[inter / (areas[i] + areas[rest] - inter) <= iou_threshold]
    return np.array(keep, dtype=np.int64)


VARIANTS = {
    "adaptive_avg_pool": {"numpy reshape": adaptive_avg_pool_reshape},
    "conv2d": {"numpy im2col": conv2d_im2col},
    "nms": {"numpy vectorized": nms_vectorized},
}
