"""Issue 19's convolutions written with loops, in spellings that were scalar kernels on
ascend-sim (``benchmarks/loop_spellings.py``): each must now launch stencil/vector kernels
only, with no scalar GM access, its result bit-equal to ``target="interpret"`` (the same
order of the sums) on odd sizes, float32 and float16, static and ``dynamic_shape=True``.

* an initial value per output (``acc = bias[o]``, ``acc = res[o, i, j]``) under
  ``dynamic_shape``: ``channel-interchange`` writes it with a nest of its own and the
  channel kernel starts its sums from the accumulator buffer (it refused a non-constant
  initial value: the whole conv was one scalar kernel, 31x the minimum of GM bytes); a
  value per output plane (``bias[o]``, ``table[1, o]``) the channel kernel reads
  itself, no broadcast written and read back;
* the elementwise ops after the sum (``max(acc, 0)``, ``np.maximum``, float16's cast of
  the float32 sums: ``test_channel_slices``) under ``dynamic_shape``: the channel kernel's epilogue, on each
  plane's accumulators, writes ``out`` (they were a vector kernel of their own reading
  the accumulators back: 2.27x the minimum of GM bytes);
* an output axis of 1 (one image, one output plane, row or column: its loop of one trip
  is gone) in a static conv for the cube: index 0 there (it wanted every output loop).
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import run_sim

from pyasc import hybrid

RNG = np.random.default_rng(1919)


def _kinds(k) -> list[tuple[str, str]]:  # noqa: ANN001
    kinds = {x.name: (type(x).__name__, getattr(x, "schedule", "")) for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


def _assert_equal_and_vector(fn, interp, args) -> list[tuple[str, str]]:  # noqa: ANN001
    got, k = run_sim(fn, *args)
    want = interp(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert {kind for kind, _ in _kinds(k)} <= {"VectorKernel", "StencilKernel"}, _kinds(k)
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
    return _kinds(k), k


def _channel_launch(k) -> tuple[object, dict]:  # noqa: ANN001
    """The channel kernel and its launch's counters."""
    kernels = {x.name: x for x in k.ascend.kernels}
    at = [n for n, _ in k.last_kernels].index(next(
        x.name for x in k.ascend.kernels if getattr(x, "channels", None) is not None))
    return kernels[k.last_kernels[at][0]], k.last_launches[at]


# ---- an initial value per output: acc = bias[o] -------------------------------------------

def conv_bias_init_relu(x, w, bias):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = bias[o]
                for ch in range(c):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = max(acc, 0)
    return out


def conv_batch_bias_init(x, w, bias):
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2] - 1, x.shape[3] - 2), dtype=x.dtype)
    for n in range(x.shape[0]):
        for o in range(w.shape[0]):
            for i in range(x.shape[2] - 1):
                for j in range(x.shape[3] - 2):
                    acc = bias[o]
                    for ch in range(x.shape[1]):
                        for a in range(2):
                            for b in range(3):
                                acc = acc + x[n, ch, i + a, j + b] * w[o, ch, a, b]
                    out[n, o, i, j] = np.maximum(acc, 0)
    return out


def conv_table_init(x, w, table):
    # the planes' values a row of a table (a view at an offset)
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = table[1, o]
                for ch in range(c):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = acc
    return out


def conv_residual_init(x, w, res):
    # a value per output element (a residual), scaled: not a value per plane
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = res[o, i, j] * 0.5
                for ch in range(len(x)):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = acc
    return out


def _bias_args(fn, channels: int, h: int, wd: int, outs: int, dtype) -> tuple:  # noqa: ANN001
    lead = (2,) if fn is conv_batch_bias_init else ()
    kh = 2 if fn is conv_batch_bias_init else 3
    x = RNG.standard_normal((*lead, channels, h, wd)).astype(dtype)
    w = RNG.standard_normal((outs, channels, kh, 3)).astype(dtype)
    third = RNG.standard_normal((outs, h - 2, wd - 2)) if fn is conv_residual_init else \
        RNG.standard_normal((2, outs)) if fn is conv_table_init else RNG.standard_normal(outs)
    return x, w, third.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("fn", [conv_bias_init_relu, conv_batch_bias_init, conv_residual_init,
                                conv_table_init])
def test_an_initial_value_per_output_is_a_channel_kernel(fn, dtype):
    # ONE compiled function for C = 0, 3, 5 and odd sizes (0 channels: the initial values;
    # 130 output planes: several groups of planes, the values from plane p0 > 0 on)
    dyn = hybrid(fn, dynamic_shape=True)
    interp = hybrid(fn, dynamic_shape=True, target="interpret")
    for shape in [(0, 6, 7, 5), (3, 9, 13, 5), (5, 11, 30, 5), (2, 5, 6, 130)]:
        args = _bias_args(fn, *shape, dtype)
        kinds, k = _assert_equal_and_vector(dyn, interp, args)
        assert ("StencilKernel", "channels") in kinds
        channel, launch = _channel_launch(k)
        per_plane = fn is not conv_residual_init
        if per_plane and shape[0] == 0:
            # no channel: it reads the planes' values, not a broadcast of them
            assert launch["gm_to_ub_bytes"] < launch["ub_to_gm_bytes"], launch
        assert channel.channels.init == ("planes" if per_plane else "acc")
    assert len(dyn.specializations) == 1


