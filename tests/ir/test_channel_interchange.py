"""``channel-interchange``: a run-time reduction loop inside a nest over outputs (a
conv's ``for c in range(x.shape[0])``) moves outside the nest, its accumulator one
element per output in a buffer of the accumulator's dtype; the interpreter's results
are bit-identical before and after (exact comparisons). Shapes it must leave alone
stay as they are."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.ir import parse_module
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import loop, mem
from pyasc.ir.passes.batch_loops import batch_function
from pyasc.ir.passes.channel_interchange import interchange_function
from pyasc.ir.verifier import verify_module

RNG = np.random.default_rng(19)


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


def conv_bias_relu(x, w, b):
    # the initial value is a run-time scalar, a post op follows the reduction
    out = np.empty((w.shape[0], x.shape[1], x.shape[2]), dtype=np.float32)
    for o in range(w.shape[0]):
        for i in range(x.shape[1]):
            for j in range(x.shape[2]):
                acc = b
                for ch in range(x.shape[0]):
                    acc = acc + x[ch, i, j] * w[o, ch]
                out[o, i, j] = max(acc, np.float32(0)) * np.float32(0.5)
    return out


def conv_literal_channels(x, w):
    out = np.zeros((w.shape[0], x.shape[1] - 2), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1] - 2):
            acc = np.float32(0)
            for ch in range(3):  # static: batch-loops unrolls it
                for di in range(3):
                    acc += x[ch, i + di] * w[o, ch, di]
            out[o, i] = acc
    return out


def into_a_parameter(x, out):
    for o in range(out.shape[0]):
        acc = np.float32(0)
        for ch in range(x.shape[0]):
            acc += x[ch, o]
        out[o] = acc
    return out


def reads_the_output(x):
    out = np.zeros(x.shape[1], np.float32)
    for o in range(x.shape[1]):
        acc = np.float32(0)
        for ch in range(x.shape[0]):
            acc += x[ch, o] * out[0]
        out[o] = acc + 1
    return out


def _module(fn, *args, **options):
    mod = hybrid(fn, dynamic_shape=True, **options).specialize(*args).module
    return parse_module(str(mod))


def _rewritten(fn, *args, **options) -> tuple[object, object, int]:
    before = _module(fn, *args, **options)
    after = _module(fn, *args, **options)
    done = interchange_function(next(after.functions))
    verify_module(after)
    return before, after, done


def _same(before, after, name: str, *args) -> None:
    want = Interpreter(before).call(name, *args)
    got = Interpreter(after).call(name, *args)
    for a, b in zip(want, got, strict=True):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape,outs", [((1, 7, 9), 4), ((3, 9, 5), 1), ((5, 6, 11), 4),
                                        ((0, 5, 5), 2), ((2, 2, 4), 3)])
def test_conv_of_a_run_time_channel_count_is_interchanged_exactly(dtype, shape, outs):
    # one module for every C (the same rewrite), float16 x with a float32 running sum
    x = RNG.standard_normal(shape).astype(dtype)
    w = RNG.standard_normal((outs, shape[0], 3, 3)).astype(dtype)
    before, after, done = _rewritten(conv_loops, x, w, boundscheck=False)
    assert done == 1
    top = [op for op in next(after.functions).entry.ops if isinstance(op, loop.ForOp)]
    assert len(top) == 2  # the channel loop, then the nest storing the outputs
    tmp = [op for op in next(after.functions).walk() if isinstance(op, mem.AllocOp)][-1]
    assert str(tmp.result.type.element) == "f32"  # the accumulator's dtype, not out's
    _same(before, after, "conv_loops", x, w)


def test_the_fast_copy_of_a_bounds_checked_nest_is_interchanged():
    # hoist-checks versions the nest: its unchecked copy moves, the checked one (whose
    # first failing check must stay the first) is left alone
    x = RNG.standard_normal((3, 8, 9)).astype(np.float32)
    w = RNG.standard_normal((2, 3, 3, 3)).astype(np.float32)
    before, after, done = _rewritten(conv_loops, x, w)
    assert done == 1
    _same(before, after, "conv_loops", x, w)
    with pytest.raises(IndexError):  # w of 2 channels: the checked copy raises, as before
        Interpreter(after).call("conv_loops", x, w[:, :2].copy())


def test_initial_value_and_post_ops_are_kept():
    x = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    b = np.float32(0.25)
    before, after, done = _rewritten(conv_bias_relu, x, w, b, boundscheck=False)
    assert done == 1
    _same(before, after, "conv_bias_relu", x, w, b)


def conv_bias_per_output(x, w, b, r):
    # an initial value per output (a load of the nest's indices): written by a nest of
    # its own before the channel loop
    out = np.empty((w.shape[0], x.shape[1], x.shape[2]), dtype=x.dtype)
    for o in range(w.shape[0]):
        for i in range(x.shape[1]):
            for j in range(x.shape[2]):
                acc = b[o] + r[i, j]
                for ch in range(x.shape[0]):
                    acc += x[ch, i, j] * w[o, ch]
                out[o, i, j] = acc
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("channels", [0, 1, 4])
def test_an_initial_value_per_output_is_kept(dtype, channels):
    x = RNG.standard_normal((channels, 5, 6)).astype(dtype)
    w = RNG.standard_normal((3, channels)).astype(dtype)
    b, r = RNG.standard_normal(3).astype(dtype), RNG.standard_normal((5, 6)).astype(dtype)
    before, after, done = _rewritten(conv_bias_per_output, x, w, b, r, boundscheck=False)
    assert done == 1
    top = [op for op in next(after.functions).entry.ops if isinstance(op, loop.ForOp)]
    assert len(top) == 3  # the initial values' nest, the channel loop, the outputs' nest
    assert top[1].attributes.get("channels")
    _same(before, after, "conv_bias_per_output", x, w, b, r)


@pytest.mark.parametrize("fn,args", [
    (conv_literal_channels, (np.ones((3, 6), np.float32), np.ones((2, 3, 3), np.float32))),
    (into_a_parameter, (np.ones((3, 4), np.float32), np.ones(4, np.float32))),
    (reads_the_output, (np.ones((3, 4), np.float32),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_left_alone(fn, args):
    # a static reduction (unrolled by batch-loops), a parameter output (it may alias
    # x), a reduction reading the output: the nest stays as it is
    _, after, done = _rewritten(fn, *args, boundscheck=False)
    assert done == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("channels", [0, 1, 3, 5])
def test_batch_loops_batches_the_nest_inside_the_channel_loop(dtype, channels):
    # after the interchange the nest over outputs inside ``for c`` is a perfect nest of
    # static windows: batch-loops makes it whole-output array work, once per channel
    x = RNG.standard_normal((channels, 7, 10)).astype(dtype)
    w = RNG.standard_normal((3, channels, 3, 3)).astype(dtype)
    before, after, done = _rewritten(conv_loops, x, w, boundscheck=False)
    fn = next(after.functions)
    assert done == 1 and batch_function(fn) == 2  # the channel loop's nest, the final copy
    verify_module(after)
    (chan,) = [op for op in fn.entry.ops if isinstance(op, loop.ForOp)]
    assert chan.attributes.get("channels")
    assert not any(isinstance(op, loop.ForOp) for op in chan.walk() if op is not chan)
    _same(before, after, "conv_loops", x, w)


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


@pytest.mark.parametrize("channels", [1, 3])
def test_a_batch_loop_around_the_conv_interchanges_and_batches(channels):
    # (N, O, rows, cols) outputs: the channel loop moves around the four loops
    x = RNG.standard_normal((2, channels, 7, 9)).astype(np.float32)
    w = RNG.standard_normal((4, channels, 3, 3)).astype(np.float32)
    before, after, done = _rewritten(conv_batch_loops, x, w, boundscheck=False)
    assert done == 1 and batch_function(next(after.functions)) == 2
    _same(before, after, "conv_batch_loops", x, w)


def conv_scaled_by_a_0d_array(x, w, s):
    # ``acc * s`` with ``s`` a 0-d array: a read of it (extract(to_tensor(s))) after
    # the reduction
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
                out[o, i, j] = acc * s
    return out


def a_0d_array_written_by_the_nest(x):
    # the reduction reads ``t`` (0-d), which the post ops write: left alone
    out = np.zeros(x.shape[1], np.float32)
    t = np.ones((), np.float32)
    for o in range(x.shape[1]):
        acc = np.float32(0)
        for ch in range(x.shape[0]):
            acc += x[ch, o] * t
        out[o] = acc
        t[...] = acc
    return out


def test_a_0d_array_read_after_the_reduction_is_interchanged():
    x = RNG.standard_normal((3, 7, 9)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    s = np.array(0.75, np.float32)
    before, after, done = _rewritten(conv_scaled_by_a_0d_array, x, w, s, boundscheck=False)
    assert done == 1
    assert any(isinstance(op, mem.ToTensorOp) and op.result.type.rank == 0
               for op in next(before.functions).walk())
    _same(before, after, "conv_scaled_by_a_0d_array", x, w, s)
    x = np.ones((3, 4), np.float32)
    assert _rewritten(a_0d_array_written_by_the_nest, x, boundscheck=False)[2] == 0
