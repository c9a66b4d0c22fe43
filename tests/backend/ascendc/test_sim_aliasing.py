"""Kernel arguments that alias: a view and its whole array start at the same address.

The host passes a contiguous view of an array directly (``out[::2]`` of a two-row
array is its first row), so a kernel may get the row and the whole array as two
arguments with one start address.  ascend-sim used to bind a buffer to the first
argument holding its address and reported a false "overruns it" violation for the
whole array (found by the fuzzer)."""

from __future__ import annotations

import numpy as np
from ascendc_kit import check

from pyasc import hybrid
from pyasc.backend.ascendc.sim import SimConfig, compile_kernels

ROW_AND_ALL = """\
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void row_and_all(GM_ADDR row, GM_ADDR all, int32_t n) {
  GlobalTensor<float> r, a;
  r.SetGlobalBuffer((__gm__ float*)row, 2);
  a.SetGlobalBuffer((__gm__ float*)all, n);
  r.SetValue(0, 5.0f);
  a.SetValue(n - 1, a.GetValue(0) + 1.0f);
  DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(a);
}
"""


def test_a_buffer_may_start_where_a_smaller_argument_does():
    lib = compile_kernels(ROW_AND_ALL, ["row_and_all"], config=SimConfig(opt_level="-O0"))
    whole = np.zeros((2, 2), np.float32)
    lib.launch("row_and_all", 1, whole[:1], whole, 4)  # the row is passed first
    np.testing.assert_array_equal(whole, [[5, 0], [0, 6]])


@hybrid
def first_row_and_the_rest(a, b):
    out = np.zeros_like(a, dtype=np.int32)
    out[::2] = a[::2]
    for i in range(a.shape[1]):
        if b[i] > 0:
            out[::2] = 7  # the first row only, when there are two rows
        out[1:] += i
    return out


def test_a_kernel_writing_a_view_and_its_array():
    for rows in (1, 2):  # more rows: a strided view, refused (E50010) by design
        a = np.arange(rows * 2, dtype=np.int16).reshape(rows, 2)
        check(first_row_and_the_rest, a, np.array([0, 1], np.int8), rtol=0, atol=0)
