"""The seed's custom loss with a user-defined gradient (section 6.2)."""

import numpy as np

from pyasc import hybrid


@hybrid
def custom_loss(pred, target):
    diff = pred - target
    return np.sum(diff**2)


@custom_loss.def_grad
def custom_loss_grad(pred, target, dout):
    return 2*(pred - target)*dout, -2*(pred - target)*dout


def _inputs(rng, size):
    n = {"small": 1 << 12, "default": 1 << 22}[size]
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def _grad_inputs(rng, size):
    return (*_inputs(rng, size), 0.5)


DEMO_CASES = [
    {"name": "squared_error_loss", "fn": custom_loss, "inputs": _inputs, "rtol": 1e-4},
    {"name": "squared_error_grad", "fn": custom_loss_grad, "inputs": _grad_inputs},
]

if __name__ == "__main__":
    p, t = np.ones(4, np.float32), np.zeros(4, np.float32)
    print(custom_loss(p, t), custom_loss.grad(p, t, 1.0))
