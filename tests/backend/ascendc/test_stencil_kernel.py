"""Stencils written with loops run as stencil kernels on ascend-sim (``stencil-windows``).

After ``batch-loops`` a 3x3 blur or a depthwise convolution is a group whose inputs are
shifted windows of one array.  The stencil kernel loads each tile's input rows once
(halo included) and makes every window a ``Gather`` inside the Unified Buffer: the GM
traffic must stay within 1.2x the minimum (every input read once, the output written
once), with no scalar GM access, and the results equal numpy's.  Odd sizes, several
tiles and several blocks; two arrays read through windows; a window reaching both
sides; and the pass disabled (the ``flat`` kernel of before, 4-9x the GM bytes).
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check

from pyasc import hybrid

RNG = np.random.default_rng(1919)


@hybrid
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


@hybrid
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


@hybrid
def two_arrays(a, b):
    out = np.zeros_like(a)
    for i in range(2, a.shape[0] - 1):
        for j in range(1, a.shape[1] - 3):
            out[i, j] = np.exp(a[i - 2, j + 3] - a[i, j - 1]) * b[i + 1, j] + b[i, j]
    return out


@hybrid
def gradient_magnitude(img):
    h, w = img.shape
    out = np.zeros((h - 2, w - 2), dtype=img.dtype)
    for i in range(h - 2):
        for j in range(w - 2):
            gx = img[i, j + 2] - img[i, j] + 2 * (img[i + 1, j + 2] - img[i + 1, j])
            gy = img[i + 2, j] - img[i, j] + 2 * (img[i + 2, j + 1] - img[i, j + 1])
            out[i, j] = np.sqrt(gx * gx + gy * gy)
    return out


@hybrid
def laplacian(img):
    out = np.zeros_like(img)
    for i in range(1, img.shape[0] - 1):
        for j in range(1, img.shape[1] - 1):
            out[i, j] = img[i - 1, j] + img[i + 1, j] + img[i, j - 1] + img[i, j + 1] \
                - 4 * img[i, j]
    return out


def _f32(*shape):
    return RNG.random(shape).astype(np.float32)


CASES = [
    ("blur 41x67", blur3, (_f32(41, 67),)),
    ("blur 257x131 (several tiles, blocks)", blur3, (_f32(257, 131),)),
    ("depthwise 5x23x37", depthwise, (_f32(5, 23, 37), _f32(5, 3, 3))),
    ("depthwise 3x61x45 5x5", depthwise, (_f32(3, 61, 45), _f32(3, 5, 5))),
    ("two arrays", two_arrays, (_f32(29, 35), _f32(29, 35))),
    ("blur float16 image", blur3, (_f32(37, 53).astype(np.float16),)),
    ("laplacian int32", laplacian, (RNG.integers(-1000, 1000, (31, 45)).astype(np.int32),)),
    ("laplacian float16", laplacian, (_f32(21, 77).astype(np.float16),)),
]


def _minimum(args, got) -> int:
    return sum(a.nbytes for a in args) + np.asarray(got).nbytes


@pytest.mark.parametrize("name,fn,args", CASES, ids=[c[0] for c in CASES])
def test_stencil_reads_each_input_once(name, fn, args):
    k = check(fn, *args)
    kinds = [type(x).__name__ for x in k.ascend.kernels]
    assert kinds == ["StencilKernel"], name
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0  # no scalar loop
    assert c["Gather_calls"] > 0
    interior = np.asarray(fn.__wrapped__(*args))
    gm = c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"]
    assert gm <= 1.2 * _minimum(args, interior), (gm, _minimum(args, interior))


def test_split_groups_are_each_a_stencil():
    # the fusion pass splits this body in two groups (gx; gy and the root, reading gx):
    # both are stencils, the second with gx as an array of its own shape
    k = check(gradient_magnitude, _f32(33, 70))
    assert [type(x).__name__ for x in k.ascend.kernels] == ["StencilKernel"] * 2
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0


def test_disabled_pass_keeps_the_flat_kernel(monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "stencil-windows")
    img = _f32(19, 23)
    k = check(blur3, img)
    assert [type(x).__name__ for x in k.ascend.kernels] == ["VectorKernel"]
    c = k.last_counters
    assert c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] > 4 * 2 * img.nbytes * 0.8


def test_windows_written_between_snapshot_and_use_are_not_a_stencil():
    @hybrid
    def blur_then_overwrite(img):
        out = np.zeros_like(img)
        for i in range(1, img.shape[0] - 1):
            for j in range(1, img.shape[1] - 1):
                out[i, j] = img[i - 1, j] + img[i + 1, j] + img[i, j]
        img[:] = out  # the stencil read img before this write
        return img * 2
    check(blur_then_overwrite, _f32(17, 21))
