"""Golden text of the generated AscendC (and of two host programs).

Regenerate after an intended change with ``PYASC_UPDATE_GOLDEN=1``, then review the
diff of ``golden/``.  The kernels are the dynamic-shape float32 ones (their text does
not depend on the shapes), plus the adaptive pool's loops (a pool kernel and its scalar
twin), two float16 matmuls on the cube unit, one MIX kernel (matmul + bias + GELU),
static and of run-time shapes, and one conv2d kernel (the im2col in L1).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from ascendc_cases import (
    adaptive_avg_pool,
    conv2d_relu,
    gelu,
    layernorm,
    matmul,
    matmul_bias_gelu,
    matmul_bias_gelu_dynamic,
    relu,
    softmax,
)

from pyasc.backend.ascendc import PyascPerformanceWarning, generate_ascendc, lower_program

GOLDEN = Path(__file__).parent / "golden"
X = np.ones((4, 8), np.float32)
CASES = {
    "relu": (relu, (X,)),
    "gelu": (gelu, (X,)),
    "softmax": (softmax, (X,)),
    "layernorm": (layernorm, (X, X[0], X[0])),
    "adaptive_avg_pool": (adaptive_avg_pool, (X, (2, 2))),
    # cube kernels: the sizes are arguments, the block shape and L1 residency the plan's
    # (one 128 x 128 block, A and B streamed; 128 x 256 blocks with both panels in L1)
    "matmul": (matmul, (np.ones((17, 33), np.float16), np.ones((33, 5), np.float16))),
    "matmul_resident": (matmul, (np.ones((1000, 100), np.float16),
                                 np.ones((100, 1000), np.float16))),
    # a MIX kernel: the cube part writes workspace slots, the vector cores run the bias +
    # GELU epilogue (mix_plan, emit_mix)
    "matmul_bias_gelu": (matmul_bias_gelu, (np.ones((17, 33), np.float16),
                                            np.ones((33, 130), np.float16),
                                            np.ones((130,), np.float16))),
    # the same of run-time shapes: C's size and the tiling are arguments; its twin (the
    # unfused cube + vector kernels) is in the same source
    "matmul_bias_gelu_dynamic": (matmul_bias_gelu_dynamic, (np.ones((17, 33), np.float16),
                                                            np.ones((33, 130), np.float16),
                                                            np.ones((130,), np.float16))),
    # a conv kernel: the im2col in L1 (conv_match, emit_conv); geometry and tiling are
    # arguments, the text depends on the dtype and Fixpipe's ReLU/conversion
    "conv2d_relu": (conv2d_relu, (np.ones((2, 3, 9, 11), np.float16),
                                  np.ones((4, 3, 3, 3), np.float16))),
}


def _compare(path: Path, text: str) -> None:
    if os.environ.get("PYASC_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"{path} missing: run with PYASC_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{path.name} changed (PYASC_UPDATE_GOLDEN=1 to accept)"


@pytest.mark.parametrize("name", sorted(CASES))
def test_source(name):
    fn, args = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PyascPerformanceWarning)
        text = generate_ascendc(fn.specialize(*args), "Ascend910B1")
    _compare(GOLDEN / f"{name}.cpp", text)


@pytest.mark.parametrize("name", ["relu", "layernorm"])
def test_host_program(name):
    fn, args = CASES[name]
    host = lower_program(fn.specialize(*args)).host
    text = "\n".join(line.split(" loc(")[0] for line in str(host).splitlines()) + "\n"
    # check messages name the source file: keep the text independent of the checkout
    text = text.replace(str(Path(__file__).parent) + os.sep, "")
    _compare(GOLDEN / f"{name}.host.ir", text)


def test_ascendc_method_of_hybrid_functions():
    assert relu.ascendc(X, soc="Ascend910B1") == (GOLDEN / "relu.cpp").read_text()
    text = relu.ascendc(X, soc="Ascend310P3")
    assert "--cce-aicore-arch=dav-m200-vec" in text
