"""Small private buffers of a kernel (the 16-lane buffers of reductions inside a
parallel row loop) live in stack slots, not in an ``aligned_alloc``/``free`` pair per
row (``emit_mem``); larger or escaping buffers stay on the heap.  Results unchanged on
one thread and on several (each outlined chunk has its own slots)."""

from __future__ import annotations

import numpy as np
import pytest
from diff import SUM, check, rand

from pyasc import hybrid


@hybrid
def layernorm_rows(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b


@hybrid
def argmax_rows(x):
    return np.argmax(x, axis=-1)


@hybrid
def big_temporary(x):
    out = np.zeros(x.shape[0], x.dtype)
    for i in range(x.shape[0]):
        t = np.sort(x[i])  # a buffer of the row's size: heap
        out[i] = t[0] + t[-1]
    return out


@pytest.mark.parametrize("threads", ["1", "2"])
def test_lane_buffers_of_parallel_rows_are_stack_slots(threads, monkeypatch) -> None:
    monkeypatch.setenv("PYASC_NUM_THREADS", threads)
    x, g, b = rand((64, 3000), "float32"), rand((3000,), "float32", 1), rand((3000,),
                                                                          "float32", 2)
    assert "@aligned_alloc" not in layernorm_rows.llvm_ir(x, g, b)
    check(layernorm_rows, x, g, b, rtol=SUM(3000, 4.0))
    y = rand((64, 3000), "float32", 3)
    assert "@aligned_alloc" not in argmax_rows.llvm_ir(y)
    check(argmax_rows, y)


def test_large_temporaries_stay_on_the_heap() -> None:
    x = rand((8, 2000), "float32")
    assert "@aligned_alloc" in big_temporary.llvm_ir(x)
    check(big_temporary, x)
