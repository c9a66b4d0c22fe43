"""A conv over a run-time channel count, after ``channel-interchange`` and ``batch-loops``,
is grouped inside its ``channels`` loop and recognized as one channel stencil
(``ir/passes/channel_stencil.py``): windows that are planes of the loop's index, weights
``w[:, c, a, b]``, the accumulator read whole and written back whole, its fill before
the loop.  Forms it must not take (a window of another plane, weights of a fixed
channel, a scalar of the channel) are refused."""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import run_sim

from pyasc import hybrid
from pyasc.backend.ascendc import grouping
from pyasc.backend.ascendc.analysis import NotVectorizable
from pyasc.backend.ascendc.soc import get_soc
from pyasc.backend.ascendc.stencil_kernel import MAX_STENCIL_OPS
from pyasc.backend.ascendc.vec_collapse import plan_collapsible
from pyasc.ir import parse_module
from pyasc.ir.ops import loop, mem
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.passes.batch_loops import batch_function
from pyasc.ir.passes.channel_interchange import interchange_function
from pyasc.ir.passes.channel_stencil import match_channel_group, match_channel_stencil

SOC = get_soc(None)


def conv_loops(x, w):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = np.float32(0)
                for ch in range(c):
                    for di in range(3):
                        for dj in range(3):
                            acc += x[ch, i + di, j + dj] * w[o, ch, di, dj]
                out[o, i, j] = acc
    return out


def conv_batch_loops(x, w):
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2] - 2, x.shape[3] - 2), dtype=x.dtype)
    for b in range(x.shape[0]):
        for o in range(w.shape[0]):
            for i in range(x.shape[2] - 2):
                for j in range(x.shape[3] - 2):
                    acc = np.float32(0)
                    for ch in range(x.shape[1]):
                        for di in range(3):
                            for dj in range(3):
                                acc += x[b, ch, i + di, j + dj] * w[o, ch, di, dj]
                    out[b, o, i, j] = acc
    return out


def next_plane(x, w):
    # x[ch + 1]: not the plane of the loop's index
    c = x.shape[0] - 1
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = np.float32(0)
                for ch in range(c):
                    for di in range(3):
                        for dj in range(3):
                            acc += x[ch + 1, i + di, j + dj] * w[o, ch, di, dj]
                out[o, i, j] = acc
    return out


def fixed_weights(x, w):
    # w[o, 0, di, dj]: the same weights for every channel
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = np.float32(0)
                for ch in range(x.shape[0]):
                    for di in range(3):
                        for dj in range(3):
                            acc += x[ch, i + di, j + dj] * w[o, 0, di, dj]
                out[o, i, j] = acc
    return out


def channel_scale(x, w, s):
    # s[ch]: a scalar of the channel (read inside the loop)
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = np.float32(0)
                for ch in range(x.shape[0]):
                    for di in range(3):
                        for dj in range(3):
                            acc += x[ch, i + di, j + dj] * w[o, ch, di, dj] * s[ch]
                out[o, i, j] = acc
    return out


def _probe(group: FusionGroupOp) -> None:
    plan_collapsible(group, SOC, "probe")


def _channel_probe(chan: loop.ForOp):
    def probe(group: FusionGroupOp) -> None:  # (a merge attempt's group is detached)
        if match_channel_group(group, chan) is None:
            raise NotVectorizable("not a channel stencil", group.loc)
    return probe


def _channel_loop(fn, *args) -> loop.ForOp:
    """``fn``'s channel loop, interchanged, batched and grouped as the backend does."""
    mod = parse_module(str(hybrid(fn, dynamic_shape=True, boundscheck=False)
                           .specialize(*args).module))
    func = next(mod.functions)
    assert interchange_function(func) == 1
    batch_function(func)
    grouping.form_groups(func, _probe)
    (chan,) = [op for op in func.entry.ops if isinstance(op, loop.ForOp)]
    grouping.merge_adjacent(chan.body.blocks[0], _channel_probe(chan), MAX_STENCIL_OPS)
    return chan


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("fn,rank", [(conv_loops, 3), (conv_batch_loops, 4)],
                         ids=["conv", "batch"])
def test_the_channel_loop_is_one_channel_stencil(fn, rank, dtype):
    x = np.ones((2, 3, 7, 9)[4 - rank:], dtype)
    w = np.ones((4, 3, 3, 3), dtype)
    chan = _channel_loop(fn, x, w)
    m = match_channel_stencil(chan)
    assert m is not None
    assert [op for op in chan.body.blocks[0].ops if isinstance(op, FusionGroupOp)] == [m.group]
    (base,) = m.stencil.bases
    assert base.channel and base.fixed and base.images == (rank == 4)
    assert base.value is chan.parent.parent_op.entry.args[0]  # x itself  # type: ignore[union-attr]
    assert (base.rows, base.cols, base.views) == ((0, 2), (0, 2), 9)
    assert [wt.taps for wt in m.weights] == [(a, b) for a in range(3) for b in range(3)]
    assert all(wt.weights is chan.parent.parent_op.entry.args[1] for wt in m.weights)  # type: ignore[union-attr]
    assert isinstance(m.acc.op, mem.AllocOp) and str(m.acc.type.element) == "f32"
    assert m.group.inputs[m.acc_input].op.operand_values[0].op.source is m.acc
    assert m.write is not None and m.write.operand_values[0] is m.group.result_values[0]
    assert m.fill is not None and m.fill.operand_values[0].op.attributes["value"] == 0.0


