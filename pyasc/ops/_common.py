"""Argument helpers shared by the operators of :mod:`pyasc.ops`, themselves ``@hybrid``
functions so that they are inlined and evaluated at compile time."""

from __future__ import annotations

import numpy as np

from pyasc.frontend import static
from pyasc.jit import hybrid


@hybrid
def pair(v):
    """``(v, v)`` for a number, ``v`` as a tuple for a pair (PyTorch's ``_pair``); a
    compile-time value, since shapes depend on it."""
    v = static(v)
    # a sequence times 0 is empty and a number times 0 is 0: this tells them apart at
    # compile time, also for pairs holding None (adaptive pooling), which np.ndim refuses
    return (v, v) if v * 0 == 0 else (*v,)


@hybrid
def opmath(x):
    """``x`` in the type its math is done in: float16 is computed in float32 (as
    PyTorch's CPU and the AI Core's cube do), other dtypes as they are."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


@hybrid
def out_size(size, kernel, stride, padding, dilation):
    """The output length of a sliding window (PyTorch's floor formula)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


@hybrid
def pad2d(x, ph, pw, ph_end, pw_end, value):
    """``x`` with ``ph``/``ph_end`` rows and ``pw``/``pw_end`` columns of ``value``
    around its last two axes (``x`` itself when there is nothing to add)."""
    if ph == 0 and pw == 0 and ph_end == 0 and pw_end == 0:
        return x
    h, w = x.shape[-2:]
    xp = np.full(x.shape[:-2] + (h + ph + ph_end, w + pw + pw_end), value, dtype=x.dtype)
    xp[..., ph:ph + h, pw:pw + w] = x
    return xp
