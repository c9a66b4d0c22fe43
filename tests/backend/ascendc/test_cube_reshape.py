"""Epilogues of a reshaped cube result (``cube_reshape``): conv2d's ``(O, 1, 1)`` bias
and the activation after it are one MIX kernel with the batched im2col matmul (a column
of each image's ``O x (OH*OW)`` product; conv2d's is the conv MIX kernel, ``conv_mix``),
and a vector kernel when not fused; the same
for any matmul whose result is reshaped before its epilogue.  ascend-sim against
interpret, odd sizes, float16 and float32."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.conv_mix import ConvMixKernel, conv_mix_counts
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.cube_reshape import NoImage, axis_groups, image_shape
from pyasc.backend.ascendc.mix_plan import MixKernel
from pyasc.ops import conv2d, gelu

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
TOL = {np.float16: 4e-3, np.float32: 2e-5}


def _bias_relu(x, w, b):
    return np.maximum(conv2d(x, w, b, padding=1), 0)


def _bias_gelu_strided(x, w, b):
    return gelu(conv2d(x, w, b, stride=2), approximate="tanh")


def _bias_residual(x, w, b):
    # a residual of another shape, (N, 1, H, W), broadcast over the channels
    return conv2d(x, w, b, padding=(1, 0)) + x[:, :1, :, 1:-1] * 0.5


FORMS = {f.__name__: f for f in (_bias_relu, _bias_gelu_strided, _bias_residual)}
# odd channels and sizes, the examples' CustomConv shapes, one image, a 2 x 1 kernel
SHAPES = [((2, 3, 12, 10), (8, 3, 3, 3)), ((1, 5, 17, 19), (7, 5, 3, 3)),
          ((3, 4, 9, 9), (5, 4, 3, 3)), ((2, 17, 6, 7), (3, 17, 3, 3)),
          ((2, 8, 32, 32), (16, 8, 3, 3))]


def _args(xs, ws, dtype):
    rng = np.random.default_rng(sum(xs) * 7 + sum(ws))
    return [rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype),
            rng.standard_normal(ws[0]).astype(dtype)]


def _check(fn, args, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)  # no scalar kernel
        got = hybrid(fn, target="ascend-sim")(*args)
    want = hybrid(fn, target="interpret")(*args)
    scale = hybrid(fn, target="interpret")(*(np.abs(a) for a in args))
    assert got.shape == want.shape and got.dtype == want.dtype
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert np.all(err <= TOL[dtype] * (np.abs(scale).astype(np.float64) + 1)), float(err.max())


CASES = [(form, shape, (np.float16, np.float32)[(i + j) % 2])
         for i, form in enumerate(FORMS) for j, shape in enumerate(SHAPES)]


@pytest.mark.parametrize(("form", "shape", "dtype"), CASES)
def test_conv2d_bias_and_activation_are_one_mix_kernel(form, shape, dtype):
    args = _args(*shape, dtype)
    _check(FORMS[form], args, dtype)
    sim = hybrid(FORMS[form], target="ascend-sim")
    kernel = sim.kernel(*args)
    # the conv MIX kernel (im2col in L1, the epilogue on its vector cores writing
    # NCHW), x and w transposed to NHWC / OHWC
    mix, *xposes = kernel.ascend.kernels
    assert isinstance(mix, ConvMixKernel)
    assert [type(k).__name__ for k in xposes] == ["TransposeKernel"] * 2
    # the bias is a column of each image's O x (OH*OW) product: rows = images * O
    n, o = shape[0][0], shape[1][0]
    assert mix.rows == n * o
    # no GM traffic beyond the transposes and the MIX kernel's own (the workspace
    # hand-off): the model of the MIX kernel and the transposes are all the sim counts
    y = sim(*args)
    counters = kernel.last_counters
    counts = conv_mix_counts(mix)
    moved = (args[0].size + args[1].size) * args[0].itemsize
    assert counters["gm_to_l1_bytes"] == counts.gm_to_l1
    assert counters["l0c_to_gm_bytes"] == counts.l0c_to_gm == n * o * mix.cols * 4
    assert counters["gm_to_ub_bytes"] == moved + counts.gm_to_ub
    assert counters["ub_to_gm_bytes"] == moved + counts.ub_to_gm == moved + y.nbytes


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("form", list(FORMS))
def test_unfused_conv2d_epilogue_is_a_vector_kernel(form, dtype, monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "fusion")
    args = _args((2, 5, 11, 13), (6, 5, 3, 3), dtype)
    _check(FORMS[form], args, dtype)
    kinds = [type(k).__name__ for k in
             hybrid(FORMS[form], target="ascend-sim").kernel(*args).ascend.kernels]
    # unfused, the conv kernel (im2col in L1) with its three transpose kernels (NCHW <->
    # NHWC) and the epilogue's vector kernel
    assert kinds == ["ConvKernel"] + ["TransposeKernel"] * 3 + ["VectorKernel"]


def _heads(a, b, bias):
    # a batched matmul whose (2, 3) batch axes are merged by a reshape, then a per-row
    # bias of each (M, N) product: a column repeated over the six batches
    return np.maximum(np.matmul(a, b).reshape(6, a.shape[2], b.shape[3]) + bias, 0)


def _relu_view(a, b):
    # max(C, 0) on a reshape of C: Fixpipe's ReLU
    return np.maximum((a @ b).reshape(-1), 0)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize(("m", "n", "k"), [(17, 19, 5), (1, 33, 16), (40, 3, 1)])
def test_any_reshaped_matmul_epilogue(m, n, k, dtype):
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((2, 3, m, k)).astype(dtype)
    b = rng.standard_normal((2, 3, k, n)).astype(dtype)
    bias = rng.standard_normal((m, 1)).astype(dtype)
    _check(_heads, [a, b, bias], dtype)
    # a float32 B (K x N) comes with its transpose kernel (B^T for the cube)
    mix, *xposes = hybrid(_heads, target="ascend-sim").kernel(a, b, bias).ascend.kernels
    assert len(xposes) == (a.dtype == np.float32)
    assert isinstance(mix, MixKernel)
    a2, b2 = a[0, 0], b[0, 0]
    _check(_relu_view, [a2, b2], dtype)
    cube, *xposes = hybrid(_relu_view, target="ascend-sim").kernel(a2, b2).ascend.kernels
    assert len(xposes) == (a2.dtype == np.float32)
    assert isinstance(cube, CubeKernel) and cube.relu


def _row_along_w(x, w, r):
    # a bias along OW: a broadcast that splits C's OH*OW axis has no image in C's shape
    return conv2d(x, w) + r


def test_an_operand_without_image_is_left_alone():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 7, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    r = rng.standard_normal(7).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        got = hybrid(_row_along_w, target="ascend-sim")(x, w, r)
        kinds = [type(k).__name__ for k in
                 hybrid(_row_along_w, target="ascend-sim").kernel(x, w, r).ascend.kernels]
    want = hybrid(_row_along_w, target="interpret")(x, w, r)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert "MixKernel" not in kinds


def test_axis_groups_and_images():
    out, c = (2, 6, 11, 13), (2, 1, 6, 143)
    groups = axis_groups(out, c)
    assert groups == [(range(0, 1), range(0, 1)), (range(1, 2), range(1, 3)),
                      (range(2, 4), range(3, 4))]
    assert image_shape((1, 6, 1, 1), out, c, groups) == (1, 1, 6, 1)
    assert image_shape((2, 1, 11, 13), out, c, groups) == (2, 1, 1, 143)
    assert image_shape(out, out, c, groups) == c
    with pytest.raises(NoImage):  # (13,) only partly fills the 11 x 13 group
        image_shape((1, 1, 1, 13), out, c, groups)
    assert axis_groups((6, 1), (6,)) == [(range(0, 2), range(0, 1))]
    assert axis_groups((4, 6), (6, 4)) == [(range(0, 2), range(0, 2))]
    assert axis_groups((0, 3), (3, 0)) is None


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_the_rewrite_can_be_disabled_by_name(dtype, monkeypatch):
    # PYASC_DISABLE_PASSES=cube-reshapes (the name the docs give) is a valid name, not
    # "not a pass; ignored", and it does leave the reshape before the epilogue: the
    # epilogue is then not the matmul's (no MIX kernel), results unchanged
    from pyasc.errors import InvalidEnvironmentWarning
    from pyasc.ir.passes import parse_disabled
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 3, 17, 5)).astype(dtype)
    b = rng.standard_normal((2, 3, 5, 19)).astype(dtype)
    bias = rng.standard_normal((17, 1)).astype(dtype)
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "cube-reshapes")
    parse_disabled.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", InvalidEnvironmentWarning)
        kernels = hybrid(_heads, target="ascend-sim").kernel(a, b, bias).ascend.kernels
        got = hybrid(_heads, target="ascend-sim")(a, b, bias)
    assert not any(isinstance(k, MixKernel) for k in kernels)
    want = hybrid(_heads, target="interpret")(a, b, bias)
    assert np.allclose(got.astype(np.float64), want, rtol=TOL[dtype], atol=TOL[dtype] * 8)
