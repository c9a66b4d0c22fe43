"""Compiled ``a @ b`` (the tiled nest of ``lower_matmul_tiled`` at its real block sizes):
numpy's results for odd sizes, strides, dtypes and batches; every float element is the
sequential sum over k, bit for bit, whatever the thread count: of fused multiply-adds
(``matmul_fma``, the default, on a host with FMA) or of products (``matmul_fma=False``)."""

from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.llvm.jit import host_has_fma
from pyasc.runtime import threads

RNG = np.random.default_rng(11)


@hybrid
def mm(a, b):
    return a @ b


@hybrid(matmul_fma=False)
def mm_unfused(a, b):
    return a @ b


@hybrid(dynamic_shape=True)
def mm_dynamic(a, b):
    return a @ b


@hybrid(dynamic_shape=True, matmul_fma=False)
def mm_dynamic_unfused(a, b):
    return a @ b


@hybrid(dynamic_shape=True, matmul_fma=False, fastmath=True)
def mm_dynamic_reassociable(a, b):
    return a @ b


def rand(shape, dtype=np.float32):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return RNG.standard_normal(shape).astype(dt)
    return RNG.integers(-30, 31, shape).astype(dt)


def sequential_unfused(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros(a.shape[:-1] + b.shape[-1:], a.dtype)
    for k in range(a.shape[-1]):
        out = out + a[..., :, k:k + 1] * b[..., k:k + 1, :]
    return out


def _libm_fma(dtype: np.dtype):
    """C's ``fmaf``/``fma`` (correctly rounded) as a numpy ufunc."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    f = libm.fmaf if dtype == np.float32 else libm.fma
    c_type = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    f.restype, f.argtypes = c_type, [c_type] * 3
    return np.frompyfunc(f, 3, 1)


def sequential_fma(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    fma = _libm_fma(a.dtype)
    out = np.zeros(a.shape[:-1] + b.shape[-1:], a.dtype)
    for k in range(a.shape[-1]):
        out = fma(a[..., :, k:k + 1], b[..., k:k + 1, :], out).astype(a.dtype)
    return out


def sequential(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """What ``mm`` computes on this host."""
    return sequential_fma(a, b) if host_has_fma() else sequential_unfused(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("n", [1, 3, 17, 65])
def test_square_odd_sizes(n, dtype):
    a, b = rand((n, n), dtype), rand((n, n), dtype)
    got = mm(a, b)
    assert got.dtype == dtype and got.shape == (n, n)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_array_equal(got, sequential(a, b))
    else:
        np.testing.assert_array_equal(got, a @ b)


@pytest.mark.parametrize("m,k,n", [(70, 600, 45), (13, 257, 1100), (6, 1, 16)])
def test_blocks_and_tails_are_the_sequential_sum(m, k, n):
    a, b = rand((m, k)), rand((k, n))
    np.testing.assert_array_equal(mm(a, b), sequential(a, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(64, 300, 70), (15, 40, 33), (7, 9, 130), (1, 17, 40)])
def test_every_tail_of_rows_static_and_dynamic(m, k, n, dtype):
    """Rows past the last full register tile go through tiles of 4, 2 and 1 rows: each
    element is still the sequential sum (with static and run-time sizes alike)."""
    a, b = rand((m, k), dtype), rand((k, n), dtype)
    want = sequential(a, b)
    np.testing.assert_array_equal(mm(a, b), want)
    np.testing.assert_array_equal(mm_dynamic(a, b), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_fma_false_is_the_sum_of_rounded_products(dtype):
    a, b = rand((37, 300), dtype), rand((300, 70), dtype)
    np.testing.assert_array_equal(mm_unfused(a, b), sequential_unfused(a, b))


@pytest.mark.skipif(not host_has_fma(), reason="the host has no FMA")
def test_matmul_fma_fuses_each_step():
    """Steps whose product is not exact tell the two apart: the default is fused."""
    a = np.array([[1.0, 1 + 2.0 ** -13]], np.float32)
    b = np.array([[-1.0], [1 - 2.0 ** -13]], np.float32)
    # -1 + (1 - 2^-26): the product rounded first is 1 and the sum 0
    assert mm(a, b)[0, 0] == np.float32(-(2.0 ** -26))
    assert mm_unfused(a, b)[0, 0] == 0.0


def test_transposed_and_strided_operands():
    a, b = rand((300, 70)), rand((90, 300))
    for x, y in [(a.T[:, ::2], b.T[::2]), (np.asfortranarray(a[:40]), b[:70, ::-3])]:
        np.testing.assert_array_equal(mm(x, y), sequential(x, y))


@pytest.mark.parametrize("sa,sb", [((3, 20, 33), (33, 40)), ((2, 1, 19, 7), (3, 7, 18))])
def test_batched(sa, sb):
    a, b = rand(sa), rand(sb)
    np.testing.assert_allclose(mm(a, b), a @ b, rtol=1e-5, atol=1e-4)


def test_identical_for_every_thread_count(monkeypatch):
    a, b = rand((131, 300)), rand((300, 77))
    found = set()
    with threads.minimum_work(0):
        for count in (1, 2, 3):
            monkeypatch.setenv("PYASC_NUM_THREADS", str(count))
            found.add(mm(a, b).tobytes())
    assert len(found) == 1


def test_register_tile_uses_the_widest_vectors():
    """On AVX-512 the micro-kernel's accumulators are zmm registers (LLVM would pick
    256-bit vectors on these CPUs without the function's ``prefer-vector-width``)."""
    from pyasc.backend.llvm.jit import host_vector_bits

    a, b = rand((64, 64)), rand((64, 64))
    asm = mm.asm(a, b)
    if host_vector_bits() == 512:
        assert '"prefer-vector-width"="512"' in mm.llvm_ir(a, b)
        fused = "vfmadd" if host_has_fma() else "vmulps"
        assert any(fused in line and "zmm" in line for line in asm.splitlines())
    else:
        assert "zmm" not in asm


def _unoptimized_llvm_lines(fn, *args) -> int:
    """Lines of the LLVM IR generated for ``fn(*args)`` (before LLVM's passes, which take
    time roughly in proportion to it; nothing is compiled)."""
    from pyasc.backend.llvm.backend import lower_to_loops
    from pyasc.backend.llvm.generate import generate
    from pyasc.backend.llvm.jit import host_vector_bits

    program = fn.specialize(*args)
    text, _ = generate(lower_to_loops(program), program.entry, program.result_params,
                       native=program.call_data.get("native"), vector_bits=host_vector_bits())
    return text.count("\n")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("dynamic", [False, True])
def test_multiply_then_add_kernels_are_as_small_as_fma_ones(dtype, dynamic):
    """A micro-kernel stepping ``acc + a * b`` (integers, ``matmul_fma=False``) is one
    loop carrying its accumulators, as the FMA one is: ``distribute-reductions`` once
    split it into a loop of products stored in 256 buffers and a loop of sums (12x the
    LLVM IR; a 65 x 65 int32 product took 46 s to compile)."""
    fn, reference = (mm_dynamic_unfused, mm_dynamic) if dynamic else (mm_unfused, mm)
    a, f = rand((65, 65), dtype), rand((65, 65), np.float32)
    assert _unoptimized_llvm_lines(fn, a, a) < 1.5 * _unoptimized_llvm_lines(reference, f, f)


@pytest.mark.parametrize("dtype,fn", [(np.int32, mm_dynamic), (np.int64, mm_dynamic),
                                      (np.float32, mm_dynamic_reassociable)])
def test_register_tile_is_not_vectorized_along_k(dtype, fn):
    """Where the tile's sums may be reordered (integers; floats under ``fastmath`` without
    FMA) LLVM's loop vectorizer vectorized the micro-kernel along ``k``: each of the 256
    accumulators of an int32 tile a vector of partial sums, with an epilogue loop and the
    scalar loop, 5x the optimized IR of the float32 kernel and 36 s of compile time.  The
    loop carries ``vectorize.enable = false``; SLP still packs the accumulators."""
    a, f = rand((65, 65), dtype), rand((65, 65), np.float32)
    optimized = fn.llvm_ir(a, a)
    assert optimized.count("\n") < 1.5 * mm_dynamic.llvm_ir(f, f).count("\n")
    assert "llvm.loop.vectorize.enable\", i1 false" in optimized
    if dtype == np.float32:  # fastmath: any order of the sum
        np.testing.assert_allclose(fn(a, a), a @ a, rtol=1e-4, atol=1e-4)
    else:
        np.testing.assert_array_equal(fn(a, a), a @ a)


def test_matmul_fma_must_be_a_bool():
    from pyasc.errors import InvalidOptionError

    with pytest.raises(InvalidOptionError, match="matmul_fma"):
        hybrid(matmul_fma=1)(lambda a, b: a @ b)


def test_k_blocks_are_even():
    from pyasc.ir.passes.lower_matmul_tiled import _even_depth

    assert [_even_depth(k, 128) for k in (1, 100, 128, 144, 257, 576)] == \
        [1, 100, 128, 72, 86, 116]
