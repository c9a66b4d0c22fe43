"""No ``double`` reaches an AscendC kernel (docs/ascendc-backend.md#float64).

No SoC documents float64 on the AI Core.  Python scalars the host can fold into the
kernel's type are folded (bit-exact with numpy); float64 data is E50041 at the user's
line unless ``device_float64="demote"`` computes it in float32 (W50070); the math
helpers of scalar code have float versions, correct to the bit where numpy's are.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from ascendc_kit import check, run_sim

from pyasc import hybrid, ops
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.fit import DeviceFloat64Error
from pyasc.errors import DeviceFloat64Warning, InvalidOptionError

ROOT = Path(__file__).resolve().parents[3]
RNG = np.random.default_rng(64)


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"f64_example_{name}",
                                                  ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _source(fn, *args) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        warnings.simplefilter("ignore", DeviceFloat64Warning)
        return fn.ascendc(*args)


@hybrid
def scaled_rows(x, s, n):
    out = np.zeros_like(x)
    for i in range(n):
        out[i] = x[i] / (2 * s ** 2) + 1e-5   # Python floats: numpy computes in float64
    return out


@hybrid
def doubled(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0
    return out


@hybrid(device_float64="demote")
def doubled_in_place(out, x):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0 + out[i]
    return out


@hybrid(device_float64="demote")
def total(x):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i] * x[i]
    return acc


def test_python_scalars_fold_into_the_kernel_type_exactly():
    x = RNG.random((6, 33)).astype(np.float32)
    src = _source(scaled_rows, x, 0.3, 6)
    assert "double" not in src
    check(scaled_rows, x, 0.3, 6, rtol=0, atol=0)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_norm_eps_is_folded(op):
    x = RNG.random((8, 64)).astype(np.float32)
    fn = getattr(ops, op)
    assert "double" not in _source(fn, x, (64,))
    check(fn, x, (64,), rtol=2e-6, atol=1e-6)


def test_float64_data_is_refused_at_its_line():
    x = RNG.random((5, 7))
    with pytest.raises(DeviceFloat64Error) as err:
        _source(doubled, x)
    e = err.value
    assert e.code == "E50041" and "float64" in str(e)
    assert e.filename == __file__ and e.lineno == doubled.__wrapped__.__code__.co_firstlineno + 4
    assert "float32" in e.hint and "device_float64='demote'" in e.hint


def test_the_seed_bilateral_filter_is_refused_then_demoted():
    bf = _example("bilateral_filter").bilateral_filter
    img = RNG.random((20, 24)).astype(np.float32)
    with pytest.raises(DeviceFloat64Error) as err:
        _source(bf, img)
    assert err.value.lineno == 13  # np.exp(-(np.arange(-5,6)**2)/(2*sigma_space**2))
    demoted = hybrid(bf.__wrapped__, device_float64="demote")
    assert "double" not in _source(demoted, img)
    with pytest.warns(DeviceFloat64Warning, match="W50070"):
        got, _ = run_sim(demoted, img)
    np.testing.assert_allclose(got, bf.__wrapped__(img), rtol=2e-6, atol=1e-6)


def test_demoted_arrays_are_written_back_and_returned_as_themselves():
    out, x = RNG.random(37), RNG.random(37)
    want = doubled_in_place.__wrapped__(out.copy(), x)
    with pytest.warns(DeviceFloat64Warning):
        got, _ = run_sim(doubled_in_place, out, x)
    assert got is out and got.dtype == np.float64
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_a_demoted_scalar_result_is_float64_again():
    x = RNG.random(50)
    with pytest.warns(DeviceFloat64Warning):
        got, _ = run_sim(total, x)
    assert isinstance(got, float | np.float64)
    np.testing.assert_allclose(got, total.__wrapped__(x), rtol=1e-5)


def test_device_float64_option_is_validated():
    with pytest.raises(InvalidOptionError, match="device_float64"):
        hybrid(device_float64="single")(lambda x: x)


# ------------------------------------------------------ the float helpers of scalar code


@hybrid
def rounded(x):
    out = np.zeros((6, x.shape[0]), x.dtype)
    for i in range(x.shape[0]):  # a loop: scalar code (its helpers)
        out[0, i] = np.sqrt(x[i])
        out[1, i] = np.floor(x[i])
        out[2, i] = np.ceil(x[i])
        out[3, i] = np.round(x[i])
        out[4, i] = x[i] % 0.7
        out[5, i] = x[i] // -1.3
    return out


@hybrid
def transcendental(x, y):
    out = np.zeros((2, x.shape[0]), x.dtype)
    for i in range(x.shape[0]):
        out[0, i] = np.tan(x[i])
        out[1, i] = np.abs(x[i]) ** y[i]
    return out


def _spread(dtype: str) -> np.ndarray:
    info = np.finfo(dtype)
    special = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, info.tiny, info.tiny / 4, info.eps,
               info.max, np.inf, -np.inf, np.nan, 0.7, -0.7, 1.3]
    return np.concatenate([special, (RNG.standard_normal(300) * 50)]).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float_helpers_are_exact_where_numpy_is(dtype):
    x = np.abs(_spread(dtype))
    x = np.concatenate([x, -x])
    assert "double" not in _source(rounded, x)
    with np.errstate(all="ignore"):
        check(rounded, x, rtol=0, atol=0)


def test_float_transcendental_helpers():
    x = (RNG.random(200) * 3 - 1.5).astype(np.float32)
    y = (RNG.random(200) * 4 - 2).astype(np.float32)
    assert "double" not in _source(transcendental, x, y)
    check(transcendental, x, y, rtol=3e-6, atol=1e-6)


# ------------------------------------------------------ a representative set


def _demo_cases():
    for path in sorted((ROOT / "examples").glob("*.py")):
        for case in getattr(_example(path.stem), "DEMO_CASES", []):
            yield pytest.param(case, id=f"{path.stem}:{case['name']}")


@pytest.mark.parametrize("case", list(_demo_cases()))
def test_no_double_in_the_examples(case):
    fn = case["fn"]
    args = case["inputs"](np.random.default_rng(0), "small")
    try:
        src = _source(fn, *args)
    except DeviceFloat64Error:  # float64 data (the bilateral filter, gelu's erf): opt in
        if not hasattr(fn, "__wrapped__"):  # an AscendOperator: its float64 state
            pytest.skip("float64 operator state: E50041 is the policy")
        src = _source(hybrid(fn.__wrapped__, device_float64="demote"), *args)
    assert "double" not in src


OPS_CALLS = {
    "conv2d": lambda: (RNG.random((1, 3, 9, 9), np.float32), RNG.random((4, 3, 3, 3), np.float32)),
    "avg_pool2d": lambda: (RNG.random((1, 2, 8, 8), np.float32), 2),
    "max_pool2d": lambda: (RNG.random((1, 2, 8, 8), np.float32), 2),
    "adaptive_avg_pool2d": lambda: (RNG.random((1, 2, 9, 7), np.float32), (4, 3)),
    "gelu": lambda: (RNG.random((4, 40), np.float32), "tanh"),
    "silu": lambda: (RNG.random((4, 40), np.float32),),
    "softmax": lambda: (RNG.random((4, 40), np.float32), -1),
    "log_softmax": lambda: (RNG.random((4, 40), np.float32), -1),
    "layer_norm": lambda: (RNG.random((4, 40), np.float32), (40,)),
    "rms_norm": lambda: (RNG.random((4, 40)).astype(np.float16), (40,)),
}


@pytest.mark.parametrize("name", sorted(OPS_CALLS))
def test_no_double_in_the_ops(name):
    assert "double" not in _source(getattr(ops, name), *OPS_CALLS[name]())


def test_exact_gelu_computes_erf_in_float32():
    # gelu(approximate="none") was a float64 loop over math.erf (refused here); its erf
    # is pyasc.ops.erf now, a float32 vector op (tests/ops/test_erf.py)
    assert "double" not in _source(ops.gelu, RNG.random((4, 40), np.float32))


def test_a_bound_call_shows_the_demoted_kernel_on_request():
    @hybrid
    def twice(x):
        return x * 2.0

    call = twice.bind(np.ones(8, np.float64))
    with pytest.raises(InvalidOptionError):
        call.ascendc()                                  # float64 device code: E50041
    with pytest.warns(DeviceFloat64Warning):
        source = call.ascendc(device_float64="demote")
    assert "__global__ __aicore__" in source and "double" not in source
    with pytest.raises(InvalidOptionError):
        call.ascendc(device_float64="sometimes")