def test_an_initial_value_per_output_with_static_shapes():
    args = _bias_args(conv_bias_init_relu, 3, 9, 13, 4, np.float32)
    fn = hybrid(conv_bias_init_relu)
    _assert_equal_and_vector(fn, hybrid(conv_bias_init_relu, target="interpret"), args)


# ---- the elementwise ops after the sum: the channel kernel's epilogue ----------------------

@pytest.mark.parametrize("fn,dtype", [(conv_bias_init_relu, np.float32),
                                      (conv_bias_init_relu, np.float16),
                                      (conv_batch_bias_init, np.float32)])
def test_the_ops_after_the_sum_are_the_channel_kernels_epilogue(fn, dtype):
    # ONE compiled function for C = 0, 1, 5: the channel kernel alone writes out
    dyn = hybrid(fn, dynamic_shape=True)
    interp = hybrid(fn, dynamic_shape=True, target="interpret")
    for shape in [(0, 6, 7, 3), (1, 9, 13, 4), (5, 20, 30, 5)]:
        args = _bias_args(fn, *shape, dtype)
        _, k = _assert_equal_and_vector(dyn, interp, args)
        assert len(k.last_kernels) == 1, k.last_kernels  # no kernel of the post ops
        channel, _ = _channel_launch(k)
        assert channel.channels.post_out is not None
        c = k.last_counters
        least = sum(a.nbytes for a in args) + interp(*args).nbytes
        if shape[0] == 5:
            assert c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] <= 1.25 * least, (c, least)
    assert len(dyn.specializations) == 1


# ---- a kernel axis of one: a tap loop of one trip (gone before loop_conv_nest) ------------

