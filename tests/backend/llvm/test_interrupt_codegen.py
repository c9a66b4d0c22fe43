"""Polls for Ctrl-C cost the vectorized loops nothing: their vector code is the same with
and without the ``interrupt-poll`` pass, kernels without marked loops call nothing, and
loops run in strips still vectorize."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.llvm.backend import LLVMBackend


@hybrid(cache=False)
def relu(x):
    return np.maximum(x, 0.0)


@hybrid(cache=False)
def rows_tanh(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.tanh(x[i]) * 2.0 + 1.0
    return out


@hybrid(cache=False)
def first_n(x, n):
    out = np.zeros_like(x)
    for i in range(n):
        out[i] = x[i] * 3.0 + 1.0
    return out


def _llvm_ir(monkeypatch, fn, *args, polls: bool = True) -> str:
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "" if polls else "interrupt-poll")
    return LLVMBackend().compile(fn.specialize(*args)).llvm_ir


POLL_CALL = re.compile(r"call (?:\w+ )?i32 @pyasc\.poll\(")
"""A call of the poll stub (``emit_poll``; on x86-64 it is module assembly that calls
``pyasc.rt.poll``)."""


def _vector_code(text: str) -> Counter:
    """The vector instructions of a module, SSA names, metadata numbers and ``tail``
    markers erased."""
    lines = [line.split(";")[0].strip().replace("tail call", "call")
             for line in text.splitlines() if re.search(r"<\d+ x ", line) and "=" in line]
    return Counter(re.sub(r"%[\w.\-]+|!\d+", "%", line) for line in lines)


def test_kernels_without_marked_loops_never_call_the_runtime(monkeypatch):
    text = _llvm_ir(monkeypatch, relu, np.ones(1000, np.float32))
    assert "pyasc.rt.epoch" not in text and "pyasc.rt.poll" not in text


def test_vector_code_is_the_same_with_polls(monkeypatch):
    x = np.ones((64, 1024), np.float32)  # rows longer than SMALL_NEST: a real inner loop
    with_polls = _llvm_ir(monkeypatch, rows_tanh, x)
    without = _llvm_ir(monkeypatch, rows_tanh, x, polls=False)
    assert POLL_CALL.search(with_polls) and "pyasc.rt.poll" not in without
    assert _vector_code(with_polls) == _vector_code(without) != Counter()


def test_strips_still_vectorize(monkeypatch):
    x = np.arange(9000, dtype=np.float32)
    text = _llvm_ir(monkeypatch, first_n, x, 100)
    assert POLL_CALL.search(text)
    assert re.search(r"fmul <\d+ x float>", text)
    for n in (0, 1, 4095, 4096, 4097, 8500, 9000):  # strips of 4096 and their ends
        expected = np.zeros_like(x)
        expected[:n] = x[:n] * 3 + 1
        np.testing.assert_array_equal(first_n(x, n), expected)


@hybrid(cache=False)
def first_negative(x, n, start):
    """A ``for`` with a ``break``: a counted while, run in strips of 4096."""
    found = -1
    for k in range(start, n):
        if x[k % x.shape[0]] < 0.0:
            found = k
            break
    return found


@hybrid(cache=False)
def stepped(x, n):
    """``while k < n`` with a step of 3 and a second condition."""
    k = 1
    s = 0.0
    while k < n and s < 1e9:
        s += x[k % x.shape[0]]
        k += 3
    return k, s


@pytest.mark.parametrize("at", [-1, 0, 4095, 4096, 4097, 8191, 9000])
@pytest.mark.parametrize("n", [0, 1, 4096, 4097, 12289])
def test_counted_loops_in_strips_give_the_interpreted_results(at, n):
    x = np.ones(10007)
    if at >= 0:
        x[at] = -1.0
    for start in (0, 5):
        assert first_negative(x, n, start) == first_negative.__wrapped__(x, n, start)
    assert stepped(x, n) == stepped.__wrapped__(x, n)


def test_both_loops_are_counted():
    assert 'poll = "counted"' in first_negative.kernel(np.ones(10), 5, 0).loop_ir
    assert 'poll = "counted"' in stepped.kernel(np.ones(10), 5).loop_ir
