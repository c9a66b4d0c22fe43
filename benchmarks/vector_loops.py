"""User loops on the vector unit: ascend-sim counters with and without ``batch-loops``.

For each program written with Python loops (the seed's bilateral filter, a 3x3 blur,
a depthwise convolution, the adaptive pool, a max pool written with loops and
``pyasc.ops.max_pool2d``, a 3x3 blur, the bilateral filter and a depthwise convolution
compiled with ``dynamic_shape=True`` (the convolution with and without bounds checks, and
with its window size read from the weights' shape: one kernel per window size), a
depthwise convolution written with window slices (static and ``dynamic_shape=True``, its
size literal or ``wt.shape[1]``), a multi-channel 3x3 convolution written with window
slices and with loops (static and ``dynamic_shape=True``: a run-time channel count), a
batch of RGB images convolved with a literal channel count (``dynamic_shape=True``), a
division of (N, C, h, w) by an (h, w) plane, per-row softmax and layernorm), prints the
GM traffic the sim counted (DataCopy both ways plus scalar GetValue/SetValue) against
the minimum (every input read once, the output written once), the vector API calls,
the scalar GM accesses and the kernels launched.  Three builds: "scalar" with
``PYASC_DISABLE_PASSES=batch-loops,stencil-windows`` (no loop batching, no stencil or
pool kernels: ``main``'s scalar kernels before issue 19), "flat" with
``PYASC_DISABLE_PASSES=stencil-windows`` (loops batched, each stencil window its own
kernel input; pooling loops stay scalar), "stencil" with every pass (stencil and pool
kernels).  Host-side data movement (the flat build's
snapshots of shifted views) is not counted by the sim: on an NPU those are device
copies (see docs/ascendc-backend.md).

    python benchmarks/vector_loops.py [--only NAME,...]   (names: prefixes of the rows)
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import pyasc  # noqa: E402
from adaptive_pool import adaptive_pool  # noqa: E402
from bilateral_filter import bilateral_filter  # noqa: E402
from pyasc import hybrid  # noqa: E402
from pyasc.ops import avg_pool2d, max_pool2d  # noqa: E402


def blur3(img):
    h, w = img.shape
    out = np.zeros_like(img)
    for i in range(1, h - 1):
        for j in range(1, w - 1):
            acc = np.float32(0)
            for di in range(-1, 2):
                for dj in range(-1, 2):
                    acc += img[i + di, j + dj]
            out[i, j] = acc / 9
    return out


def depthwise(x, wt):
    c, h, w = x.shape
    k = wt.shape[1]
    out = np.zeros((c, h - k + 1, w - k + 1), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - k + 1):
            for j in range(w - k + 1):
                s = np.float32(0)
                for di in range(k):
                    for dj in range(k):
                        s += x[ch, i + di, j + dj] * wt[ch, di, dj]
                out[ch, i, j] = s
    return out


def depthwise_k(x, wt, k):
    """``depthwise`` with a static kernel size (the window loops of a run-time size do
    not unroll), for run-time image shapes."""
    k = pyasc.static(k)
    c, h, w = x.shape
    out = np.zeros((c, h - k + 1, w - k + 1), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - k + 1):
            for j in range(w - k + 1):
                s = np.float32(0)
                for di in range(k):
                    for dj in range(k):
                        s += x[ch, i + di, j + dj] * wt[ch, di, dj]
                out[ch, i, j] = s
    return out


def depthwise_slices(x, wt):
    c, h, w = x.shape
    out = np.zeros((c, h - 2, w - 2), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - 2):
            for j in range(w - 2):
                out[ch, i, j] = np.sum(x[ch, i:i + 3, j:j + 3] * wt[ch])
    return out


def conv_slices(x, wt):
    c, h, w = x.shape
    out = np.zeros((wt.shape[0], h - 2, w - 2), dtype=x.dtype)
    for o in range(wt.shape[0]):
        for i in range(h - 2):
            for j in range(w - 2):
                out[o, i, j] = np.sum(x[:, i:i + 3, j:j + 3] * wt[o])
    return out


def conv_loops(x, wt):
    c, h, w = x.shape
    out = np.zeros((wt.shape[0], h - 2, w - 2), dtype=x.dtype)
    for o in range(wt.shape[0]):
        for i in range(h - 2):
            for j in range(w - 2):
                acc = np.float32(0)
                for ch in range(c):
                    for di in range(3):
                        for dj in range(3):
                            acc += x[ch, i + di, j + dj] * wt[o, ch, di, dj]
                out[o, i, j] = acc
    return out


def depthwise_slices_k(x, wt):
    k = wt.shape[1]  # a window slice of a run-time size (dynamic_shape: one kernel per k)
    c, h, w = x.shape
    out = np.zeros((c, h - k + 1, w - k + 1), dtype=x.dtype)
    for ch in range(c):
        for i in range(h - k + 1):
            for j in range(w - k + 1):
                out[ch, i, j] = np.sum(x[ch, i:i + k, j:j + k] * wt[ch])
    return out


def conv_rgb(x, wt):
    out = np.zeros((x.shape[0], wt.shape[0], x.shape[2] - 2, x.shape[3] - 2), dtype=x.dtype)
    for b in range(x.shape[0]):
        for o in range(wt.shape[0]):
            for i in range(x.shape[2] - 2):
                for j in range(x.shape[3] - 2):
                    acc = np.float32(0)
                    for ch in range(3):  # a literal channel count
                        for di in range(3):
                            for dj in range(3):
                                acc += x[b, ch, i + di, j + dj] * wt[o, ch, di, dj]
                    out[b, o, i, j] = acc
    return out


def plane_divide(x, w):
    return x / w


def maxpool_loops(x, k, s, p):
    h, w = x.shape[-2:]
    oh = (h + 2 * p - k) // s + 1
    ow = (w + 2 * p - k) // s + 1
    out = np.empty(x.shape[:-2] + (oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            r0 = max(i * s - p, 0)
            c0 = max(j * s - p, 0)
            out[..., i, j] = x[..., r0:min(i * s - p + k, h),
                               c0:min(j * s - p + k, w)].max(axis=(-2, -1))
    return out


def max_pool_op(x):
    return max_pool2d(x, 3, 2, 1)


def avg_pool_op(x):
    return avg_pool2d(x, 2)


def max_pool_dilated_op(x):
    return max_pool2d(x, 3, dilation=2)


def max_pool_dynamic(x):
    return max_pool2d(x, 2)


def softmax_rows(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        e = np.exp(x[i] - x[i].max())
        out[i] = e / e.sum()
    return out


def layernorm_rows(x, g, b):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        d = x[i] - x[i].mean()
        out[i] = d / np.sqrt((d * d).mean() + 1e-5) * g + b
    return out


def _cases():
    rng = np.random.default_rng(0)
    f32 = np.float32
    return [
        ("bilateral 40x70", bilateral_filter.__wrapped__, (rng.random((40, 70)).astype(f32),)),
        ("bilateral 128x128", bilateral_filter.__wrapped__,
         (rng.random((128, 128)).astype(f32),)),
        ("blur 3x3 128x128", blur3, (rng.random((128, 128)).astype(f32),)),
        ("depthwise 3x3 8x64x64", depthwise, (rng.random((8, 64, 64)).astype(f32),
                                             rng.random((8, 3, 3)).astype(f32))),
        ("adaptive pool 4x64x64->7x7", adaptive_pool.__wrapped__,
         (rng.random((4, 64, 64)).astype(f32), (7, 7))),
        ("adaptive pool 8x64x30x45->7x7", adaptive_pool.__wrapped__,
         (rng.random((8, 64, 30, 45)).astype(f32), (7, 7))),
        ("max pool 3x3/2 pad 1 8x64x64", maxpool_loops,
         (rng.random((8, 64, 64)).astype(f32), 3, 2, 1)),
        ("max_pool2d (pyasc.ops) 3x3/2 pad 1 1x8x64x64", max_pool_op,
         (rng.random((1, 8, 64, 64)).astype(f32),)),
        ("avg_pool2d (pyasc.ops) 2x2 2x8x32x32", avg_pool_op,
         (rng.random((2, 8, 32, 32)).astype(f32),)),
        ("avg_pool2d (pyasc.ops) 2x2 2x8x32x32 dynamic", avg_pool_op,
         (rng.random((2, 8, 32, 32)).astype(f32),)),
        ("max_pool2d (pyasc.ops) 3x3 dil 2 2x8x32x32", max_pool_dilated_op,
         (rng.random((2, 8, 32, 32)).astype(f32),)),
        ("max_pool2d (pyasc.ops) 2x2 2x8x32x32 dynamic", max_pool_dynamic,
         (rng.random((2, 8, 32, 32)).astype(f32),)),
        ("blur 3x3 128x128 dynamic", blur3, (rng.random((128, 128)).astype(f32),)),
        ("bilateral 128x128 dynamic", bilateral_filter.__wrapped__,
         (rng.random((128, 128)).astype(f32),)),
        ("depthwise 3x3 8x64x64 dynamic (boundscheck=False)", depthwise_k,
         (rng.random((8, 64, 64)).astype(f32), rng.random((8, 3, 3)).astype(f32), 3)),
        ("depthwise 3x3 8x64x64 dynamic (checked)", depthwise_k,
         (rng.random((8, 64, 64)).astype(f32), rng.random((8, 3, 3)).astype(f32), 3)),
        ("depthwise slices 3x3 8x64x64", depthwise_slices,
         (rng.random((8, 64, 64)).astype(f32), rng.random((8, 3, 3)).astype(f32))),
        ("depthwise slices 3x3 8x64x64 dynamic", depthwise_slices,
         (rng.random((8, 64, 64)).astype(f32), rng.random((8, 3, 3)).astype(f32))),
        ("conv slices 3x3 8->16 64x64", conv_slices,
         (rng.random((8, 64, 64)).astype(f32), rng.random((16, 8, 3, 3)).astype(f32))),
        ("conv loops 3x3 8->16 64x64", conv_loops,
         (rng.random((8, 64, 64)).astype(f32), rng.random((16, 8, 3, 3)).astype(f32))),
        ("depthwise 3x3 8x64x64 dynamic k=wt.shape[1] (checked)", depthwise,
         (rng.random((8, 64, 64)).astype(f32), rng.random((8, 3, 3)).astype(f32))),
        ("depthwise 5x5 8x64x64 dynamic k=wt.shape[1] (checked)", depthwise,
         (rng.random((8, 64, 64)).astype(f32), rng.random((8, 5, 5)).astype(f32))),
        ("depthwise slices 3x3 8x64x64 dynamic k=wt.shape[1]", depthwise_slices_k,
         (rng.random((8, 64, 64)).astype(f32), rng.random((8, 3, 3)).astype(f32))),
        ("conv loops 3x3 8->16 64x64 dynamic", conv_loops,
         (rng.random((8, 64, 64)).astype(f32), rng.random((16, 8, 3, 3)).astype(f32))),
        ("conv slices 3x3 8->16 64x64 dynamic", conv_slices,
         (rng.random((8, 64, 64)).astype(f32), rng.random((16, 8, 3, 3)).astype(f32))),
        ("conv rgb batch 3x3 2x3->16 64x64 dynamic", conv_rgb,
         (rng.random((2, 3, 64, 64)).astype(f32), rng.random((16, 3, 3, 3)).astype(f32))),
        ("x / w (8,16,28,28)/(28,28)", plane_divide,
         (rng.random((8, 16, 28, 28)).astype(f32), rng.random((28, 28)).astype(f32) + 1)),
        ("x / w (8,16,28,28)/(28,28) dynamic", plane_divide,
         (rng.random((8, 16, 28, 28)).astype(f32), rng.random((28, 28)).astype(f32) + 1)),
        ("softmax rows 128x1000", softmax_rows, (rng.random((128, 1000)).astype(f32),)),
        ("layernorm rows 128x1000", layernorm_rows,
         (rng.random((128, 1000)).astype(f32), rng.random(1000).astype(f32),
          rng.random(1000).astype(f32))),
    ]


BUILDS = (("scalar", "batch-loops,stencil-windows"), ("flat", "stencil-windows"),
          ("stencil", ""))
KINDS = {"VectorKernel": "V", "ScalarKernel": "S", "StencilKernel": "T", "CubeKernel": "C",
         "PoolKernel": "P"}


def _measure(name: str, fn, args, disabled: str) -> dict:
    os.environ["PYASC_DISABLE_PASSES"] = disabled
    dynamic = fn.__name__ in ("adaptive_pool", "maxpool_loops") or "dynamic" in name
    # the bilateral filter computes in float64 (numpy's rules): demoted on the device
    checks = "boundscheck=False" not in name
    compiled = hybrid(fn, target="ascend-sim", dynamic_shape=dynamic, device_float64="demote",
                      boundscheck=checks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compiled(*args)
    np.testing.assert_allclose(got, fn(*args), rtol=1e-3, atol=1e-5)
    k = compiled.kernel(*args)
    c = k.last_counters
    itemsize = np.asarray(got).itemsize
    minimum = sum(a.nbytes for a in args if isinstance(a, np.ndarray)) + np.asarray(got).nbytes
    scalar = c["gm_scalar_read_bytes"] + c["gm_scalar_write_bytes"]
    return {"gm": c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] + scalar, "min": minimum,
            "vec": c["vec_calls"], "scalar": scalar // itemsize,
            "kinds": "+".join(_launched(k))}


def _launched(k) -> list[str]:  # noqa: ANN001
    """The kinds of the kernels that ran (not the twins the host did not launch)."""
    kinds = {x.name: KINDS[type(x).__name__] for x in k.ascend.kernels}
    return [kinds[name] for name, _ in k.last_kernels]


def main() -> None:
    print(f"{'program':28} {'':7} {'GM bytes':>10} {'x min':>7} {'vector calls':>12} "
          f"{'scalar GM acc.':>14}  kernels (V vector, T stencil, P pool, S scalar)")
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
    for name, fn, args in _cases():
        if only and not any(name.startswith(o) for o in only):
            continue
        for label, disabled in BUILDS:
            r = _measure(name, fn, args, disabled)
            print(f"{name:28} {label:7} {r['gm']:>10} {r['gm'] / r['min']:>7.2f} "
                  f"{r['vec']:>12} {r['scalar']:>14}  {r['kinds']}")


if __name__ == "__main__":
    main()
