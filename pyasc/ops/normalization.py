"""``softmax``, ``log_softmax``, ``layer_norm`` and ``rms_norm`` as ``@hybrid`` functions
with PyTorch's semantics: reductions along axes feeding elementwise math, which the
compiler fuses.  float16 inputs are computed in float32 and rounded once at the end."""

from __future__ import annotations

import numpy as np

from pyasc.frontend import require, static
from pyasc.jit import hybrid
from pyasc.ops._common import opmath
from pyasc.ops.special import stop_gradient


@hybrid
def softmax(x, dim=-1):
    """``exp(x) / sum(exp(x))`` along ``dim`` (a compile-time int), computed from
    ``x - max`` so that it does not overflow."""
    xa = opmath(x)
    # the shift's exact gradient is 0: not differentiated (as torch's and JAX's softmax)
    e = np.exp(xa - stop_gradient(np.max(xa, axis=dim, keepdims=True)))
    return (e / np.sum(e, axis=dim, keepdims=True)).astype(x.dtype)


@hybrid
def log_softmax(x, dim=-1):
    """``x - log(sum(exp(x)))`` along ``dim``, computed from ``x - max``."""
    xa = opmath(x)
    shifted = xa - stop_gradient(np.max(xa, axis=dim, keepdims=True))
    return (shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
            ).astype(x.dtype)


@hybrid
def last_axes(x, normalized_shape):
    """``x`` (float16 as float32) with its trailing ``normalized_shape`` axes made one
    axis, checked to be that shape."""
    ns = static(normalized_shape)
    ns = (ns,) if ns * 0 == 0 else (*ns,)  # an int, or a sequence (see ``pair``)
    lead = x.shape[:x.ndim - len(ns)]
    require(x.shape[x.ndim - len(ns):] == ns,
            "the trailing axes of the input must have the normalized_shape")
    return np.ascontiguousarray(opmath(x)).reshape(lead + (-1,)), ns


@hybrid
def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing axes of shape
    ``normalized_shape`` (an int or a tuple), with the biased variance."""
    xr, ns = last_axes(x, normalized_shape)
    mean = np.mean(xr, axis=-1, keepdims=True)
    var = np.mean(np.square(xr - mean), axis=-1, keepdims=True)
    y = ((xr - mean) / np.sqrt(var + eps)).reshape(x.shape)
    if weight is not None:
        y = y * opmath(weight)
    if bias is not None:
        y = y + opmath(bias)
    return y.astype(x.dtype)


@hybrid
def rms_norm(x, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing axes of shape
    ``normalized_shape``; ``eps=None`` is the machine epsilon of ``x``'s dtype."""
    xr, ns = last_axes(x, normalized_shape)
    e = np.finfo(x.dtype).eps if eps is None else eps
    y = (xr / np.sqrt(np.mean(np.square(xr), axis=-1, keepdims=True) + e)).reshape(x.shape)
    if weight is not None:
        y = y * opmath(weight)
    return y.astype(x.dtype)
