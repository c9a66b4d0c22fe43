"""conv2d on the cube: ``pyasc.ops.conv2d``'s im2col loop and its matrix product are one
conv kernel building the im2col in L1 (``conv_match``, ``emit_conv``; with a MIX
epilogue a conv MIX kernel), or one DMA copy kernel (``copy_loops``) and one cube kernel; ascend-sim against
interpret, with the kernels and counters showing what ran where."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.conv_plan import conv_l1_counts
from pyasc.backend.ascendc.copy_loops import CopyKernel
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.emit_conv import ConvKernel
from pyasc.ops import conv2d

TOL = {np.float16: 2e-3, np.float32: 1e-5}


def _plain(x, w):
    return conv2d(x, w)


def _strided(x, w):
    return conv2d(x, w, stride=2, padding=1)


def _dilated(x, w):
    return conv2d(x, w, stride=(1, 2), padding=(2, 1), dilation=2)


def _biased_relu(x, w, b):
    return np.maximum(conv2d(x, w, b, padding=1), 0)


FORMS = {f.__name__: f for f in (_plain, _strided, _dilated, _biased_relu)}
SIM = {name: hybrid(fn, target="ascend-sim") for name, fn in FORMS.items()}
REF = {name: hybrid(fn, target="interpret") for name, fn in FORMS.items()}


def _inputs(xs, ws, dtype, bias=False):
    rng = np.random.default_rng(sum(xs) * 131 + sum(ws))
    args = [rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)]
    if bias:
        args.append(rng.standard_normal(ws[0]).astype(dtype))
    return args


def _run(form, args, scalar_ok=False):
    with warnings.catch_warnings():
        # no scalar kernel unless the caller expects one
        warnings.simplefilter("ignore" if scalar_ok else "error", PyascPerformanceWarning)
        got = SIM[form](*args)
    want = REF[form](*args)
    # float32 accumulation in another order than numpy's: relative to the sum of |terms|
    scale = REF[form](*(np.abs(a).astype(np.float32) for a in args))
    assert got.shape == want.shape and got.dtype == want.dtype
    dtype = args[0].dtype.type
    assert np.all(np.abs(got.astype(np.float64) - want) <= TOL[dtype] * (scale + 1))
    return SIM[form].kernel(*args)


# odd C, H, W (not multiples of 16), 1x1 kernels, non-square kernels, the examples'
# CustomConv shapes (examples/custom_conv.py: SHAPES and the small demo input)
SHAPES = [((2, 5, 17, 19), (7, 5, 3, 3)), ((1, 3, 9, 33), (20, 3, 1, 1)),
          ((2, 3, 12, 10), (8, 3, 3, 3)), ((1, 4, 9, 9), (5, 4, 2, 4)),
          ((2, 8, 32, 32), (16, 8, 3, 3)), ((1, 17, 5, 6), (3, 17, 2, 1))]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("form", ["_plain", "_strided", "_dilated"])
@pytest.mark.parametrize(("xs", "ws"), SHAPES)
def test_conv2d_is_a_conv_kernel_or_a_cube_kernel(form, xs, ws, dtype):
    args = _inputs(xs, ws, dtype)
    if form == "_dilated" and min(xs[2] + 4 - 2 * ws[2] + 1, xs[3] + 2 - 2 * ws[3] + 1) < 1:
        pytest.skip("the dilated window is larger than the padded input")
    kernel = _run(form, args)
    kinds = [type(k).__name__ for k in kernel.ascend.kernels]
    taps = ws[2] * ws[3]
    y = SIM[form](*args)
    n, o, oh, ow = y.shape
    counters = kernel.last_counters
    assert "GetValue" not in kernel.ascend.source and "SetValue" not in kernel.ascend.source
    if taps > 1:
        # the loop of window copies is an im2col: built in L1 by the conv kernel
        # (conv_match, emit_conv), no column matrix in GM; x to NHWC, w to OHWC and the
        # result back to NCHW are transpose kernels on the vector cores (xpose_kernel)
        assert kinds == ["ConvKernel"] + ["TransposeKernel"] * 3
        conv = kernel.ascend.kernels[0]
        g = conv.plan.geo
        counts = conv_l1_counts(conv.plan, args[0].itemsize)
        assert g.dtype == ("f16" if dtype == np.float16 else "f32")
        assert (counters["gm_to_l1_bytes"], counters["l0c_to_gm_bytes"]) == \
            (counts.gm_read, counts.gm_written)
        assert counters["cube_macs"] == counts.macs
        # each transposed array (the padded x, w, y) read once and written once
        moved = (g.n * g.c * g.h * g.w + g.o * g.c * g.fh * g.fw + y.size) * y.itemsize
        assert counters["gm_to_ub_bytes"] == counters["ub_to_gm_bytes"] == moved
        return
    # a 1 x 1 kernel needs no loop of window copies: x itself (stride 1, no padding) or
    # one strided view the host copies; the cast back to float16 of the reshaped result
    # is Fixpipe's (cube_reshape: done in the cube's shape), not a vector kernel.  A
    # float32 B (K x N: x) needs B^T, which LoadData cannot make for b32: a transpose
    # kernel on the vector cores makes it, reading and writing x once
    b32 = dtype == np.float32
    assert kinds == ["CubeKernel"] + ["TransposeKernel"] * b32
    k_n = ws[1] * oh * ow * n * args[0].itemsize
    assert counters["gm_to_ub_bytes"] == counters["ub_to_gm_bytes"] == k_n * b32
    cube = kernel.ascend.kernels[0]
    assert isinstance(cube, CubeKernel)
    # float16 stays float16 on the cube (fp32 accumulation)
    assert cube.dtype.name == ("f16" if dtype == np.float16 else "f32")
    assert cube.out.name == cube.dtype.name
    assert counters["cube_macs"] == n * o * oh * ow * ws[1]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_conv2d_with_bias_and_relu(dtype):
    # the (o, 1, 1) bias and the relu are the epilogue of one conv MIX kernel (im2col
    # in L1, the epilogue on its vector cores writing NCHW; more forms in
    # test_conv_mix.py), no scalar kernel, no column matrix; x and w transposed
    kernel = _run("_biased_relu", _inputs((2, 3, 11, 13), (6, 3, 3, 3), dtype, bias=True))
    kinds = [type(k).__name__ for k in kernel.ascend.kernels]
    assert kinds == ["ConvMixKernel", "TransposeKernel", "TransposeKernel"]


def _patches(x):
    # non-overlapping 4 x 4 patches of a (C, 16, 12) image, as (C, 4, 3, 4, 4)
    out = np.empty((x.shape[0], 4, 3, 4, 4), dtype=x.dtype)
    for i in range(4):
        for j in range(3):
            out[:, i, j] = x[:, 4 * i:4 * i + 4, 4 * j:4 * j + 4]
    return out


def _overlapping(x):
    # iteration i rewrites what iteration i - 1 wrote: order matters, not a copy kernel
    out = np.zeros((x.shape[0], 8), dtype=x.dtype)
    for i in range(4):
        out[:, i:i + 4] = x[:, 4 * i:4 * i + 4]
    return out


def _in_place(x):
    # source and destination are one buffer
    for i in range(3):
        x[:, i] = x[:, i + 1]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int64])
def test_a_loop_of_window_copies_is_one_copy_kernel(dtype):
    x = (np.arange(3 * 16 * 12) % 100).astype(dtype).reshape(3, 16, 12)
    sim = hybrid(_patches, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        got = sim(x)
    assert np.array_equal(got, hybrid(_patches, target="interpret")(x))
    kernel = sim.kernel(x)
    (copy,) = kernel.ascend.kernels
    assert isinstance(copy, CopyKernel) and len(copy.src_offsets) == 12
    # each patch row is a run of 4 elements, 4 rows per call, 3 channels per iteration
    assert (copy.run, copy.rows, copy.items) == (4, 4, 36)
    counters = kernel.last_counters
    assert counters["gm_to_ub_bytes"] == counters["ub_to_gm_bytes"] == x.nbytes
    assert counters["blocks"] == copy.block_dim == 36


def _scattered(x):
    # windows into every other row and column of a zeroed array: strided destinations,
    # and the elements no window writes keep their zeros
    out = np.zeros((3, 8, 12), dtype=x.dtype)
    for i in range(4):
        out[:, 2 * i, ::2] = x[:, i, :6]
    return out


def test_strided_destinations_and_unwritten_elements():
    x = np.arange(3 * 4 * 7, dtype=np.float32).reshape(3, 4, 7)
    sim = hybrid(_scattered, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        got = sim(x)
    assert np.array_equal(got, hybrid(_scattered, target="interpret")(x))
    (copy,) = sim.kernel(x).ascend.kernels
    assert isinstance(copy, CopyKernel) and (copy.run, copy.rows, copy.dst_row) == (1, 6, 2)


@pytest.mark.parametrize("form", [_overlapping, _in_place])
def test_copies_whose_order_matters_stay_scalar(form):
    x = np.arange(2 * 16, dtype=np.float32).reshape(2, 16)
    sim = hybrid(form, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        got = sim(x.copy())
        kernel = sim.kernel(x)
    assert np.array_equal(got, hybrid(form, target="interpret")(x.copy()))
    assert not any(isinstance(k, CopyKernel) for k in kernel.ascend.kernels)


def test_planning_a_large_im2col_touches_no_elements():
    # a ResNet-sized layer: the im2col matrix has 58 M elements; the copy loop is planned
    # on window boxes and checked as an im2col in chunks, so lowering allocates no index
    # array of that size (the layer is then one conv kernel, its padding in padList)
    import tracemalloc

    from pyasc.backend.ascendc import lower_program

    x = np.zeros((32, 64, 56, 56), np.float16)
    w = np.zeros((64, 64, 3, 3), np.float16)
    spec = hybrid(_strided).specialize(x, w)
    tracemalloc.start()
    try:
        ap = lower_program(spec)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the conv kernel and the three transpose kernels around it (x, w, the result)
    (conv,) = [k for k in ap.kernels if isinstance(k, ConvKernel)]
    assert [type(k).__name__ for k in ap.kernels].count("TransposeKernel") == 3
    assert len(ap.kernels) == 4
    assert (conv.plan.geo.h, conv.plan.geo.pads, conv.plan.geo.oh) == (56, (1, 1, 1, 1), 28)
    assert peak < 32 * 2**20


def _brief_case(x, w):
    return conv2d(x, w, stride=2, padding=1, dilation=2)


def _padded(x, w):
    return conv2d(x, w, padding=1)


def _relu_only(x, w):
    return np.maximum(conv2d(x, w), 0)


def _own_im2col(x, w):
    # an im2col written by hand (no padding, K ordered (c, kh, kw)): the same copies
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = h - kh + 1, wd - kw + 1
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = x[:, :, i:i + oh, j:j + ow]
    return np.matmul(w.reshape(o, c * kh * kw), cols.reshape(n, c * kh * kw, oh * ow))


def _taps_outer(x, w):
    # K ordered (kh, kw, c) with weights to match: a valid convolution whose column
    # matrix is not the layout LoadData 3D builds; it keeps the GM route
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = h - kh + 1, wd - kw + 1
    cols = np.empty((n, kh, kw, c, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, i, j] = x[:, :, i:i + oh, j:j + ow]
    wm = np.ascontiguousarray(w.transpose(0, 2, 3, 1)).reshape(o, kh * kw * c)
    return np.matmul(wm, cols.reshape(n, kh * kw * c, oh * ow))


def test_column_matrix_read_elsewhere_keeps_the_gm_route():
    """A column matrix that something else reads too must exist: no im2col in L1."""
    args = _inputs((2, 3, 8, 9), (4, 3, 3, 3), np.float32)
    sim = hybrid(_cols_twice, target="ascend-sim")
    got, want = sim(*args), hybrid(_cols_twice, target="interpret")(*args)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
    kinds = [type(k).__name__ for k in sim.kernel(*args).ascend.kernels]
    assert "ConvKernel" not in kinds and "CopyKernel" in kinds


def _cols_twice(x, w):
    # the column matrix is also summed: it must be filled
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = h - kh + 1, wd - kw + 1
    cols = np.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = x[:, :, i:i + oh, j:j + ow]
    y = np.matmul(w.reshape(o, c * kh * kw), cols.reshape(n, c * kh * kw, oh * ow))
    return y, cols.sum()


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize(("fn", "xs", "ws", "kinds"), [
    (_plain, (8, 8, 128, 128), (16, 8, 3, 3), ["ConvKernel"]),     # the seed's CustomConv
    (_brief_case, (1, 3, 17, 19), (5, 3, 3, 3), ["ConvKernel"]),
    (_relu_only, (2, 17, 9, 11), (20, 17, 3, 2), ["ConvKernel"]),  # ReLU in Fixpipe
    # weights larger than L0B (K and N blocks): ResNet's 64x64x3x3, a ragged 40 -> 96
    (_padded, (1, 64, 56, 56), (64, 64, 3, 3), ["ConvKernel"]),
    (_relu_only, (2, 40, 9, 7), (96, 40, 3, 3), ["ConvKernel"]),
    (_own_im2col, (2, 5, 10, 12), (7, 5, 3, 2), ["ConvKernel"]),
    # (its np.ascontiguousarray(w.transpose(0, 2, 3, 1)) is a transpose kernel)
    (_taps_outer, (2, 5, 10, 12), (7, 5, 3, 2), ["CopyKernel", "TransposeKernel",
                                                 "CubeKernel"]),
], ids=lambda v: getattr(v, "__name__", None))
def test_conv_im2col_in_l1_equals_interpret(fn, xs, ws, kinds, dtype):
    """The L1 route end to end: results as interpret's, the sim's GM and cube counters
    equal to the plan's (nothing else moves), one kernel even with Fixpipe's ReLU, and
    the NCHW <-> NHWC transposes around it three transpose kernels, each moving its
    array once each way (a float32 GM route's B^T: one transpose kernel)."""
    args = _inputs(xs, ws, dtype)
    sim = hybrid(fn, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        got = sim(*args)
    want = hybrid(fn, target="interpret")(*args)
    scale = hybrid(fn, target="interpret")(*(np.abs(a) for a in args))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.all(np.abs(got.astype(np.float64) - want) <= TOL[dtype] * (scale + 1))
    kernel = sim.kernel(*args)
    conv_route = kinds == ["ConvKernel"]
    kinds = kinds + ["TransposeKernel"] * (3 if conv_route else dtype == np.float32)
    assert [type(k).__name__ for k in kernel.ascend.kernels] == kinds
    if conv_route:
        conv = kernel.ascend.kernels[0]
        counts = conv_l1_counts(conv.plan, got.itemsize)
        c = kernel.last_counters
        assert (c["gm_to_l1_bytes"], c["l0c_to_gm_bytes"], c["cube_macs"]) == \
            (counts.gm_read, counts.gm_written, counts.macs)
        g = conv.plan.geo
        moved = (g.n * g.c * g.h * g.w + g.o * g.c * g.fh * g.fw + got.size) * got.itemsize
        assert c["gm_to_ub_bytes"] == c["ub_to_gm_bytes"] == moved
        assert conv.relu == (fn is _relu_only)
