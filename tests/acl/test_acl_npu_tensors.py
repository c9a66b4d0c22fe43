"""torch NPU tensors (``torch_npu``) as ``@hybrid`` arguments on ``target="ascend"``: the
kernel uses the tensor's own device memory (no copy in, no copy out; in-place writes
reach the tensor); other targets refuse them with E50040.

torch_npu cannot be installed here, so the tensor is a stand-in with the attributes
pyasc reads (``device.type == "npu"``, ``data_ptr()``, ``is_contiguous()``, ``shape``,
``dtype``) over memory the stand-in AscendCL library allocated: what pyasc does with a
real one is the same calls on a real device pointer (never run on an NPU).
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import pyasc
from pyasc import hybrid
from pyasc.backend.ascendc.codegen import PyascPerformanceWarning
from pyasc.errors import ArgumentError


class FakeNpuTensor:
    """The part of a ``torch.Tensor`` on ``npu:0`` that pyasc reads."""

    def __init__(self, memory: pyasc.DeviceArray, contiguous: bool = True,
                 dtype: str | None = None) -> None:
        self.memory, self._contiguous = memory, contiguous  # keeps the memory alive
        self.device = SimpleNamespace(type="npu", index=0)
        self.shape = memory.shape
        self.dtype = dtype or f"torch.{memory.dtype.name}"

    def data_ptr(self) -> int:
        return self.memory.ptr

    def is_contiguous(self) -> bool:
        return self._contiguous


def _relu(x):
    return np.maximum(x, 0)


def _bump(x):
    x += 1


def _ascend(fn):
    return hybrid(target="ascend")(fn)


X = np.linspace(-3, 3, 8 * 64, dtype=np.float32).reshape(8, 64)


def test_an_npu_tensor_is_used_in_place_without_copies(ascend_standin):
    tensor = FakeNpuTensor(pyasc.device_array(X))
    relu, bump = _ascend(_relu), _ascend(_bump)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        relu(X)  # compile first: the counts below are the calls alone
        before = ascend_standin.copied()
        got = relu(tensor)
        moved = {k: v - before[k] for k, v in ascend_standin.copied().items()}
        np.testing.assert_array_equal(got, np.maximum(X, 0))
        # only the result buffer travels; the tensor's bytes cross neither way
        assert moved["h2d"] == X.nbytes and moved["d2h"] == X.nbytes, moved
        before = ascend_standin.copied()
        bump(tensor)
        moved = {k: v - before[k] for k, v in ascend_standin.copied().items()}
    assert moved["h2d"] == 0 and moved["d2h"] == 0, moved
    np.testing.assert_array_equal(tensor.memory.numpy(), X + 1)  # the tensor changed


def test_npu_tensors_the_kernel_cannot_take_are_refused(ascend_standin):
    memory = pyasc.device_array(X)
    with pytest.raises(ArgumentError, match="not contiguous"):
        _ascend(_relu)(FakeNpuTensor(memory, contiguous=False))
    with pytest.raises(ArgumentError, match="bfloat16"):
        _ascend(_relu)(FakeNpuTensor(memory, dtype="torch.bfloat16"))


@pytest.mark.parametrize("target", ["cpu", "ascend-sim", "interpret"])
def test_other_targets_refuse_an_npu_tensor(ascend_standin, target):
    tensor = FakeNpuTensor(pyasc.device_array(X))
    with pytest.raises(ArgumentError, match="'x' is a torch tensor on an NPU") as info:
        hybrid(target=target)(_relu)(tensor)
    assert info.value.code == "E50040"
