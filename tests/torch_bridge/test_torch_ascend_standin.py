"""torch CPU tensors on ``target="ascend"``, against the stand-in AscendCL library
(never run on an NPU): the host program stages them like numpy arrays, the kernel's
writes land in the tensor and results come back as tensors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid

torch = pytest.importorskip("torch")


def _bump_relu(x):
    x += 1
    return np.maximum(x, 0)


def test_cpu_tensor_on_ascend_is_written_in_place(ascend_standin, monkeypatch):
    monkeypatch.setenv("PYASC_SIM_OPT", "-O0")
    fn = hybrid(target="ascend")(_bump_relu)
    x = torch.linspace(-3, 3, 64, dtype=torch.float32).reshape(8, 8)
    want_x = x + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (staging performance warnings)
        r = fn(x)
    assert torch.equal(x, want_x)
    assert isinstance(r, torch.Tensor) and torch.equal(r, torch.clamp(want_x, min=0))
