"""The automatic backward of ``pyasc.ops`` operators against hand-written backwards.

    python benchmarks/bench_autodiff.py [--rows 4096] [--cols 1024] [--repeat 9]
                                        [--markdown]

For layernorm (with weight and bias), softmax, gelu (tanh and erf) on float32 rows:
``op.vjp(x, ..., dout)`` (no registered gradient: the backward pyasc derives from the
operator's IR, compiled for the CPU) against a hand-written numpy backward that also
starts from the inputs (it recomputes the mean, the softmax... as the derived backward
does), and against torch's eager backward (``torch.autograd.grad`` on a retained graph:
the backward alone, its forward saved) when torch is installed.  Every variant's
gradient is checked against numpy's first.  Times are medians over rounds run
round-robin, single-threaded (``PYASC_NUM_THREADS`` and friends set to 1); the kernel
counts are the ``fusion.group`` kernels of the optimized forward and backward.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "PYASC_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pyasc.ops as O  # noqa: E402

SQRT_2_PI = np.float32(0.7978845608028654)


def np_layernorm_bwd(x, w, b, g):
    mean = x.mean(axis=-1, keepdims=True)
    xc = x - mean
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + np.float32(1e-5))
    xhat = xc * rstd
    gw, gb = (g * xhat).sum(axis=0), g.sum(axis=0)
    gx = g * w
    n = np.float32(x.shape[-1])
    dx = rstd * (gx - gx.sum(axis=-1, keepdims=True) / n
                 - xhat * (gx * xhat).sum(axis=-1, keepdims=True) / n)
    return dx, gw, gb


def np_softmax_bwd(x, g):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    y = e / e.sum(axis=-1, keepdims=True)
    return y * (g - (g * y).sum(axis=-1, keepdims=True))


def np_gelu_tanh_bwd(x, g):
    inner = SQRT_2_PI * (x + np.float32(0.044715) * x * x * x)
    t = np.tanh(inner)
    d_inner = SQRT_2_PI * (1 + np.float32(3 * 0.044715) * x * x)
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)


def np_erf(z):
    """Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf."""
    a = np.abs(z)
    t = 1.0 / (1.0 + np.float32(0.3275911) * a)
    poly = t * (np.float32(0.254829592) + t * (np.float32(-0.284496736) + t * (
        np.float32(1.421413741) + t * (np.float32(-1.453152027)
                                       + t * np.float32(1.061405429)))))
    return np.sign(z) * (1.0 - poly * np.exp(-a * a))


def np_gelu_erf_bwd(x, g):
    cdf = 0.5 * (1.0 + np_erf(x * np.float32(0.7071067811865476)))
    pdf = np.exp(-0.5 * x * x) / np.float32(np.sqrt(2 * np.pi))
    return g * (cdf + x * pdf)


def cases(rows: int, cols: int) -> list[tuple]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    g = rng.standard_normal((rows, cols), dtype=np.float32)
    w = rng.standard_normal(cols, dtype=np.float32)
    b = rng.standard_normal(cols, dtype=np.float32)
    return [
        ("layernorm", O.layer_norm, (x, (cols,), w, b), g, np_layernorm_bwd, (x, w, b, g),
         "layer_norm", (0, 2, 3)),
        ("softmax", O.softmax, (x, -1), g, np_softmax_bwd, (x, g), "softmax", (0,)),
        ("gelu_tanh", O.gelu, (x, "tanh"), g, np_gelu_tanh_bwd, (x, g), "gelu_tanh", (0,)),
        ("gelu", O.gelu, (x,), g, np_gelu_erf_bwd, (x, g), "gelu", (0,)),
    ]


def torch_backward(name: str, x, extra, g) -> Callable | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    tx = torch.tensor(x, requires_grad=True)
    leaves = [tx] + [torch.tensor(a, requires_grad=True) for a in extra]
    fns = {"layer_norm": lambda: torch.nn.functional.layer_norm(
               tx, (x.shape[-1],), leaves[1], leaves[2]),
           "softmax": lambda: torch.softmax(tx, -1),
           "gelu_tanh": lambda: torch.nn.functional.gelu(tx, approximate="tanh"),
           "gelu": lambda: torch.nn.functional.gelu(tx)}
    y = fns[name]()
    tg = torch.tensor(g)
    return lambda: torch.autograd.grad(y, leaves, tg, retain_graph=True)


def kernels(fn, *args, **kwargs) -> int:
    spec = fn._specialization(args, kwargs)[0]
    return sum(op.name == "fusion.group" for op in spec.program.module.walk())


def per_call(fn: Callable, min_time: float = 0.05) -> float:
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed / n


def run_case(case: tuple, repeat: int) -> dict:
    name, op, args, g, np_bwd, np_args, torch_name, grads_of = case
    auto = op._automatic_vjp()
    variants: dict[str, Callable] = {
        "pyasc": lambda: op.vjp(*args, g), "numpy": lambda: np_bwd(*np_args)}
    extra = [args[i] for i in grads_of[1:]]
    tb = torch_backward(torch_name, args[0], extra, g)
    if tb is not None:
        variants["torch"] = tb
    want = np_bwd(*np_args)
    want = want if isinstance(want, tuple) else (want,)
    got = op.vjp(*args, g)
    for i, w in zip(grads_of, want, strict=True):
        np.testing.assert_allclose(got[i], w, rtol=2e-3, atol=2e-3 * np.abs(w).max())
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeat):
        for k, fn in variants.items():
            times[k].append(per_call(fn))
    fwd = kernels(op, *args)
    bwd = kernels(auto, *args, **{auto.dout_name: g})
    return {"name": name, "kernels": (fwd, bwd),
            **{k: statistics.median(v) for k, v in times.items()}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    rows = [run_case(c, args.repeat) for c in cases(args.rows, args.cols)]
    has_torch = any("torch" in r for r in rows)
    head = "| backward | shape | kernels fwd/bwd | pyasc | numpy | pyasc/numpy |"
    head += " torch | pyasc/torch |" if has_torch else ""
    print(f"\n## Automatic backward (float32 {args.rows}x{args.cols}, 1 thread)\n")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        line = (f"| {r['name']} | {args.rows}x{args.cols} | {r['kernels'][0]}/"
                f"{r['kernels'][1]} | {r['pyasc'] * 1e3:.3g} ms | {r['numpy'] * 1e3:.3g} ms"
                f" | {r['pyasc'] / r['numpy']:.2f}x |")
        if has_torch:
            line += (f" {r['torch'] * 1e3:.3g} ms | {r['pyasc'] / r['torch']:.2f}x |"
                     if "torch" in r else " - | - |")
        print(line)
    print(f"\n- python {sys.version.split()[0]}, numpy {np.__version__}; medians of "
          f"{args.repeat} round-robin rounds; torch {'included' if has_torch else 'not installed'}")


if __name__ == "__main__":
    main()
