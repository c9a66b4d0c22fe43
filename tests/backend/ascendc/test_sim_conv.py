"""The L1-im2col conv2d route on ascend-sim: the kernel ``emit_conv`` writes for a
``conv_plan`` tiling (Nd2Nz bands -> LoadData 3D -> Mmad -> Fixpipe), compiled alone and
run with the plan's parameters: results against a direct numpy convolution, and the
simulator's counters equal to the plan's counts."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

from pyasc.backend.ascendc.conv_plan import ConvGeometry, ConvL1Plan, conv_l1_counts, plan_conv_l1
from pyasc.backend.ascendc.emit_conv import ConvKernel, conv_source, param_values
from pyasc.backend.ascendc.sim import SimConfig, SimLibrary, compile_kernels
from pyasc.backend.ascendc.soc import get_soc

NP = {"f16": np.float16, "f32": np.float32}
try:
    import ml_dtypes

    NP["bf16"] = ml_dtypes.bfloat16
except ImportError:  # bfloat16 arrays need ml_dtypes (the "bfloat16" extra)
    pass
TOL = {"f16": 2e-3, "bf16": 8e-3, "f32": 1e-5}
CASES = [
    ConvGeometry(8, 8, 128, 128, 16, 3, 3),                                   # CustomConv
    ConvGeometry(1, 3, 17, 19, 5, 3, 3, (2, 2), (2, 2), (1, 1, 1, 1)),
    ConvGeometry(1, 3, 17, 19, 5, 3, 3, (2, 2), (2, 2), (1, 1, 1, 1), "f32"),
    ConvGeometry(2, 17, 9, 11, 20, 3, 2, (1, 2), (2, 1), (0, 1, 2, 0)),
    ConvGeometry(3, 12, 15, 13, 20, 5, 5, (1, 1), (1, 1), (2, 2, 2, 2), "f32"),
    # bfloat16: Mmad bf16 -> f32, Fixpipe F322BF16
    ConvGeometry(1, 3, 17, 19, 5, 3, 3, (2, 2), (2, 2), (1, 1, 1, 1), "bf16"),
    ConvGeometry(2, 17, 9, 11, 20, 3, 2, (1, 2), (2, 1), (0, 1, 2, 0), "bf16"),
]


def _direct(x: np.ndarray, w: np.ndarray, g: ConvGeometry) -> np.ndarray:
    """(N, O, OH, OW) by the definition, in float64."""
    (sh, sw), (dh, dw), (pl, pr, pt, pb) = g.stride, g.dilation, g.pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    out = np.zeros((g.n, g.o, g.oh, g.ow))
    for i in range(g.fh):
        for j in range(g.fw):
            win = xp[:, :, i * dh:i * dh + (g.oh - 1) * sh + 1:sh, j * dw:j * dw + (g.ow - 1) * sw + 1:sw]
            out += np.einsum("oc,ncyx->noyx", w[:, :, i, j].astype(np.float64), win)
    return out


@functools.cache
def _library(name: str, source: str) -> SimLibrary:
    return compile_kernels(source, [name], filename=f"{name}.cpp", config=SimConfig(opt_level="-O1"))


def _kernel(plan: ConvL1Plan, relu: bool) -> tuple[SimLibrary, ConvKernel]:
    """The emitted kernel of ``plan`` and its compiled library (the text depends on the
    dtype and ReLU only: the shape and tiling are parameters, so the builds are shared)."""
    k = ConvKernel(f"conv_{plan.geo.dtype}{'_relu' * relu}{'_stream' * plan.stream}", plan,
                   plan.geo.dtype, relu)
    return _library(k.name, conv_source(k)), k


def _run(g: ConvGeometry, cube, relu: bool = False) -> None:
    plan = plan_conv_l1(g, cube)
    assert not isinstance(plan, str), plan
    if g.dtype not in NP:
        pytest.skip("bfloat16 arrays need ml_dtypes")
    dtype = NP[g.dtype]
    rng = np.random.default_rng(g.c * 100 + g.h)
    x = rng.standard_normal((g.n, g.c, g.h, g.w)).astype(dtype)
    w = rng.standard_normal((g.o, g.c, g.fh, g.fw)).astype(dtype)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    ohwc = np.ascontiguousarray(w.transpose(0, 2, 3, 1))
    y = np.zeros((g.n, g.oh * g.ow, g.o), dtype)
    lib, k = _kernel(plan, relu)
    counters = lib.launch(k.name, plan.blocks, nhwc, ohwc, y, *param_values(k))
    want = _direct(x, w, g)
    if relu:
        want = np.maximum(want, 0)
    got = y.reshape(g.n, g.oh, g.ow, g.o).transpose(0, 3, 1, 2).astype(np.float64)
    tol = TOL[g.dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    counts = conv_l1_counts(plan, y.itemsize)
    assert counters["gm_to_l1_bytes"] == counts.gm_read
    assert counters["l0c_to_gm_bytes"] == counts.gm_written
    assert counters["l1_to_l0a_bytes"] == counts.l1_to_l0a
    assert counters["l1_to_l0b_bytes"] == counts.l1_to_l0b
    assert counters["cube_macs"] == counts.macs
    assert counters["l1_peak_bytes"] <= plan.l1_bytes


@pytest.mark.parametrize("g", CASES, ids=lambda g: f"{g.n}x{g.c}x{g.h}x{g.w}-{g.o}x{g.fh}x{g.fw}-{g.dtype}")
def test_conv_l1_route_equals_the_definition(g):
    _run(g, get_soc("Ascend910B1").cube)


def test_small_l1_forces_bands_with_halos_and_pads():
    """A 24 KB L1 cuts each image into bands; the first and last carry the padding."""
    cube = dataclasses.replace(get_soc("Ascend910B1").cube, l1_bytes=24 * 1024, cores=3)
    g = ConvGeometry(2, 5, 31, 23, 7, 3, 3, (2, 1), (1, 2), (1, 2, 1, 2))
    plan = plan_conv_l1(g, cube)
    assert plan.bands > 2
    _run(g, cube, relu=True)


# weights larger than L0B: K blocks accumulated in L0C, N blocks of output channels
# written as column blocks of y; a small L0B forces ragged last K and N blocks
BLOCKED = [
    (ConvGeometry(1, 64, 56, 56, 64, 3, 3, pads=(1, 1, 1, 1)), None),        # ResNet 64x64x3x3
    (ConvGeometry(2, 17, 13, 11, 40, 3, 3, (2, 2), (2, 1), (0, 1, 2, 0), "f32"), 8 * 1024),
    (ConvGeometry(1, 3, 17, 19, 37, 3, 3, (1, 2), (2, 2), (1, 2, 1, 1)), 4 * 1024),
    (ConvGeometry(2, 33, 9, 10, 70, 2, 3, (1, 1), (1, 1), (1, 0, 0, 1)), 16 * 1024),
    (ConvGeometry(1, 40, 9, 7, 96, 3, 3, pads=(1, 1, 1, 1), dtype="bf16"), None),
]


@pytest.mark.parametrize(("g", "l0b"), BLOCKED, ids=lambda v: f"{v.c}x{v.o}-{v.dtype}"
                         if isinstance(v, ConvGeometry) else str(v))
def test_weights_larger_than_l0b_run_in_k_and_n_blocks(g, l0b):
    cube = get_soc("Ascend910B1").cube
    if l0b is not None:
        cube = dataclasses.replace(cube, l0b_bytes=l0b)
    plan = plan_conv_l1(g, cube)
    assert not isinstance(plan, str), plan
    assert not plan.b_resident and plan.l0b_bytes <= cube.l0b_bytes
    assert plan.base_k < plan.ktot or plan.n_blocks > 1
    _run(g, cube, relu=l0b == 4 * 1024)


def test_block_choice_covers_ragged_k_and_n():
    """The small-L0B cases above do cut K and N into blocks whose last one is partial."""
    cube = get_soc("Ascend910B1").cube
    plans = [plan_conv_l1(g, dataclasses.replace(cube, l0b_bytes=l0b))
             for g, l0b in BLOCKED if l0b is not None]
    assert any(p.ktot % p.base_k for p in plans)
    assert any(p.n_blocks > 1 and p.geo.o % p.base_n for p in plans)


def test_plan_says_why_not():
    cube = get_soc("Ascend910B1").cube
    small = dataclasses.replace(cube, l1_bytes=12 * 1024)
    assert "L1" in plan_conv_l1(ConvGeometry(1, 3, 17, 19, 37, 3, 3, (1, 2), (2, 2)), small)
    assert "padding" in plan_conv_l1(ConvGeometry(1, 4, 8, 8, 4, 3, 3, pads=(3, 3, 3, 3)), cube)
    assert "operands" in plan_conv_l1(ConvGeometry(1, 4, 8, 8, 4, 3, 3, dtype="i8"), cube)


# weights larger than L1: panels of base_n output channels streamed from GM per work
# item (image, band, group of N blocks); 256x256x3x3 and 512x512x3x3 float16 on the real
# L1, and small L1s forcing it on odd shapes (stride 2, dilation 2, C = 3, 17, pads,
# float32, bfloat16, a ragged last panel and group)
STREAMED = [
    (ConvGeometry(1, 256, 14, 14, 256, 3, 3, pads=(1, 1, 1, 1)), None),
    (ConvGeometry(1, 512, 7, 7, 512, 3, 3, pads=(1, 1, 1, 1)), None),
    (ConvGeometry(2, 17, 13, 11, 40, 3, 3, (2, 2), (2, 1), (0, 1, 2, 0), "f32"), 40 * 1024),
    (ConvGeometry(1, 3, 17, 19, 37, 3, 3, (1, 2), (2, 2), (1, 2, 1, 1)), 16 * 1024),
    (ConvGeometry(2, 33, 9, 10, 70, 2, 3, (1, 1), (1, 1), (1, 0, 0, 1)), 32 * 1024),
    (ConvGeometry(1, 40, 9, 7, 96, 3, 3, pads=(1, 1, 1, 1), dtype="bf16"), 64 * 1024),
]


@pytest.mark.parametrize(("g", "l1"), STREAMED, ids=lambda v: f"{v.c}x{v.o}-{v.dtype}"
                         if isinstance(v, ConvGeometry) else str(v))
def test_weights_larger_than_l1_stream_in_panels(g, l1):
    cube = get_soc("Ascend910B1").cube
    if l1 is not None:
        cube = dataclasses.replace(cube, l1_bytes=l1, cores=3)
    plan = plan_conv_l1(g, cube)
    assert not isinstance(plan, str), plan
    size = 4 if g.dtype == "f32" else 2
    assert plan.stream and plan.o16 * plan.ktot * size > cube.l1_usable_bytes - plan.l1_bytes
    assert plan.l1_bytes <= cube.l1_usable_bytes
    _run(g, cube, relu=l1 == 16 * 1024)


def test_streamed_plans_split_channels_across_cores():
    """Large weights: work items are (image, band, channel group), every core busy; the
    512-channel layer reads its weights once (one band), the ragged cases have a partial
    last panel and group."""
    cube = get_soc("Ascend910B1").cube
    plans = [plan_conv_l1(g, cube if l1 is None else
                          dataclasses.replace(cube, l1_bytes=l1, cores=3)) for g, l1 in STREAMED]
    assert plans[0].groups > 1 and plans[0].blocks == cube.cores
    assert plans[1].bands == 1 and plans[1].blocks == cube.cores
    assert any(p.geo.o % p.group_n for p in plans)
    assert any(p.geo.o % p.base_n for p in plans)
