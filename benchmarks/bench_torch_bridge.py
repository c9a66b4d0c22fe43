"""Per-call overhead of the PyTorch bridge (``pyasc.torch``) on a tiny op.

    python benchmarks/bench_torch_bridge.py [--size 16] [--markdown]

The op is ``x + y`` on two float32 vectors of ``--size`` elements (the work is nothing:
what is measured is the call).  Rows: numpy's ``np.add`` and torch's ``torch.add``
(the references), the same ``@hybrid`` function called with numpy arrays (its native
entry), with torch tensors (the bridge: tensors viewed as arrays, the result wrapped
as a tensor, the tensors the kernel writes reported to autograd), through
``pyasc.torch.autograd_op`` (a ``torch.autograd.Function``; forward only, with and
without an input requiring grad) and through ``pyasc.torch.custom_op``
(``torch.ops.pyasc.*``).  Each row: the median and best of 15 timeit repetitions, and
the ratio of the median to numpy's.  Needs torch.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import timeit
from collections.abc import Callable

import numpy as np
import pyasc
import torch
from pyasc.torch import autograd_op, custom_op

REPEATS = 15


@pyasc.hybrid(target="cpu")
def bridge_add(x, y):
    """The op whose call is measured."""
    return x + y


@bridge_add.def_grad
def bridge_add_grad(x, y, dout):
    return dout, dout


def per_call(fn: Callable[[], object]) -> tuple[float, float]:
    """(median, best) seconds per call of ``fn()`` over ``REPEATS`` repetitions."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    times = [t / number for t in timer.repeat(repeat=REPEATS, number=number)]
    return statistics.median(times), min(times)


def rows(size: int) -> list[tuple[str, float, float]]:
    """(label, median, best) per way of calling the op."""
    xn = np.arange(size, dtype=np.float32)
    yn = np.ones(size, np.float32)
    xt, yt = torch.from_numpy(xn.copy()), torch.from_numpy(yn.copy())
    xg = xt.clone().requires_grad_()
    op, lib = autograd_op(bridge_add), custom_op(bridge_add, "bench_add")
    calls = [
        ("numpy np.add(x, y)", lambda: np.add(xn, yn)),
        ("torch.add(x, y)  [eager]", lambda: torch.add(xt, yt)),
        ("pyasc add(x, y), numpy arrays  [native entry]", lambda: bridge_add(xn, yn)),
        ("pyasc add(x, y), torch tensors  [bridge]", lambda: bridge_add(xt, yt)),
        ("autograd_op(add)(x, y), no grad wanted", lambda: op(xt, yt)),
        ("autograd_op(add)(x, y), x requires grad  [records the graph]", lambda: op(xg, yt)),
        ("custom_op(add)(x, y)  [torch.ops.pyasc.bench_add]", lambda: lib(xt, yt)),
    ]
    for _, fn in calls:
        fn()  # compile / warm up
    return [(label, *per_call(fn)) for label, fn in calls]


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e9:.0f} ns" if seconds < 1e-6 else f"{seconds * 1e6:.2f} µs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    measured = rows(args.size)
    base = measured[0][1]
    print(f"machine: {platform.processor() or platform.machine()}; torch {torch.__version__},"
          f" numpy {np.__version__}; float32[{args.size}] + float32[{args.size}]")
    if args.markdown:
        print("\n| call | median | best | median / numpy |\n|---|---|---|---|")
    for label, med, best in measured:
        if args.markdown:
            print(f"| {label} | {_fmt(med)} | {_fmt(best)} | {med / base:.1f}x |")
        else:
            print(f"{label:66s} {_fmt(med):>10s} {_fmt(best):>10s} {med / base:6.1f}x")


if __name__ == "__main__":
    main()
