"""The automatic backward of ``pyasc.ops`` operators against torch's and numpy's.

    python benchmarks/bench_autodiff.py [--rows 4096] [--cols 1024] [--repeat 9]
                                        [--markdown]

For layernorm (with weight and bias), softmax, gelu (tanh and erf) on float32 rows:
``op.vjp(x, ..., dout)`` (no registered gradient: the backward pyasc derives from the
operator's IR, compiled for the CPU) against a hand-written numpy backward that also
starts from the inputs (it recomputes the mean, the softmax... as the derived backward
does), and against torch's eager backward when torch is installed: ``torch bwd`` is
``torch.autograd.grad`` on a retained graph (the backward alone, its forward saved: the
issue's yardstick), ``torch f+b`` the forward and the backward (what ``op.vjp``
computes, since it recomputes the forward).  The last row is one training step of
``examples/training/train_mlp.py`` (``value_and_grad`` of its MLP loss, batch 64)
against the same step in torch.  Every variant's gradient is checked against numpy's
(the MLP's against torch's) first.

Times are medians over rounds run round-robin, single-threaded (``PYASC_NUM_THREADS``,
``torch.set_num_threads(1)`` and friends), each round long enough to hold 50 ms of
calls: wall time and the calling thread's CPU time (``time.thread_time``: less
sensitive to the other jobs of a shared machine; the ratios use it).  The kernel counts
are the ``fusion.group`` kernels of the optimized forward and backward.
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
import pyasc  # noqa: E402
import pyasc.ops as O  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "training"))
import train_mlp  # noqa: E402

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


def torch_backward(name: str, x, extra, g) -> dict[str, Callable]:
    """``torch bwd`` (the backward of a saved graph) and ``torch f+b``; none without
    torch."""
    try:
        import torch
    except ImportError:
        return {}
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
    return {"torch bwd": lambda: torch.autograd.grad(y, leaves, tg, retain_graph=True),
            "torch f+b": lambda: torch.autograd.grad(fns[name](), leaves, tg)}


def kernels(fn, *args, **kwargs) -> int:
    spec = fn._specialization(args, kwargs)[0]
    return sum(op.name == "fusion.group" for op in spec.program.module.walk())


def per_call(fn: Callable, min_time: float = 0.05) -> tuple[float, float]:
    """(wall, thread CPU) seconds per call of ``fn``, over at least ``min_time``."""
    n, start, cpu = 0, time.perf_counter(), time.thread_time()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed / n, (time.thread_time() - cpu) / n


def timed(variants: dict[str, Callable], repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) per call of each variant over ``repeat`` round-robin rounds."""
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in variants}
    for fn in variants.values():  # warm up: torch builds some kernels on first use
        fn()
    for _ in range(repeat):
        for k, fn in variants.items():
            times[k].append(per_call(fn))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
            for k, v in times.items()}


def run_case(case: tuple, repeat: int) -> dict:
    name, op, args, g, np_bwd, np_args, torch_name, grads_of = case
    auto = op._automatic_vjp()
    variants: dict[str, Callable] = {
        "pyasc": lambda: op.vjp(*args, g), "numpy": lambda: np_bwd(*np_args)}
    extra = [args[i] for i in grads_of[1:]]
    variants.update(torch_backward(torch_name, args[0], extra, g))
    want = np_bwd(*np_args)
    want = want if isinstance(want, tuple) else (want,)
    got = op.vjp(*args, g)
    for i, w in zip(grads_of, want, strict=True):
        np.testing.assert_allclose(got[i], w, rtol=2e-3, atol=2e-3 * np.abs(w).max())
    fwd = kernels(op, *args)
    bwd = kernels(auto, *args, **{auto.dout_name: g})
    return {"name": name, "shape": "x".join(map(str, args[0].shape)),
            "kernels": f"{fwd}/{bwd}", **timed(variants, repeat)}


def mlp_case(repeat: int, batch: int = 64) -> dict:
    """One SGD step's loss and gradients of train_mlp's model (pyasc, and torch when installed)."""
    x, labels = train_mlp.make_data(2048, 16, 4)
    params = train_mlp.init_params(16, 32, 4)
    xb, yb = x[:batch], labels[:batch]
    step = pyasc.value_and_grad(train_mlp.mlp_loss, argnums=(2, 3, 4, 5))
    variants: dict[str, Callable] = {"pyasc": lambda: step(xb, yb, *params)}
    loss, grads = step(xb, yb, *params)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)
        ps = [torch.tensor(p, requires_grad=True) for p in params]
        xt, yt = torch.from_numpy(xb), torch.from_numpy(yb)

        def torch_step() -> tuple:
            h = torch.nn.functional.gelu(xt @ ps[0] + ps[1])
            out = torch.nn.functional.cross_entropy(h @ ps[2] + ps[3], yt)
            return out, torch.autograd.grad(out, ps)

        tloss, tgrads = torch_step()
        assert abs(float(loss) - tloss.item()) < 1e-4
        for a, b in zip(grads, tgrads, strict=True):
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-3, atol=1e-5)
        variants["torch f+b"] = torch_step
    spec = step._specialization((xb, yb, *params), {})[0]
    bwd = sum(op.name == "fusion.group" for op in spec.program.module.walk())
    return {"name": "MLP step (value_and_grad)", "shape": f"{batch}x16, 16-32-4",
            "kernels": f"{kernels(train_mlp.mlp_loss, xb, yb, *params)}/{bwd}",
            **timed(variants, repeat)}


def _cell(r: dict, k: str) -> str:
    if k not in r:
        return " - |"
    wall, cpu = r[k]
    return f" {_ms(cpu)} ({_ms(wall)}) |"


def _ms(t: float) -> str:
    return f"{t * 1e3:.3g} ms" if t >= 1e-3 else f"{t * 1e6:.3g} µs"


def _ratio(r: dict, k: str) -> str:
    return f" {r['pyasc'][1] / r[k][1]:.2f}x |" if k in r else " - |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    rows = [run_case(c, args.repeat) for c in cases(args.rows, args.cols)]
    rows.append(mlp_case(args.repeat))
    cols = ["pyasc", "numpy", "torch bwd", "torch f+b"]
    print("\n## Automatic backward (float32, 1 thread; CPU time per call (wall))\n")
    print("| backward | shape | kernels fwd/bwd | " + " | ".join(cols)
          + " | pyasc/numpy | pyasc/torch bwd | pyasc/torch f+b |")
    print("|" + "---|" * (len(cols) + 6))
    for r in rows:
        print(f"| {r['name']} | {r['shape']} | {r['kernels']} |"
              + "".join(_cell(r, k) for k in cols)
              + "".join(_ratio(r, k) for k in cols[1:]))
    print(f"\n- python {sys.version.split()[0]}, numpy {np.__version__}; medians of "
          f"{args.repeat} round-robin rounds; ratios of CPU times")


if __name__ == "__main__":
    main()
