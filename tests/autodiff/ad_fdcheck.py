"""Central finite differences in float64: the reference every gradient is checked against.

``check_vjp(fn, *inputs)`` draws a random ``dout`` of the result's shape, computes
``fn.vjp(*inputs, dout)`` and compares each float array input's gradient with the
central difference of ``sum(dout * fn(inputs))`` (``fn``'s plain Python, numpy), one
element at a time.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-6


def numeric_vjp(py, inputs: list, dout: np.ndarray, i: int, eps: float = EPS
                ) -> np.ndarray:
    """d/d inputs[i] of ``sum(dout * py(*inputs))`` by central differences."""
    x = inputs[i]
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        hi = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
        lo = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
        hi[i][k] += eps
        lo[i][k] -= eps
        g[k] = (np.sum(dout * py(*hi)) - np.sum(dout * py(*lo))) / (2 * eps)
    return g


def check_vjp(fn, *inputs, seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6,
              eps: float = EPS) -> tuple:
    """Check ``fn.vjp`` against finite differences; returns the gradients."""
    rng = np.random.default_rng(seed)
    py = fn.__wrapped__
    out = np.asarray(py(*inputs))
    dout = rng.standard_normal(out.shape)
    dout_arg = dout if out.shape else float(dout)
    grads = fn.vjp(*inputs, dout_arg)
    assert len(grads) >= len(inputs)  # defaults filled in: one entry per parameter
    for i, (x, g) in enumerate(zip(inputs, grads, strict=False)):
        if not isinstance(x, np.ndarray):
            assert g is None
            continue
        assert g.shape == x.shape and g.dtype == x.dtype
        if x.dtype.kind != "f":
            assert not g.any()
            continue
        expected = numeric_vjp(py, list(inputs), dout, i, eps)
        np.testing.assert_allclose(g, expected, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {i}")
    return grads
