"""conv2d with a fused epilogue on the im2col-in-L1 route: one conv MIX kernel
(``conv_mix``, ``emit_conv_mix``): the conv kernel on the cube core hands each tile to
its two vector cores through a GM workspace, which run the epilogue and write NCHW (no
transpose kernel for the result).  ascend-sim against interpret; the sim's counters
equal ``conv_mix_counts``; breaking the hand-off is a sim violation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.conv_mix import ConvMixKernel, conv_mix_counts
from pyasc.ops import conv2d, gelu, silu

TOL = {np.float16: 2e-3, np.float32: 1e-5}


def _bias_relu(x, w, b, r):
    return np.maximum(conv2d(x, w, b, padding=1), 0)


def _scale_residual(x, w, b, r):
    return conv2d(x, w, stride=2, padding=1) * 0.5 + r


def _bias_gelu(x, w, b, r):
    return gelu(conv2d(x, w, b, padding=(2, 1), dilation=2), approximate="tanh")


def _silu_residual(x, w, b, r):
    return silu(conv2d(x, w, b, stride=(1, 2))) + r


def _bias_cast(x, w, b, r):
    return (conv2d(x, w, b, padding=1) + r).astype(np.float16)


def _pixel_row(x, w, b, r):
    # an (OH, OW) factor: a per-pixel row of the (N * O) x (OH * OW) epilogue space
    return conv2d(x, w, b, padding=1) * r[0, 0]


FORMS = {f.__name__: f for f in (_bias_relu, _scale_residual, _bias_gelu, _silu_residual,
                                 _bias_cast, _pixel_row)}
SIM = {name: hybrid(fn, target="ascend-sim") for name, fn in FORMS.items()}
REF = {name: hybrid(fn, target="interpret") for name, fn in FORMS.items()}


# (stride, padding, dilation) of each form's conv2d: the residual's shape
GEO = {"_bias_relu": (1, 1, 1), "_scale_residual": (2, 1, 1), "_bias_gelu": (1, (2, 1), 2),
       "_silu_residual": ((1, 2), 0, 1), "_bias_cast": (1, 1, 1), "_pixel_row": (1, 1, 1)}


def _out_shape(form, xs, ws):
    n, _, h, w = xs
    o, _, kh, kw = ws
    (sh, sw), (ph, pw), (dh, dw) = (np.broadcast_to(v, 2) for v in GEO[form])
    return (n, o, (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1,
            (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1)


def _inputs(form, xs, ws, dtype):
    rng = np.random.default_rng(sum(xs) * 131 + sum(ws))
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    r = rng.standard_normal(_out_shape(form, xs, ws)).astype(dtype)
    return x, w, b, r


CASES = [((2, 3, 11, 13), (6, 3, 3, 3)),       # C = 3, odd H and W
         ((1, 17, 9, 10), (20, 17, 3, 2)),     # C = 17, a non-square filter
         ((2, 40, 9, 7), (96, 40, 3, 3))]      # weights larger than L0B: N and K blocks


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize(("xs", "ws"), CASES)
def test_conv_epilogue_is_one_conv_mix_kernel(form, xs, ws, dtype):
    """The epilogue runs on the vector cores of the conv kernel's MIX launch: results as
    interpret's, the two operand transposes the only other kernels, the sim's counters
    the plan's (C crosses GM once each way, through the workspace)."""
    args = _inputs(form, xs, ws, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        got = SIM[form](*args)
    want = REF[form](*args)
    scale = REF[form](*(np.abs(a).astype(np.float32) for a in args))
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = TOL[np.float16 if np.float16 in (dtype, got.dtype.type) else dtype]
    assert np.all(np.abs(got.astype(np.float64) - want) <= tol * (np.abs(scale) + 1))
    kernel = SIM[form].kernel(*args)
    ks = kernel.ascend.kernels
    assert [type(k).__name__ for k in ks] == ["ConvMixKernel", "TransposeKernel",
                                              "TransposeKernel"]
    k = ks[0]
    assert isinstance(k, ConvMixKernel)
    counts, c = conv_mix_counts(k), kernel.last_counters
    g = k.plan.geo
    moved = (g.n * g.c * g.h * g.w + g.o * g.c * g.fh * g.fw) * args[0].itemsize  # x, w
    assert (c["gm_to_l1_bytes"], c["l0c_to_gm_bytes"]) == (counts.gm_to_l1, counts.l0c_to_gm)
    assert (c["gm_to_ub_bytes"], c["ub_to_gm_bytes"]) == \
        (moved + counts.gm_to_ub, moved + counts.ub_to_gm)
    # C crosses GM once each way: the workspace hand-off, nothing more
    assert counts.l0c_to_gm == g.n * g.o * g.oh * g.ow * k.vec.inputs[k.c_arg].arg.type.element.itemsize


def test_bfloat16_conv_with_bias():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 5, 10, 9)).astype(bf16)
    w = rng.standard_normal((7, 5, 3, 3)).astype(bf16)
    b = rng.standard_normal(7).astype(bf16)
    r = np.zeros((1,), bf16)

    def fn(x, w, b, r):
        return np.maximum(conv2d(x, w, b, padding=1), 0) * 2.0

    sim = hybrid(fn, target="ascend-sim")
    got = sim(x, w, b, r)
    want = hybrid(fn, target="interpret")(x, w, b, r)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert type(sim.kernel(x, w, b, r).ascend.kernels[0]).__name__ == "ConvMixKernel"


