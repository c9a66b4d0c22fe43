"""``target="ascend"`` end to end against the stand-in library: the seed's examples give
``interpret``'s results, ``device_type`` picks the variant of the SoC the device
reports, ``target="auto"`` asks AscendCL."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.errors import DeviceError
from pyasc.jit import options
from pyasc.runtime import acl

ROOT = Path(__file__).resolve().parents[2]


def _example(name: str):
    path = ROOT / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"acl_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _on(fn, target: str, **options):
    return hybrid(target=target, **options)(fn.__wrapped__)


def _same(standin, fn, *args, rtol=0.0, **options):
    want = _on(fn, "interpret")(*args)
    launches = standin.stats().launches
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scalar-unit performance warnings
        got = _on(fn, "ascend", **options)(*args)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 1e-3)
    assert standin.stats().launches > launches  # the kernels ran through AscendCL
    return got


def test_seed_relu(ascend_standin):
    relu = _example("relu").relu
    rng = np.random.default_rng(0)
    for shape in [(257,), (13, 7), (64, 64)]:
        _same(ascend_standin, relu, rng.standard_normal(shape).astype(np.float32))
    _same(ascend_standin, relu, rng.standard_normal((33,)).astype(np.float16))


def test_softmax_and_layernorm(ascend_standin):
    mod = _example("softmax")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    g, b = rng.random(64).astype(np.float32), rng.random(64).astype(np.float32)
    got = _same(ascend_standin, mod.softmax, x, rtol=1e-5)
    np.testing.assert_allclose(got.sum(axis=-1), 1, rtol=1e-5)
    _same(ascend_standin, mod.layernorm, x, g, b, rtol=1e-4)


def test_bilateral_filter(ascend_standin):
    bilateral = _example("bilateral_filter").bilateral_filter
    rng = np.random.default_rng(2)
    yy, xx = np.mgrid[0:12, 0:13]
    img = (np.sin(yy / 3) * np.cos(xx / 4) + 0.05 * rng.standard_normal((12, 13)))
    # its space kernel is float64 data: on a device computed in float32 (opt-in)
    _same(ascend_standin, bilateral, img.astype(np.float32), rtol=1e-4,
          device_float64="demote")


def test_written_views_are_copied_back(ascend_standin):
    @hybrid(target="ascend")
    def bump(x):
        x += 1

    a = np.zeros((6, 8), np.float32)
    bump(a[:, ::2])  # non-contiguous: copied in, written, copied back
    assert (a[:, ::2] == 1).all() and (a[:, 1::2] == 0).all()


def _last_soc(kernel_fn, x) -> str:
    kernel = next(k for key, k in kernel_fn._kernels.items() if key[1] == "ascend")
    return kernel.variant(acl.context().soc_name).soc.name


def test_device_type_picks_the_variant_of_the_reported_soc(ascend_standin, monkeypatch):
    @hybrid(target="ascend", device_type=["Ascend910B1", "Ascend910B4"])
    def half(x):
        return x * 0.5

    x = np.arange(1 << 18, dtype=np.float32)  # enough blocks to use every vector core
    monkeypatch.setenv("PYASC_ACL_STANDIN_SOC", "Ascend910B4")
    np.testing.assert_array_equal(half(x), x * 0.5)
    assert _last_soc(half, x) == "Ascend910B4"
    assert ascend_standin.stats().last_blocks == 40  # B4's vector cores, not B1's 48
    acl.shutdown()
    monkeypatch.setenv("PYASC_ACL_STANDIN_SOC", "Ascend910B1")
    np.testing.assert_array_equal(half(x), x * 0.5)
    assert ascend_standin.stats().last_blocks == 48


def test_a_soc_outside_device_type_is_e50031_naming_both(ascend_standin, monkeypatch):
    @hybrid(target="ascend", device_type=["Ascend910B1"])
    def neg(x):
        return -x

    monkeypatch.setenv("PYASC_ACL_STANDIN_SOC", "Ascend910B3")
    with pytest.raises(DeviceError) as info:
        neg(np.ones(8, np.float32))
    assert info.value.code == "E50031"
    assert "Ascend910B3" in str(info.value) and "Ascend910B1" in str(info.value)


def test_without_device_type_the_device_soc_is_compiled_for(ascend_standin, monkeypatch):
    @hybrid(target="ascend")
    def sq(x):
        return x * x

    monkeypatch.setenv("PYASC_ACL_STANDIN_SOC", "Ascend910B3")
    x = np.arange(5000, dtype=np.float32)
    np.testing.assert_array_equal(sq(x), x * x)
    assert _last_soc(sq, x) == "Ascend910B3"


def test_auto_is_ascend_with_a_library_and_a_device(ascend_standin, monkeypatch):
    assert options.npu_available()
    monkeypatch.setenv("PYASC_ACL_STANDIN_DEVICES", "0")
    assert not options.npu_available()
    monkeypatch.delenv("PYASC_ACL_STANDIN_DEVICES")
    monkeypatch.delenv("PYASC_ACL_LIBRARY")
    monkeypatch.setenv("ASCEND_HOME_PATH", "/nonexistent")
    assert not options.npu_available()


def test_the_profiler_counts_the_launches_through_acl(ascend_standin):
    from pyasc import profiler

    relu = _on(_example("relu").relu, "ascend")
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    with profiler.Profile() as p:
        relu(x)
    (row,) = p.stats()
    assert row["target"] == "ascend" and row["launches"] == 1
    assert list(row["kernels"].values())[0]["launches"] == 1
