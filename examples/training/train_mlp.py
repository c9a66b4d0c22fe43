"""Train a tiny MLP with pyasc operators and automatic gradients.

The model is ``softmax_cross_entropy(gelu(x @ w1 + b1) @ w2 + b2, labels)``, written as
one ``@hybrid`` loss function built from ``pyasc.ops`` (``gelu``, ``log_softmax``) and a
gather of the labels' log-probabilities.  ``pyasc.value_and_grad`` derives and compiles
its backward (no gradient written by hand); plain SGD updates the parameters.  The
same model, initialization and batches run in plain torch when it is installed, for
comparing the loss curves.

    python examples/training/train_mlp.py            # pyasc only (torch too, when installed)
    python examples/training/train_mlp.py --steps 50
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import pyasc
from pyasc import hybrid
from pyasc.ops import gelu, log_softmax


@hybrid
def mlp_loss(x, labels, w1, b1, w2, b2):
    """Mean softmax cross-entropy of a two-layer GELU MLP."""
    hidden = gelu(x @ w1 + b1)
    logp = log_softmax(hidden @ w2 + b2, dim=-1)
    return -logp[np.arange(x.shape[0]), labels].mean()


def make_data(n: int, dim: int, classes: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Points around ``classes`` random centres (a learnable synthetic task)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((classes, dim)) * 0.6
    labels = rng.integers(0, classes, n)
    x = centres[labels] + rng.standard_normal((n, dim))
    return x.astype(np.float32), labels.astype(np.int64)


def init_params(dim: int, hidden: int, classes: int, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((dim, hidden)) / np.sqrt(dim)).astype(np.float32),
            np.zeros(hidden, np.float32),
            (rng.standard_normal((hidden, classes)) / np.sqrt(hidden)).astype(np.float32),
            np.zeros(classes, np.float32)]


def batches(n: int, size: int, steps: int, seed: int = 2) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.choice(n, size, replace=False) for _ in range(steps)]


def train_pyasc(x, labels, params, order, lr):  # noqa: ANN001, ANN201
    """SGD with pyasc's compiled loss and gradients; the loss per step."""
    step = pyasc.value_and_grad(mlp_loss, argnums=(2, 3, 4, 5))
    params = [p.copy() for p in params]
    losses = []
    for idx in order:
        loss, grads = step(x[idx], labels[idx], *params)
        for p, g in zip(params, grads, strict=True):
            p -= lr * g
        losses.append(float(loss))
    return losses


def train_torch(x, labels, params, order, lr):  # noqa: ANN001, ANN201
    """The same model and SGD steps in plain torch (None if torch is missing)."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)  # compared with single-threaded pyasc code
    ps = [torch.tensor(p, requires_grad=True) for p in params]
    xt, yt = torch.from_numpy(x), torch.from_numpy(labels)
    losses = []
    for idx in order:
        i = torch.from_numpy(idx)
        h = torch.nn.functional.gelu(xt[i] @ ps[0] + ps[1], approximate="none")
        loss = torch.nn.functional.cross_entropy(h @ ps[2] + ps[3], yt[i])
        grads = torch.autograd.grad(loss, ps)
        with torch.no_grad():
            for p, g in zip(ps, grads, strict=True):
                p -= lr * g
        losses.append(loss.item())
    return losses


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--no-torch", action="store_true", help="skip the torch comparison")
    args = ap.parse_args(argv)
    x, labels = make_data(2048, 16, 4)
    params = init_params(16, 32, 4)
    order = batches(len(x), args.batch, args.steps)
    start = time.perf_counter()
    ours = train_pyasc(x, labels, params, order, args.lr)
    took = time.perf_counter() - start
    ref = None if args.no_torch else train_torch(x, labels, params, order, args.lr)
    print(f"{'step':>6} {'pyasc loss':>11} {'torch loss':>11}")
    for s in sorted({0, *range(args.steps // 10, args.steps, args.steps // 10 or 1),
                     args.steps - 1}):
        other = f"{ref[s]:11.4f}" if ref is not None else f"{'-':>11}"
        print(f"{s:>6} {ours[s]:11.4f} {other}")
    print(f"pyasc: {args.steps} steps in {took:.2f} s (compiling the forward+backward "
          "once included)")
    first, last = np.mean(ours[:10]), np.mean(ours[-10:])
    ok = last < 0.5 * first
    if ref is not None:
        ok = ok and abs(last - np.mean(ref[-10:])) < 0.05 * max(first, 1.0)
    print("loss decreased" + (" as in torch" if ref is not None else "") if ok
          else "loss did NOT decrease as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
