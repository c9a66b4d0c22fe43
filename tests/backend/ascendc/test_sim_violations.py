"""Each rule real hardware breaks silently stops ascend-sim with the API and the source line."""

from __future__ import annotations

import numpy as np
import pytest
from ascend_simkit import library, marked_line

from pyasc.backend.ascendc.sim import SimCompileError, SimViolationError, compile_kernels

FILE = "sim_violations.cpp"

# kernel -> (API named in the report, words of the explanation)
CASES = {
    "unaligned_count": ("DataCopy", "28 bytes is not a multiple of 32"),
    "unaligned_ub": ("DataCopy", "UB address 8 is not 32-byte aligned"),
    "compare_tail": ("Compare", "160 bytes is not a multiple of 256"),
    "ub_oversubscribed": ("InitBuffer", "UB over-subscription"),
    "too_many_buffers": ("InitBuffer", "65 buffers in total exceed the TPipe limit of 64"),
    "unbalanced_queue": ("AllocTensor", "unbalanced queue"),
    "deque_empty": ("DeQue", "the queue is empty"),
    "double_free": ("FreeTensor", "double free"),
    "gm_out_of_bounds": ("DataCopy", "accesses GM bytes [224, 288) of a buffer of 256 bytes"),
    "gm_past_argument": ("SetGlobalBuffer", "overruns it (256 bytes)"),
    "cast_mode": ("Cast", "CAST_NONE from float to int32_t is not supported"),
    "foreign_enque": ("EnQue", "not allocated from this queue"),
    "alloc_exhausted": ("AllocTensor", "all 2 buffers of the queue are in use"),
    "use_after_free": ("Adds", "after FreeTensor"),
    "enque_over_depth": ("EnQue", "its depth is 1"),
    "write_race": ("DataCopy", "GM write race"),
    "pad_block_count": ("DataCopyPad", "blockCount 4096 exceeds 4095"),
    "free_enqueued": ("FreeTensor", "still enqueued; DeQue it first"),
    "second_pipe": ("TPipe", "a second TPipe"),
    "gm_scalar_out_of_bounds": ("GlobalTensor::SetValue", "GM bytes [256, 260)"),
    "never_initialised": ("AllocTensor", "never given buffers"),
    "gather_past_buffer": ("Gather", "element 63 reads byte 256 of src, beyond its buffer"),
    "gather_unaligned": ("Gather", "element 1 reads byte 1 of src, not aligned to sizeof(T)"),
    "gather_repeats": ("Gather", "count 16384 is 256 full repeats of 64 elements"),
}


@pytest.mark.parametrize("kernel", sorted(CASES))
def test_violation_names_api_and_line(kernel):
    api, words = CASES[kernel]
    x = np.zeros(64, np.float32)
    blocks = 2 if kernel == "write_race" else 1
    with pytest.raises(SimViolationError) as err:
        library(FILE).launch(kernel, blocks, x, x.size)
    line = marked_line(FILE, f"// VIOLATION: {kernel}")
    assert (err.value.api, err.value.line) == (api, line)
    assert words in err.value.detail
    text = str(err.value)
    assert f"{api} at {FILE}:{line}" in text and err.value.code == "E50050"


def test_violation_report_shows_the_generated_line():
    with pytest.raises(SimViolationError) as err:
        library(FILE).launch("double_free", 1, np.zeros(64, np.float32), 64)
    assert "q.FreeTensor(a);  // VIOLATION: double_free" in str(err.value)


def test_lowest_failing_block_is_reported():
    with pytest.raises(SimViolationError) as err:
        library(FILE).launch("unaligned_count", 5, np.zeros(64, np.float32), 64)
    assert err.value.block == 0


# Compile-time rules: one translation unit, one offending call per kernel. GCC reports every
# static_assert with the "required from here" line of the call in the kernel source.
BAD_SOURCE = """\
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void k(GM_ADDR x) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> b;
  pipe.InitBuffer(b, 1024);
  LocalTensor<float> f = b.Get<float>();
  LocalTensor<int32_t> i = b.Get<int32_t>();
  LocalTensor<int8_t> c = b.Get<int8_t>();
  Subs(f, f, 1.0f, 8);
  Divs(f, f, 2.0f, 8);
  Neg(f, f, 8);
  Exp(i, i, 8);
  Div(i, i, i, 8);
  Cast(f, c, RoundMode::CAST_NONE, 8);
  Duplicate(c, int8_t(1), 32);
}
"""
COMPILE_CASES = [
    (10, "Subs is not implemented on dav-c220 (Ascend910B): emit Adds"),
    (11, "Divs is not implemented on dav-c220 (Ascend910B): emit Muls"),
    (12, "Neg is ISASI and not available on dav-c220"),
    (13, "Exp: element type not supported on dav-c220 (Ascend910B); supported: half, float"),
    (14, "Div: element type not supported on dav-c220 (Ascend910B); supported: half, float"),
    (15, "Cast: this (dst, src) element-type pair is not supported on dav-c220"),
    (16, "Duplicate: element type not supported on dav-c220"),
]


@pytest.fixture(scope="module")
def compile_failure() -> SimCompileError:
    with pytest.raises(SimCompileError) as err:
        compile_kernels(BAD_SOURCE, ["k"], filename="bad.cpp")
    return err.value


@pytest.mark.parametrize("line, message", COMPILE_CASES)
def test_unsupported_api_or_dtype_fails_to_compile(compile_failure, line, message):
    text = str(compile_failure)
    assert message in text
    assert f"bad.cpp:{line}:" in text
    assert compile_failure.lineno == COMPILE_CASES[0][0]