@pytest.mark.parametrize("fn,extra", [(next_plane, ()), (fixed_weights, ()),
                                      (channel_scale, (np.ones(3, np.float32),))],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_other_forms_are_refused(fn, extra):
    x = np.ones((3, 7, 9), np.float32)
    w = np.ones((4, 3, 3, 3), np.float32)
    assert match_channel_stencil(_channel_loop(fn, x, w, *extra)) is None


# ---------------------------------------------------------------- the kernel on ascend-sim

SHAPES = [(1, (7, 9), 4), (3, (9, 11), 1), (5, (13, 21), 17), (0, (6, 7), 2),
          (3, (12, 301), 40),  # column tiles; 40 planes: three groups of accumulators
          (2, (5, 2001), 3)]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("fn", [conv_loops, conv_batch_loops], ids=["conv", "batch"])
def test_channel_kernel_equals_interpret_for_every_channel_count(fn, dtype):
    # ONE compiled function (one specialization) for C = 0, 1, 2, 3, 5, odd rows and
    # columns, O = 1, 2, 3, 4, 17, 40 (rows wider than a tile, planes in several groups);
    # multiply then add in program order from a float32 sum: exactly interpret's
    # results, float16 inputs too
    dyn = hybrid(fn, dynamic_shape=True)
    interp = hybrid(fn, dynamic_shape=True, target="interpret")
    rng = np.random.default_rng(7)
    for channels, (h, wd), outs in SHAPES:
        lead = (2,) if fn is conv_batch_loops else ()
        x = rng.standard_normal((*lead, channels, h, wd)).astype(dtype)
        w = rng.standard_normal((outs, channels, 3, 3)).astype(dtype)
        got, k = run_sim(dyn, x, w)
        kinds = {x.name: (type(x).__name__, getattr(x, "schedule", "")) for x in k.ascend.kernels}
        assert kinds[k.last_kernels[0][0]] == ("StencilKernel", "channels")
        want = interp(x, w)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert len(dyn.specializations) == 1


@pytest.mark.parametrize("fn", [conv_loops, conv_batch_loops], ids=["conv", "batch"])
def test_channel_kernel_moves_about_the_minimum_of_gm_bytes(fn):
    # x read once per group of planes (halo rows aside), each channel's weights once
    # per tile, every output written once: within 1.2x the minimum, no scalar GM access
    rng = np.random.default_rng(8)
    lead = (2,) if fn is conv_batch_loops else ()
    x = rng.standard_normal((*lead, 8, 45, 61)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    got, k = run_sim(hybrid(fn, dynamic_shape=True), x, w)
    c = k.last_counters
    assert [n for n, _ in k.last_kernels] == [k.ascend.kernels[0].name]
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
    minimum = x.nbytes + w.nbytes + got.nbytes
    assert c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] <= 1.2 * minimum


def conv_bias_relu(x, w, b):
    # a run-time initial value (the kernel starts its sums at it), a post op after
    out = np.empty((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=np.float32)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = b
                for ch in range(x.shape[0]):
                    for di in range(3):
                        for dj in range(3):
                            acc = acc + x[ch, i + di, j + dj] * w[o, ch, di, dj]
                out[o, i, j] = max(acc, np.float32(0)) * np.float32(0.5)
    return out


def conv_half_sum(x, w):
    # a float16 running sum: float16 accumulators
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = np.float16(0)
                for ch in range(x.shape[0]):
                    for di in range(3):
                        for dj in range(3):
                            acc += x[ch, i + di, j + dj] * w[o, ch, di, dj]
                out[o, i, j] = acc
    return out


def test_a_run_time_initial_value_and_a_float16_sum():
    rng = np.random.default_rng(9)
    cases = [(conv_bias_relu, (rng.standard_normal((3, 9, 12)).astype(np.float32),
                               rng.standard_normal((5, 3, 3, 3)).astype(np.float32),
                               np.float32(0.25))),
             (conv_half_sum, (rng.standard_normal((3, 9, 12)).astype(np.float16),
                              rng.standard_normal((5, 3, 3, 3)).astype(np.float16)))]
    for fn, args in cases:
        got, k = run_sim(hybrid(fn, dynamic_shape=True), *args)
        kinds = {x.name: getattr(x, "schedule", "") for x in k.ascend.kernels}
        assert kinds[k.last_kernels[0][0]] == "channels"
        want = hybrid(fn, dynamic_shape=True, target="interpret")(*args)
        np.testing.assert_array_equal(got, want)
