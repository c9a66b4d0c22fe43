"""A matmul operand that is a gather of table rows (``table[ids] @ w``, ``x @ table[ids]``)
is read through its indices: results equal to numpy and to ``interpret``, no buffer of
gathered rows in the loop IR, the gather's index errors unchanged, and the copy kept
where the table may change before the matmul reads it (``lower_matmul_gather``)."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import fusion_group, hybrid
from pyasc.errors import IndexOutOfBoundsError

RNG = np.random.default_rng(21)


@hybrid
def embedding(ids, table):
    return table[ids]


@hybrid
def project(a, b):
    return a @ b


@fusion_group
def fused(ids, table, w):
    return project(embedding(ids, table), w)


@hybrid
def lookup_then_matmul(ids, table, w):
    return table[ids] @ w


@hybrid(target="interpret")
def lookup_then_matmul_interpreted(ids, table, w):
    return table[ids] @ w


@hybrid
def matmul_by_rows(x, ids, table):
    return x @ table[ids]


@hybrid
def table_written_in_between(ids, table, w):
    e = table[ids]
    table[0] = 0.0
    return e @ w


@hybrid
def gathered_twice(ids, table, w):
    e = table[ids]
    return e @ w + e.sum()


def gathered_buffers(fn, *args) -> list[str]:
    """``mem.alloc`` lines of the loop IR whose shape is that of the gathered rows."""
    ids, table = args[0], args[1]
    shape = f"memref<{len(ids)}x{table.shape[1]}x"
    return [line for line in str(fn.kernel(*args).loop_ir).splitlines()
            if '"mem.alloc"' in line and shape in line]


def operands(n=37, vocab=50, dim=20, out=41, dtype=np.float32):
    table = RNG.standard_normal((vocab, dim)).astype(dtype)
    w = RNG.standard_normal((dim, out)).astype(dtype)
    ids = RNG.integers(-vocab, vocab, n)  # negative ids count from the end, as in numpy
    return ids, table, w


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("fn", [fused, lookup_then_matmul], ids=["fusion_group", "one"])
def test_equal_to_numpy_and_interpret_without_the_gathered_copy(fn, dtype):
    ids, table, w = operands(dtype=dtype)
    if dtype == np.int32:
        table, w = (RNG.integers(-9, 10, v.shape).astype(dtype) for v in (table, w))
    got = fn(ids, table, w)
    np.testing.assert_allclose(got, table[ids] @ w, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got, lookup_then_matmul_interpreted(ids, table, w),
                               rtol=1e-5, atol=1e-4)
    assert gathered_buffers(fn, ids, table, w) == []


@pytest.mark.parametrize("n", [1, 17, 130])
def test_odd_row_counts_and_the_right_operand(n):
    ids, table, w = operands(n=n, vocab=300, dim=n)
    np.testing.assert_allclose(lookup_then_matmul(ids, table, w), table[ids] @ w,
                               rtol=1e-5, atol=1e-4)
    x = RNG.standard_normal((9, n)).astype(np.float32)
    np.testing.assert_allclose(matmul_by_rows(x, ids, table), x @ table[ids],
                               rtol=1e-5, atol=1e-4)
    assert gathered_buffers(lookup_then_matmul, ids, table, w) == []
    allocs = [line for line in str(matmul_by_rows.kernel(x, ids, table).loop_ir).splitlines()
              if '"mem.alloc"' in line]
    assert not any(f"memref<{n}x{table.shape[1]}x" in line for line in allocs)


def test_same_value_as_the_materialized_gather():
    """Each element is the same sequential sum whether the rows were copied first."""
    ids, table, w = operands(n=70, vocab=200, dim=300, out=45)
    np.testing.assert_array_equal(lookup_then_matmul(ids, table, w),
                                  project(embedding(ids, table), w))


def test_an_index_out_of_range_raises_as_the_gather_does():
    ids, table, w = operands()
    ids[5] = table.shape[0]
    with pytest.raises(IndexOutOfBoundsError, match="out of bounds"):
        lookup_then_matmul(ids, table, w)
    with pytest.raises(IndexOutOfBoundsError, match="out of bounds"):
        fused(ids, table, w)


def test_a_write_to_the_table_in_between_keeps_the_copy():
    ids, table, w = operands()
    ids[:3] = 0
    want = table[ids] @ w
    got = table_written_in_between(ids, table.copy(), w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert gathered_buffers(table_written_in_between, ids, table, w) != []


def test_gathered_rows_used_twice_are_copied_once():
    ids, table, w = operands()
    e = table[ids]
    np.testing.assert_allclose(gathered_twice(ids, table, w), e @ w + e.sum(),
                               rtol=1e-4, atol=1e-3)
    assert len(gathered_buffers(gathered_twice, ids, table, w)) == 1


@hybrid(dynamic_shape=True)
def lookup_then_matmul_dynamic(ids, table, w):
    return table[ids] @ w


def test_one_dynamic_kernel_for_every_size():
    for n, vocab, dim, out in [(5, 30, 7, 40), (100, 50, 33, 9), (1, 3, 1, 1)]:
        ids, table, w = operands(n, vocab, dim, out)
        np.testing.assert_allclose(lookup_then_matmul_dynamic(ids, table, w), table[ids] @ w,
                                   rtol=1e-5, atol=1e-4)
    assert len(lookup_then_matmul_dynamic.specializations) == 1
    matrices = [line for line in str(lookup_then_matmul_dynamic.kernel(ids, table, w)
                                     .loop_ir).splitlines()
                if '"mem.alloc"' in line and "memref<?x?xf32>" in line]
    assert len(matrices) == 1  # the result; no gathered rows
