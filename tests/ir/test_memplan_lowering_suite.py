"""``layout`` + ``memplan`` on every program of the ``lower-to-loops`` suites that go
through ``loops_harness.check``: the tests are collected again here with the harness's
``run_both`` wrapped so that, after the usual checks of the lowering, the lowered module
is also optimized and interpreted with allocation tracking (no leak, no double free,
freed buffers poisoned) and must agree bit for bit with the lowered module (results and
in-place effects on the arguments)."""

from __future__ import annotations

import loops_harness
import numpy as np
import pytest
import test_lower_loops_buffers
import test_lower_loops_reduce
import test_lower_loops_shapes
from loopopt_harness import assert_runs_agree, optimize, run_tracked

# suite -> the tests taken from it (None: all); the reduction suite is large, so only
# its random, strided and matmul programs (the ones layout reorders) are taken
SUITES = {
    test_lower_loops_buffers: None,
    test_lower_loops_shapes: None,
    test_lower_loops_reduce: {"test_reductions_random", "test_strided_source_and_zero_sign",
                              "test_matmul_strided_operands_and_mismatch"},
}

for _suite, _names in SUITES.items():
    _prefix = _suite.__name__.removeprefix("test_lower_loops_")
    globals().update({f"test_{_prefix}_{name[5:]}": fn for name, fn in vars(_suite).items()
                      if name.startswith("test_") and callable(fn)
                      and (_names is None or name in _names)})


CALLS: list[int] = []
SMALL = '''"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<3xf32>):
    %t = "mem.to_tensor"(%x) : (memref<3xf32>) -> tensor<3xf32>
    %y = "arith.add"(%t, %t) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%y) : (tensor<3xf32>) -> ()
  }) {function_type = (memref<3xf32>) -> tensor<3xf32>, sym_name = "f"} : () -> ()
}) : () -> ()'''


def _run_both_and_optimize(module, args, name="f"):
    before, after, a0, a1, lowered = _ORIGINAL(module, args, name)
    CALLS.append(1)
    optimized = optimize(lowered)
    assert_runs_agree((after, a1), run_tracked(optimized, args, name))
    return before, after, a0, a1, lowered


_ORIGINAL = loops_harness.run_both


@pytest.fixture(autouse=True)
def _optimize_every_lowering(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loops_harness, "run_both", _run_both_and_optimize)



def test_the_wrapper_runs() -> None:
    mod = loops_harness.parse_module(SMALL)
    n = len(CALLS)
    loops_harness.check(mod, [np.arange(3, dtype=np.float32)])
    assert len(CALLS) == n + 1
