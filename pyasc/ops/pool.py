"""Pooling: ``max_pool2d``, ``avg_pool2d`` and ``adaptive_avg_pool2d`` as ``@hybrid``
functions with PyTorch's semantics, over the last two axes of (N, C, H, W) or (C, H, W)
inputs.  A pooling window is a strided slice per kernel tap, reduced elementwise, so the
whole pool is a few vector operations over the output."""

from __future__ import annotations

import numpy as np

from pyasc.frontend import require, static
from pyasc.jit import hybrid
from pyasc.ops._common import opmath, pad2d, pair


@hybrid
def pool_size(size, kernel, stride, padding, dilation, ceil_mode):
    """The output length of a pooling window (PyTorch's ``pooling_output_shape``):
    with ``ceil_mode`` the last window may start in the padding but not after it."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out = out - 1
    return out


@hybrid
def windows(x, kernel, stride, padding, dilation, ceil_mode, value):
    """``x`` padded with ``value`` as far as the windows may read, the output size
    (oh, ow) and the padding after the input (end_h, end_w).

    The padding after the input is a compile-time bound, not the exact extent of the
    last window: ``padding``, plus ``stride - 1`` with ``ceil_mode`` (whose last window
    starts before ``size + padding``).  An exact extent depends on the input's size, so
    with ``dynamic_shape`` whether anything is padded at all would be decided at run
    time, and the padded array would be an array of run-time size bound in a branch;
    the windows never read the extra elements."""
    h, w = x.shape[-2:]
    oh = pool_size(h, kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    ow = pool_size(w, kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    end_h = padding[0] + (stride[0] - 1 if ceil_mode else 0)
    end_w = padding[1] + (stride[1] - 1 if ceil_mode else 0)
    return pad2d(x, padding[0], padding[1], end_h, end_w, value), oh, ow, end_h, end_w


@hybrid
def tap(xp, i, j, oh, ow, stride, dilation):
    """The input under kernel tap (i, j) of every output window."""
    return xp[..., i * dilation[0]:i * dilation[0] + stride[0] * (oh - 1) + 1:stride[0],
              j * dilation[1]:j * dilation[1] + stride[1] * (ow - 1) + 1:stride[1]]


@hybrid
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Maximum over each window (NaN propagates); padding counts as -inf.  ``stride``
    defaults to ``kernel_size``; all sizes are ints or pairs (compile-time values)."""
    k = pair(kernel_size)
    s = k if stride is None else pair(stride)
    p, d = pair(padding), pair(dilation)
    require(p[0] <= k[0] // 2 and p[1] <= k[1] // 2,
            "max_pool2d: padding must be at most half the kernel size", "argument")
    xp, oh, ow, _, _ = windows(x, k, s, p, d, static(ceil_mode), -np.inf)
    # folded in place into one array: with dynamic_shape an array of run-time size
    # rebound in the loop could not be kept from one iteration to the next on a device
    out = np.full(xp.shape[:-2] + (oh, ow), -np.inf, dtype=x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            out[...] = np.maximum(out, tap(xp, i, j, oh, ow, s, d))
    return out


@hybrid
def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Mean over each window.  The divisor is ``divisor_override`` if given, else the
    window's size clipped to the padded input (``count_include_pad``) or the number of
    input elements in it; float16 accumulates in float32."""
    k = pair(kernel_size)
    s = k if stride is None else pair(stride)
    p = pair(padding)
    require(p[0] <= k[0] // 2 and p[1] <= k[1] // 2,
            "avg_pool2d: padding must be at most half the kernel size", "argument")
    d = (1, 1)
    cm = static(ceil_mode)
    xa = opmath(x)
    h, w = x.shape[-2:]
    xp, oh, ow, _, _ = windows(xa, k, s, p, d, cm, 0)
    if divisor_override is None:
        # the divisor of each window: its sum over ones where elements count (the input
        # and, with count_include_pad, the padding; never what ceil_mode reads past it),
        # computed first so that the division can follow the sums' loop directly
        inside = np.zeros(xp.shape[-2:], dtype=xa.dtype)
        if static(count_include_pad):
            inside[:h + 2 * p[0], :w + 2 * p[1]] = 1
        else:
            inside[p[0]:p[0] + h, p[1]:p[1] + w] = 1
        count = np.zeros((oh, ow), dtype=xa.dtype)
        for i in range(k[0]):
            for j in range(k[1]):
                count += tap(inside, i, j, oh, ow, s, d)
    total = np.zeros(xp.shape[:-2] + (oh, ow), dtype=xa.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            total += tap(xp, i, j, oh, ow, s, d)
    if divisor_override is not None:
        return (total / divisor_override).astype(x.dtype)
    return (total / count).astype(x.dtype)


@hybrid
def adaptive_avg_pool2d(x, output_size):
    """Mean over PyTorch's adaptive windows: output row ``i`` of ``oh`` averages input
    rows ``floor(i*h/oh)`` to ``ceil((i+1)*h/oh)``; ``output_size`` is an int or a pair
    whose ``None`` keeps that input size (compile-time values)."""
    h, w = x.shape[-2:]
    size = pair(output_size)
    oh = h if size[0] is None else size[0]
    ow = w if size[1] is None else size[1]
    xa = opmath(x)
    out = np.empty(x.shape[:-2] + (oh, ow), dtype=xa.dtype)
    for i in range(oh):
        h0 = (i * h) // oh
        h1 = ((i + 1) * h + oh - 1) // oh
        for j in range(ow):
            w0 = (j * w) // ow
            w1 = ((j + 1) * w + ow - 1) // ow
            out[..., i, j] = np.mean(xa[..., h0:h1, w0:w1], axis=(-2, -1))
    return out.astype(x.dtype)
