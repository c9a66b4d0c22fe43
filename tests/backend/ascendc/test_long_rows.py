"""Rows longer than one UB tile: the long-rows schedule (``vec_longrows``).

softmax, log_softmax, logsumexp, layernorm, rmsnorm and cross-entropy over vocabulary-
sized rows run on ascend-sim, each row streamed through UB in column tiles (one pass
per reduction level; online max/sum for ``sum(exp(x - max(x)))``), in float32 and
float16 (half sums accumulate in float32).  The functions have run-time shapes: one
build serves every row length, the host choosing the row-wise kernel when a row fits
one tile and its long-rows twin otherwise.
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import STORE, run_sim

from pyasc import hybrid
from pyasc.backend.ascendc import lower_program
from pyasc.backend.ascendc.analysis import analyze
from pyasc.backend.ascendc.tiles import Buf, Instr, Ref, TileProgram
from pyasc.backend.ascendc.vec_alloc import _liveness
from pyasc.backend.ascendc.vec_longrows import plan_levels
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import f32

RNG = np.random.default_rng(20240919)
F32 = {"rtol": 2e-5, "atol": 1e-6}
F16 = {"rtol": 4e-3, "atol": 4e-3}   # the tolerance of the other float16 sim tests


@hybrid(dynamic_shape=True)
def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


@hybrid(dynamic_shape=True)
def log_softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))


@hybrid(dynamic_shape=True)
def logsumexp(x):
    m = np.max(x, axis=-1, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))


@hybrid(dynamic_shape=True)
def layernorm(x, gamma, beta):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * gamma + beta


@hybrid(dynamic_shape=True)
def rmsnorm(x, weight):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * weight


@hybrid(dynamic_shape=True)
def cross_entropy(logits, labels):
    m = np.max(logits, axis=-1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(logits - m), axis=-1, keepdims=True))
    picked = np.take_along_axis(logits, labels[:, None], axis=-1)
    return (lse - picked)[:, 0]


def _args(name, rows, cols, dtype):
    x = (RNG.standard_normal((rows, cols)) * 3).astype(dtype)
    row = RNG.standard_normal(cols).astype(dtype)
    return {"softmax": (softmax, (x,)), "log_softmax": (log_softmax, (x,)),
            "logsumexp": (logsumexp, (x,)), "layernorm": (layernorm, (x, row, row[::-1].copy())),
            "rmsnorm": (rmsnorm, (x, row)),
            "cross_entropy": (cross_entropy, (x, RNG.integers(0, cols, rows)))}[name]


def _check(fn, args, tol):
    """ascend-sim == numpy; float16 against the float32 computation."""
    got, k = run_sim(fn, *args)
    wide = [a.astype(np.float32) if a.dtype == np.float16 else a for a in args]
    want = fn.__wrapped__(*wide)
    assert got.dtype == fn.__wrapped__(*args).dtype
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               **tol, err_msg=fn.__name__)
    return k


@pytest.fixture(scope="module", autouse=True)
def _prefetch():
    """Start every build of this module at once (one per function and dtype)."""
    for name in ("softmax", "log_softmax", "logsumexp", "layernorm", "rmsnorm",
                 "cross_entropy"):
        for dtype in (np.float32, np.float16):
            STORE.submit(*_flat(_args(name, 2, 16, dtype)))


def _flat(pair):
    fn, args = pair
    return (fn, *args)


CASES = ["softmax", "logsumexp", "layernorm", "cross_entropy"]


@pytest.mark.parametrize("cols", [50257, 131072])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("name", CASES)
def test_vocabulary_sized_rows(name, dtype, cols):
    fn, args = _args(name, 2, cols, dtype)
    k = _check(fn, args, F32 if dtype == np.float32 else F16)
    x = args[0]
    # every row went through the UB in tiles: at most three reads of x (layernorm), the
    # row vectors (gamma, beta) once per row
    vectors = sum(a.nbytes * x.shape[0] for a in args[1:] if a.dtype == x.dtype)
    assert x.nbytes <= k.last_counters["gm_to_ub_bytes"] <= 3 * x.nbytes + vectors


@pytest.mark.parametrize("name", ["log_softmax", "rmsnorm"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
def test_other_long_row_reductions(name, dtype):
    fn, args = _args(name, 3, 40000, dtype)
    _check(fn, args, F32 if dtype == np.float32 else F16)


@pytest.mark.parametrize("cols", [12345, 8191, 30001])
@pytest.mark.parametrize("name", CASES)
def test_odd_column_counts(name, cols):
    # tails that are not whole 32-byte blocks, in float32 (8) and float16 (16)
    for dtype, tol in ((np.float32, F32), (np.float16, F16)):
        fn, args = _args(name, 3, cols, dtype)
        _check(fn, args, tol)


def _row_tile(fn, *args) -> int:
    """The tile of ``fn``'s row-wise kernel: the longest padded row it takes whole."""
    rows = [k for k in lower_program(fn.specialize(*args)).kernels if getattr(k, "schedule", "") == "rows"]
    return rows[0].tile


