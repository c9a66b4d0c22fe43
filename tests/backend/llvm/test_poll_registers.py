"""A loop that polls for Ctrl-C keeps every value it holds in registers across the poll.

The poll stub is called every ``emit_poll.BUDGET`` iterations, declared
``preserve_allcc``: the loop keeps vector constants in registers across it.  LLVM's own
``preserve_allcc`` function on x86-64 saved ymm0-15 only and returned through
``vzeroupper``: after the first poll the upper half of every vector register was zero,
so ``x * 0.5 + 1.0`` over more than 2^18 elements came back with half of each vector
wrong (1.9M zeros in a 2000x2000 result).
"""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.llvm import emit_poll, poll_stub
from pyasc.backend.llvm.jit import host_cpu


@hybrid(target="cpu")
def affine(x):
    return x * 0.5 + 1.0


@hybrid(target="cpu")
def rows_scaled(x, w):
    out = np.empty_like(x)
    for i in range(x.shape[0]):  # a loop around a loop: polls at its back-edge
        out[i] = x[i] * w + 3.0
    return out


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "int8"])
def test_values_in_vector_registers_survive_the_poll(dtype):
    rng = np.random.default_rng(3)
    for cols in (2000, 1500, 1450, 1000):  # where a poll falls in the vector work varies
        rows = 8 * emit_poll.BUDGET // cols + 3  # several polls
        x = (rng.standard_normal((rows, cols)) * 50).astype(dtype)
        np.testing.assert_array_equal(affine(x), affine.__wrapped__(x))
        w = np.arange(cols, dtype=dtype) % 7 + 1
        np.testing.assert_array_equal(rows_scaled(x, w), rows_scaled.__wrapped__(x, w))


def test_the_x86_64_stub_saves_the_whole_vector_state():
    text = poll_stub.x86_64_stub("pyasc.rt.poll")
    assert "xsave (%rsp)" in text and "xrstor (%rsp)" in text
    assert "vzeroupper" not in text and text.rstrip().endswith("retq")
    if poll_stub.kind(host_cpu()[1]) == "asm":
        assert rows_scaled.asm(np.zeros((300, 1000)), np.zeros(1000)).count("xsave") == 1