def conv_taps_of_w(x, w):
    # the tap loops over w's shape: with static shapes a loop of one trip is removed
    out = np.zeros((w.shape[0], x.shape[1] - w.shape[2] + 1, x.shape[2] - w.shape[3] + 1),
                   dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                acc = 0.0
                for ch in range(x.shape[0]):
                    for a in range(w.shape[2]):
                        for b in range(w.shape[3]):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = acc
    return out


def _exact(shape: tuple, dtype) -> np.ndarray:  # noqa: ANN001
    # small integers: every partial sum (at most 1000 terms of -1, 0, 1) is exact in
    # float16 and float32, whatever the order (the cube's is not the loop's)
    return RNG.integers(-1, 2, shape).astype(dtype)


@pytest.mark.parametrize("taps,channels,dtype", [((2, 1), 300, np.float32),
                                                 ((1, 3), 250, np.float16),
                                                 ((1, 1), 700, np.float32)])
def test_a_kernel_axis_of_one_is_a_cube_conv(taps, channels, dtype):
    # C * KH * KW taps past batch-loops' unroll limit: loop_conv_nest's cube conv (it
    # wanted three tap loops: a scalar kernel); odd image sizes
    x, w = _exact((channels, 9, 13), dtype), _exact((6, channels, *taps), dtype)
    got, k = run_sim(hybrid(conv_taps_of_w), x, w)
    np.testing.assert_array_equal(got, hybrid(conv_taps_of_w, target="interpret")(x, w))
    kinds = [kind for kind, _ in _kinds(k)]
    assert "ScalarKernel" not in kinds and any(kind.startswith("Conv") for kind in kinds), kinds
    assert k.last_counters["gm_scalar_read_bytes"] == k.last_counters["gm_scalar_write_bytes"] == 0


def conv_two_of_three_rows(x, w):
    # the tap loop walks 2 of w's 3 rows: not a conv of w (the cube conv summed all 3)
    out = np.zeros((w.shape[0], x.shape[1] - 2, x.shape[2] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            for j in range(x.shape[2] - 2):
                acc = 0.0
                for ch in range(x.shape[0]):
                    for a in range(2):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = acc
    return out


@pytest.mark.filterwarnings("ignore::pyasc.backend.ascendc.PyascPerformanceWarning")
def test_a_tap_loop_over_part_of_w_is_not_its_conv():
    x, w = _exact((300, 7, 9), np.float32), _exact((3, 300, 3, 3), np.float32)
    got, _ = run_sim(hybrid(conv_two_of_three_rows), x, w)
    np.testing.assert_array_equal(got, conv_two_of_three_rows(x, w))


def conv_1x1(x, w):
    out = np.zeros((w.shape[0], x.shape[1], x.shape[2]), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1]):
            for j in range(x.shape[2]):
                acc = 0.0
                for ch in range(x.shape[0]):
                    acc += x[ch, i, j] * w[o, ch, 0, 0]
                out[o, i, j] = acc
    return out


def conv_1x1_unit_loops_relu(x, w, bias):
    out = np.zeros((w.shape[0], x.shape[1], x.shape[2]), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1]):
            for j in range(x.shape[2]):
                acc = bias[o]
                for ch in range(x.shape[0]):
                    for a in range(1):
                        for b in range(1):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = max(acc, 0)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("fn", [conv_1x1, conv_1x1_unit_loops_relu])
def test_a_1x1_conv_over_run_time_channels_is_a_channel_kernel(fn, dtype):
    # one window per channel (no halo) is the channel kernel's one tap (stencil_windows
    # wanted two views of a base: a scalar kernel)
    dyn = hybrid(fn, dynamic_shape=True)
    interp = hybrid(fn, dynamic_shape=True, target="interpret")
    for channels, h, wd in [(5, 9, 11), (1, 4, 37), (0, 3, 5)]:
        x = RNG.standard_normal((channels, h, wd)).astype(dtype)
        w = RNG.standard_normal((4, channels, 1, 1)).astype(dtype)
        args = (x, w) if fn is conv_1x1 else (x, w, RNG.standard_normal(4).astype(dtype))
        assert ("StencilKernel", "channels") in _assert_equal_and_vector(dyn, interp, args)[0]


# ---- an output axis of one: an output loop of one trip (gone before loop_conv_nest) -------

def conv_batch_taps_of_w(x, w):
    out = np.zeros((x.shape[0], w.shape[0], x.shape[2] - w.shape[2] + 1,
                    x.shape[3] - w.shape[3] + 1), dtype=x.dtype)
    for n in range(x.shape[0]):
        for o in range(w.shape[0]):
            for i in range(out.shape[2]):
                for j in range(out.shape[3]):
                    acc = 0.0
                    for ch in range(x.shape[1]):
                        for a in range(w.shape[2]):
                            for b in range(w.shape[3]):
                                acc = acc + x[n, ch, i + a, j + b] * w[o, ch, a, b]
                    out[n, o, i, j] = max(acc, 0.0)
    return out


def conv_strided_relu(x, w):
    out = np.zeros((w.shape[0], (x.shape[1] - 2) // 2 + 1, (x.shape[2] - 1) // 2 + 1),
                   dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                acc = 0.0
                for ch in range(x.shape[0]):
                    for a in range(2):
                        for b in range(1):
                            acc += x[ch, 2 * i + a, 2 * j + b] * w[o, ch, a, b]
                out[o, i, j] = np.maximum(acc, 0)
    return out


@pytest.mark.parametrize("fn,xs,ws,dtype", [
    (conv_taps_of_w, (300, 3, 11), (6, 300, 3, 3), np.float32),          # one output row
    (conv_taps_of_w, (260, 9, 3), (1, 260, 3, 3), np.float16),           # one column, plane
    (conv_batch_taps_of_w, (1, 250, 3, 9), (5, 250, 3, 2), np.float32),  # one image, row
    (conv_strided_relu, (494, 3, 12), (7, 494, 2, 1), np.float16),       # stride 2, one row
])
def test_an_output_axis_of_one_is_a_cube_conv(fn, xs, ws, dtype):
    # taps past batch-loops' unroll limit: loop_conv_nest's cube conv (it wanted every
    # output loop, [n,] o, i, j: a scalar kernel), index 0 of the axis without a loop
    x, w = _exact(xs, dtype), _exact(ws, dtype)
    got, k = run_sim(hybrid(fn), x, w)
    np.testing.assert_array_equal(got, hybrid(fn, target="interpret")(x, w))
    kinds = [kind for kind, _ in _kinds(k)]
    assert "ScalarKernel" not in kinds and any(kind in ("ConvKernel", "CubeKernel")
                                               for kind in kinds), kinds
    assert k.last_counters["gm_scalar_read_bytes"] == k.last_counters["gm_scalar_write_bytes"] == 0


def conv_overwritten(x, w):
    c, h, wd = x.shape
    out = np.zeros((w.shape[0], h - 2, wd - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(h - 2):
            for j in range(wd - 2):
                acc = 0.0
                for ch in range(c):
                    for a in range(3):
                        for b in range(3):
                            acc += x[ch, i + a, j + b] * w[o, ch, a, b]
                out[o, i, j] = 5.0
                out[o, i, j] = max(acc, 0.0)
    return out


def test_no_epilogue_when_memory_is_written_before_the_users_write():
    # the epilogue writes ``out`` where the channel loop is: a write between the loop
    # and the user's write (``out[...] = 5.0`` first) would then land last (every
    # output 5.0 before the fix: a silent wrong result)
    x = RNG.standard_normal((3, 9, 11)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    want = hybrid(conv_overwritten, target="interpret", dynamic_shape=True)(x, w)
    got, _ = run_sim(hybrid(conv_overwritten, dynamic_shape=True), x, w)
    np.testing.assert_array_equal(got, want)