@pytest.mark.parametrize("name", ["softmax", "logsumexp", "layernorm"])
def test_rows_that_just_fit_and_just_do_not(name):
    fn, small = _args(name, 2, 16, np.float32)
    tile = _row_tile(fn, *small)
    for cols, fits in ((tile, True), (tile + 1, False)):
        fn, args = _args(name, 2, cols, np.float32)
        k = _check(fn, args, F32)
        x_reads = {"softmax": 2, "logsumexp": 1, "layernorm": 3}[name]
        if name != "layernorm":  # x is its only input: count how often it was read
            assert k.last_counters["gm_to_ub_bytes"] == (1 if fits else x_reads) * args[0].nbytes


def test_static_fitting_rows_keep_the_single_pass_schedule():
    @hybrid
    def sm(x):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)

    small = lower_program(sm.specialize(np.zeros((4, 1000), np.float32)))
    assert [k.schedule for k in small.kernels] == ["rows"] and "longrows" not in small.source
    big = lower_program(sm.specialize(np.zeros((4, 50257), np.float32)))
    assert [k.schedule for k in big.kernels] == ["longrows"]


def _group(fn, *args) -> FusionGroupOp:
    module = fn.specialize(*args).module
    return next(op for op in module.walk() if isinstance(op, FusionGroupOp))


def test_levels_come_from_the_dependence_graph():
    x, g = np.zeros((2, 8), np.float32), np.zeros(8, np.float32)
    group = _group(layernorm, x, g, g)
    info = analyze(group)
    ops = [op for op in group.body.blocks[0].ops if op.name != "fusion.yield"]
    _, passes, online = plan_levels(ops, info)
    # the mean first, then the variance of x - mean; nothing online
    assert sorted(passes.values()) == [1, 2] and not online
    group = _group(softmax, x)
    info = analyze(group)
    ops = [op for op in group.body.blocks[0].ops if op.name != "fusion.yield"]
    _, passes, online = plan_levels(ops, info)
    # the exp-sum follows the running maximum: both in pass 1
    assert sorted(passes.values()) == [1, 1] and len(online) == 1


def test_a_value_set_before_a_tile_loop_lives_through_it():
    prog = TileProgram()
    a, b, c = (Buf("col", f32, n) for n in "abc")
    prog.buffers += [a, b, c]
    prog.instrs = [Instr("Duplicate", Ref(a), ("0.0f",), (), "col"),   # before the loop
                   Instr("Adds", Ref(b), (Ref(a), "1.0f"), (), "col"),  # loop: last read of a
                   Instr("Adds", Ref(c), (Ref(b), "1.0f"), (), "col")]  # loop
    assert _liveness(prog)[a] == (0, 1)
    # read again by the next tile: a must outlive the whole loop body (instrs 1..2)
    assert _liveness(prog, [(1, 3)])[a] == (0, 3)
