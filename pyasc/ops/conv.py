"""``conv2d``: PyTorch's ``torch.nn.functional.conv2d`` as a ``@hybrid`` function.

The convolution is an im2col: every kernel tap copies one strided window of the padded
input into a column matrix, and one (grouped, batched) matrix product with the weights
gives every output at once, so the CPU backend's blocked matmul does the work and the
AscendC backend lowers it as it lowers ``np.matmul`` (on dav-c220: the loop of window
copies is one DMA kernel, ``copy_loops``, and the product a cube kernel).  The column
matrix keeps the input's dtype when ``x`` and ``w`` share it (a copy is exact): float16
operands then reach the matmul as float16 widened to float32, which the cube reads as
one float16 kernel accumulating in float32, with half the bytes of a float32 im2col.
"""

from __future__ import annotations

import numpy as np

from pyasc.frontend import require, static
from pyasc.jit import hybrid
from pyasc.ops._common import opmath, out_size, pad2d, pair


@hybrid
def _im2col(xp, groups, cg, kh, kw, oh, ow, sh, sw, dh, dw):
    """The column matrix (N, groups, cg * kh * kw, oh * ow) of the padded input ``xp``:
    ``xp`` itself, reshaped, for a 1 x 1 kernel that visits every pixel (no copy)."""
    n = xp.shape[0]
    if kh * kw == 1 and sh * sw == 1 and xp.shape[2:] == (oh, ow):
        return xp.reshape(n, groups, cg, oh * ow)
    cols = np.empty((n, groups, cg, kh, kw, oh, ow), dtype=xp.dtype)
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                cols[:, g, :, i, j] = xp[:, g * cg:(g + 1) * cg,
                                         i * dh:i * dh + sh * (oh - 1) + 1:sh,
                                         j * dw:j * dw + sw * (ow - 1) + 1:sw]
    return cols.reshape(n, groups, cg * kh * kw, oh * ow)


@hybrid
def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of ``x`` (N, C, H, W) with ``w`` (O, C // groups, KH, KW), plus
    ``bias`` (O,) if given; ``stride``, ``padding`` and ``dilation`` are ints or pairs
    (compile-time values).  float16 accumulates in float32; the result has the dtype
    numpy's promotion gives ``x``, ``w`` and ``bias``."""
    sh, sw = pair(stride)
    ph, pw = pair(padding)
    dh, dw = pair(dilation)
    groups = static(groups)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    require(c == cg * groups, "conv2d: w must have C // groups input channels (the "
            "channels of x divided by groups)")
    require(o % groups == 0, "conv2d: the number of filters (w.shape[0]) must divide by "
            "groups")
    oh = out_size(h, kh, sh, ph, dh)
    ow = out_size(wd, kw, sw, pw, dw)
    # the im2col copies x as it is when the matmul can widen both operands (same dtype)
    xp = pad2d(x if x.dtype == w.dtype else opmath(x), ph, pw, ph, pw, 0)
    cols = _im2col(xp, groups, cg, kh, kw, oh, ow, sh, sw, dh, dw)
    wm = np.ascontiguousarray(w).reshape(groups, o // groups, cg * kh * kw)
    y = np.matmul(opmath(wm), opmath(cols))
    y = y.reshape(n, o, oh, ow)
    half = x.dtype == np.float16 and w.dtype == np.float16
    if bias is not None:
        y = y + opmath(bias).reshape(o, 1, 1)
        half = half and bias.dtype == np.float16
    # float16 only when every input is: otherwise y already has numpy's promoted dtype
    return y.astype(np.float16) if half else y