# the hand-off lines of the generated source (emit_conv_mix)
AIV_WAIT = "CrossCoreWaitFlag<2, PIPE_MTE2>(0 + slot);"
AIC_WAIT = "if (tile >= 2) CrossCoreWaitFlag<2, PIPE_FIX>(2 + t);"
AIV_SET = "CrossCoreSetFlag<2, PIPE_MTE2>(2 + slot);"
BROKEN = [
    # a vector core reads the workspace before the cube core's flag
    (AIV_WAIT, "", "DataCopyPad", "reads GM that the cube core wrote"),
    # the cube core overwrites a slot the vector cores have not released
    (AIC_WAIT, "", "Fixpipe", "overwrites GM bytes"),
    # the vector cores never release a slot: the cube core's wait can never pass
    (AIV_SET, "", "CrossCoreWaitFlag", "deadlock"),
]


def _direct(source, ap, k, args):
    """Launch conv MIX kernel ``k`` of ``source`` alone on ``_bias_relu``'s float32
    ``args`` (x and w transposed, the bias as the host broadcasts it)."""
    from pyasc.backend.ascendc.emit_conv import param_values
    from pyasc.backend.ascendc.sim import compile_kernels
    from pyasc.backend.ascendc.sim_backend import sim_config

    lib = compile_kernels(source, [k.name], filename=ap.filename, config=sim_config(ap.soc),
                          cores={k.name: "mix"})
    x, w, b, _ = args
    g = k.plan.geo
    out = np.zeros((g.n, 1, g.o, g.oh * g.ow), np.float32)
    ws = np.zeros(k.workspace_elems, np.float32)
    lib.launch(k.name, k.block_dim, np.ascontiguousarray(x.transpose(0, 2, 3, 1)),
               np.ascontiguousarray(w.transpose(0, 2, 3, 1)), np.tile(b, g.n), out, ws,
               *param_values(k.conv))
    return out.reshape(g.n, g.o, g.oh, g.ow)


def _mix_kernel():
    args = _inputs("_bias_relu", (72, 3, 6, 5), (8, 3, 3, 3), np.float32)  # 3 items a core
    ap = SIM["_bias_relu"].kernel(*args).ascend
    k = ap.kernels[0]
    assert isinstance(k, ConvMixKernel)
    p = k.plan
    tiles = -(-p.band_rows * p.geo.ow // p.base_m) * p.n_blocks * -(-p.geo.n * p.bands // p.blocks)
    assert tiles > 2  # the workspace slots are reused
    return ap, k, args


def test_the_conv_mix_kernel_runs_clean_when_launched_directly():
    ap, k, args = _mix_kernel()
    got = _direct(ap.source, ap, k, args)
    np.testing.assert_allclose(got, REF["_bias_relu"](*args), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(("line", "new", "api", "words"), BROKEN)
def test_broken_conv_hand_off_is_a_violation(line, new, api, words):
    from pyasc.backend.ascendc.sim import SimViolationError

    ap, k, args = _mix_kernel()
    assert line in ap.source
    with pytest.raises(SimViolationError) as err:
        _direct(ap.source.replace(line, new), ap, k, args)
    assert err.value.api == api, str(err.value)
    assert words in err.value.detail, str(err.value)


def test_streamed_weights_with_an_epilogue():
    """256x256x3x3 float32 weights (larger than L1, streamed in panels per channel
    group) with a bias and ReLU: the vector cores walk the cube's tiles in its order
    (channel groups, panels outside the M tiles)."""
    args = _inputs("_bias_relu", (1, 256, 12, 12), (256, 256, 3, 3), np.float32)
    got = SIM["_bias_relu"](*args)
    want = REF["_bias_relu"](*args)
    scale = REF["_bias_relu"](*(np.abs(a).astype(np.float32) for a in args))
    assert np.all(np.abs(got.astype(np.float64) - want) <= TOL[np.float32] * (scale + 1))
    kernel = SIM["_bias_relu"].kernel(*args)
    k = kernel.ascend.kernels[0]
    assert isinstance(k, ConvMixKernel) and k.plan.stream and k.plan.groups > 1
    counts, c = conv_mix_counts(k), kernel.last_counters
    assert (c["gm_to_l1_bytes"], c["l0c_to_gm_bytes"]) == (counts.gm_to_l1, counts.l0c_to_gm)


def _pad1(x, w):
    return conv2d(x, w, padding=1)


@pytest.mark.parametrize(("xs", "ws", "route"), [
    ((1, 256, 14, 14), (256, 256, 3, 3), "ConvKernel"),
    # 4.5 MiB of weights transposed per call for 49 pixels: the column matrix is cheaper
    ((1, 512, 7, 7), (512, 512, 3, 3), "CopyKernel"),
])
def test_streamed_weights_take_the_cheaper_route(xs, ws, route):
    """With weights larger than L1 the L1 route is taken only when its estimate (conv
    kernel and transposes) beats the GM route's (copy kernel and cube kernel)."""
    x, w = np.zeros(xs, np.float16), np.zeros(ws, np.float16)
    kernels = hybrid(_pad1, target="ascend-sim").kernel(x, w).ascend.kernels
    assert type(kernels[0]).__name__ == route
