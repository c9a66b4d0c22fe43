"""The ``ascend-sim`` backend as the frontend uses it: ``target="ascend-sim"``, the
library caches, counters, and the host program's text format."""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_cases import relu
from ascendc_kit import OPT, STORE

import pyasc
from pyasc import hybrid
from pyasc.backend.ascendc import SimBackend, lower_program, sim_backend
from pyasc.backend.base import get_backend
from pyasc.ir import parse_module


@pytest.fixture
def shared_cache(monkeypatch):
    """Point the default disk cache at the test session's (already built) libraries."""
    monkeypatch.setenv("PYASC_CACHE_DIR", str(STORE.cache.dir.parent))
    monkeypatch.setenv("PYASC_SIM_OPT", OPT)


def test_registered_targets():
    assert isinstance(get_backend("ascend-sim"), SimBackend)
    assert get_backend("ascend").name == "ascend"


def test_target_ascend_sim_end_to_end(shared_cache):
    @hybrid(target="ascend-sim", dynamic_shape=True)
    def relu2(x):
        return np.maximum(x, 0)

    x = np.linspace(-3, 3, 4097, dtype=np.float32).reshape(1, -1)
    np.testing.assert_array_equal(relu2(x), np.maximum(x, 0))
    kernel = relu2.kernel(x)
    assert kernel.last_counters["gm_to_ub_bytes"] == x.nbytes
    assert kernel.last_launches and "relu2_0" in kernel.source


def test_libraries_come_from_the_caches(monkeypatch):
    STORE.get(relu, np.zeros((2, 3), np.float32))  # built by the test session
    ap = lower_program(relu.specialize(np.zeros((2, 3), np.float32)))

    def no_compiler(*args, **kwargs):
        raise AssertionError("the library should come from the cache")

    monkeypatch.setattr(sim_backend, "compile_kernels", no_compiler)
    first = sim_backend.build_library(ap, True, STORE.cache, OPT)
    assert sim_backend.build_library(ap, True, STORE.cache, OPT) is first  # one dlopen
    sim_backend._loaded.cache_clear()  # a fresh process: loaded from the disk cache
    again = sim_backend.build_library(ap, True, STORE.cache, OPT)
    assert again is not first and again.signatures == first.signatures


def test_programs_without_kernels_build_nothing(monkeypatch):
    @hybrid(dynamic_shape=True)
    def shape_sum(x):
        return x.shape[0] + x.shape[1]

    def no_compiler(*args, **kwargs):
        raise AssertionError("nothing to compile")

    monkeypatch.setattr(sim_backend, "compile_kernels", no_compiler)
    x = np.zeros((3, 4), np.float32)
    kernel = SimBackend().compile(shape_sum.specialize(x))
    assert shape_sum.run_with(lambda p: kernel, x) == 7 and kernel.last_launches == []


def test_host_programs_print_and_parse():
    from ascendc_cases import checked_gather, layernorm

    x = np.zeros((2, 3), np.float32)
    hosts = [lower_program(relu.specialize(x)).host,
             lower_program(layernorm.specialize(x, x[0], x[0])).host]
    with pytest.warns(Warning):
        hosts.append(lower_program(checked_gather.specialize(x[0], np.zeros(2, np.int64))).host)
    names = {op.name for h in hosts for op in h.walk()}
    assert {"ascend.launch", "ascend.ub_check", "ascend.check_status"} <= names
    for host in hosts:
        text = str(host)
        assert str(parse_module(text)) == text


def _norm(x):
    d = x - x.mean(axis=-1, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)


def _norm_scoped(x):
    d = x - x.mean(axis=-1, keepdims=True)
    with pyasc.fusion_scope():
        var = (d * d).mean(axis=-1, keepdims=True)
    return d / np.sqrt(var + 1e-5)


def test_fusion_scope_is_a_kernel_boundary_on_the_npu():
    # the fusion pass keeps a scope's groups apart; the AscendC grouping, which merges a
    # group into the next one it feeds, must not merge across the user's boundary
    import re

    x = np.ones((64, 256), np.float32)
    kernels = re.compile(r'extern "C" __global__ __aicore__ void (\w+)')
    assert len(kernels.findall(hybrid(_norm).ascendc(x))) == 1
    assert len(kernels.findall(hybrid(_norm_scoped).ascendc(x))) == 3
