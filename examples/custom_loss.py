"""The seed's custom loss with a user-defined gradient (section 6.2), and the case the
seed names as its motivation: a focal loss with its gradient.

``@fn.def_grad`` registers a gradient function compiled like ``fn``; it takes the
forward inputs then ``dout``.  ``fn.vjp(*inputs, dout)`` runs it and checks one gradient
per input (the input's shape and dtype; ``None`` for a number such as ``gamma``).  The
gradients are checked here against central finite differences.
"""

import numpy as np

from pyasc import hybrid


@hybrid
def custom_loss(pred, target):
    diff = pred - target
    return np.sum(diff**2)


@custom_loss.def_grad
def custom_loss_grad(pred, target, dout):
    return 2*(pred - target)*dout, -2*(pred - target)*dout


@hybrid
def focal_loss(logits, labels, gamma=2.0):
    """Binary focal loss: cross-entropy down-weighted on well-classified examples."""
    p = 1.0 / (1.0 + np.exp(-logits))
    pos = labels * (1 - p) ** gamma * np.log(p)
    neg = (1 - labels) * p ** gamma * np.log(1 - p)
    return -np.sum(pos + neg)


@focal_loss.def_grad
def focal_loss_grad(logits, labels, gamma, dout):
    p = 1.0 / (1.0 + np.exp(-logits))
    dpos = gamma * p * (1 - p) ** gamma * np.log(p) - (1 - p) ** (gamma + 1)
    dneg = p ** (gamma + 1) - gamma * p ** gamma * (1 - p) * np.log(1 - p)
    d_logits = (labels * dpos + (1 - labels) * dneg) * dout
    d_labels = (p ** gamma * np.log(1 - p) - (1 - p) ** gamma * np.log(p)) * dout
    return d_logits, d_labels


def finite_differences(fn, inputs, dout, h=1e-6):
    """Central differences of ``dout * fn(*inputs)`` for each array input (float64)."""
    grads = []
    for k, x in enumerate(inputs):
        if not isinstance(x, np.ndarray):
            grads.append(None)
            continue
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            hi, lo = list(inputs), list(inputs)
            hi[k], lo[k] = x.copy(), x.copy()
            hi[k][idx] += h
            lo[k][idx] -= h
            g[idx] = (fn.__wrapped__(*hi) - fn.__wrapped__(*lo)) / (2 * h) * dout
        grads.append(g)
    return grads


def check(n=6, dout=0.5):
    """Each gradient against finite differences; returns the lines to print."""
    rng = np.random.default_rng(0)
    cases = [("custom_loss", custom_loss, [rng.standard_normal(n), rng.standard_normal(n)]),
             ("focal_loss", focal_loss, [2 * rng.standard_normal(n), rng.random(n)]),
             ("focal_loss gamma=3", focal_loss, [rng.standard_normal(n), rng.random(n), 3.0])]
    lines = []
    for name, fn, inputs in cases:
        grads = fn.vjp(*inputs, dout)
        want = finite_differences(fn, inputs, dout)
        for g, w in zip(grads, want, strict=False):
            if w is None:
                assert g is None
            else:
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
        lines.append(f"{name}: loss {fn(*inputs):.6f}, vjp equal to finite differences")
    return lines


def _inputs(rng, size):
    n = {"small": 1 << 12, "default": 1 << 22}[size]
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def _grad_inputs(rng, size):
    return (*_inputs(rng, size), 0.5)


def _focal_inputs(rng, size):
    logits, labels = _inputs(rng, size)
    return logits, (labels > 0).astype(np.float32)


DEMO_CASES = [
    {"name": "squared_error_loss", "fn": custom_loss, "inputs": _inputs, "rtol": 1e-4},
    {"name": "squared_error_grad", "fn": custom_loss_grad, "inputs": _grad_inputs},
    {"name": "focal_loss", "fn": focal_loss, "inputs": _focal_inputs, "rtol": 1e-4},
]

if __name__ == "__main__":
    print("\n".join(check()))
