"""The small-window rule of ``lower_group_reduce``: a float sum over a static window of
at most 16 rows of fewer than 16 columns keeps one lane per column over the rows (in a
small buffer, updated by a unit-stride loop over the columns), combines the lanes
pairwise, and stays within the stated error bound; other shapes and reductions keep
the blocked scheme."""

from __future__ import annotations

import loops_harness as H
import numpy as np
import pytest
from test_lower_group import check

from pyasc.ir.ops import arith, tensor
from pyasc.ir.ops import math as m
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.loopgen import constant_of


def window_sum(x: np.ndarray, extra=None) -> ModuleOp:
    """``sum(x, axis=(0, 1))`` (and ``extra(b, x)`` in the same group, if given)."""
    def body(b, v):
        s = b.insert(tensor.SumOp.new(v, [0, 1])).result
        return [s] if extra is None else [s, extra(b, v)]
    return H.kernel([x], body)


def lane_loops(lowered: ModuleOp, lanes: int) -> list:
    """Loops carrying exactly ``lanes`` values."""
    return [op for op in lowered.walk() if op.name == "loop.for" and len(op.inits) == lanes]


def lane_buffers(lowered: ModuleOp, n: int) -> list:
    """The ``lanes`` buffers of ``n`` columns."""
    return [op for op in lowered.walk() if op.name == "mem.alloc" and
            op.result.name_hint == "lanes" and op.result.type.shape == (n,)]


def column_loops(lowered: ModuleOp, n: int) -> list:
    """Loops over ``0..n`` whose body stores into a lane buffer."""
    return [op for op in lowered.walk() if op.name == "loop.for" and
            constant_of(op.lower) == 0 and constant_of(op.upper) == n and
            any(o.name == "mem.store" and o.dest.name_hint == "lanes"
                for o in op.body.blocks[0].ops)]


@pytest.mark.parametrize("shape", [(11, 11), (16, 15), (2, 1), (3, 4, 5)])
def test_small_windows_carry_one_lane_per_column(shape) -> None:
    x = np.random.default_rng(1).random(shape).astype(np.float32)
    module = H.kernel([x], lambda b, v: [b.insert(tensor.SumOp.new(
        v, list(range(len(shape))))).result])
    _, lowered = check(module, [x], rtol=1e-6)
    assert len(lane_buffers(lowered, shape[-1])) == 1
    # a zeroing loop and the row's column loop; no blocked scheme (16 carried lanes)
    assert len(column_loops(lowered, shape[-1])) == 2
    assert not lane_loops(lowered, 16)


@pytest.mark.parametrize("shape", [(17, 4), (4, 16), (1, 8), (3, 100)])
def test_other_windows_keep_the_blocked_scheme(shape) -> None:
    x = np.random.default_rng(2).random(shape).astype(np.float32)
    _, lowered = check(window_sum(x), [x], rtol=1e-6)
    assert not lane_loops(lowered, shape[-1]) or shape[-1] in (2, 16)


def test_integer_sums_and_max_run_in_source_order() -> None:
    x = np.random.default_rng(3).integers(-50, 50, (6, 7)).astype(np.int32)
    _, lowered = check(window_sum(x), [x])
    assert not lane_buffers(lowered, 7)  # no float sum: the rule does not apply
    f = np.random.default_rng(4).random((6, 7)).astype(np.float32)
    with_max = window_sum(f, lambda b, v: b.insert(tensor.ReduceMaxOp.new(v, [0, 1])).result)
    _, lowered = check(with_max, [f], rtol=1e-6)
    assert len(lane_buffers(lowered, 7)) == 1
    # the max's accumulator is carried in source order by the column loop
    assert [len(op.inits) for op in column_loops(lowered, 7)] == [0, 1]


def test_shared_element_code_is_emitted_once() -> None:
    x = np.random.default_rng(5).random((5, 9)).astype(np.float32)

    def two_sums(b, v):
        e = b.insert(m.ExpOp.new(v)).result
        s1 = b.insert(tensor.SumOp.new(e, [0, 1])).result
        s2 = b.insert(tensor.SumOp.new(b.insert(arith.MulOp.new(e, v)).result,
                                       [0, 1])).result
        return [s1, s2]
    _, lowered = check(H.kernel([x], two_sums), [x], rtol=1e-6)
    assert H.count_ops(lowered, "math.exp") == 1  # once in the column loop, for both sums
    assert len(lane_buffers(lowered, 9)) == 2


pytest.importorskip("llvmlite")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path / "cache"))


def test_compiled_window_sums_meet_the_error_bound() -> None:
    from pyasc import hybrid

    @hybrid
    def windows(x):
        out = np.zeros(x.shape[0] - 10, dtype=x.dtype)
        for i in range(x.shape[0] - 10):
            out[i] = np.sum(x[i:i + 11, :])
        return out

    rng = np.random.default_rng(6)
    for data in (rng.random((40, 11)), rng.lognormal(0.0, 3.0, (40, 11)),
                 rng.standard_normal((40, 11)) * 1e4):
        x = data.astype(np.float64)
        got = windows(x)
        exact = np.array([np.sum(x[i:i + 11].astype(np.longdouble)) for i in range(30)])
        scale = np.array([np.sum(np.abs(x[i:i + 11])) for i in range(30)])
        # 11 rows per lane (10 additions) + 4 pairwise levels
        bound = 14 * np.finfo(np.float64).eps * scale
        assert np.all(np.abs(got - exact.astype(np.float64)) <= bound)


def test_compiled_window_sums_propagate_inf_and_nan() -> None:
    from pyasc import hybrid

    @hybrid
    def total(x):
        return np.sum(x[0:5, 0:5])

    x = np.ones((5, 5), np.float32)
    x[2, 3] = np.inf
    assert total(x) == np.inf
    x[4, 0] = -np.inf
    assert np.isnan(total(x))
    x[:] = 1.0
    x[1, 1] = np.nan
    assert np.isnan(total(x))
