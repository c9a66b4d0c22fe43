"""The CPU loop structure of the tap pools: the in-place fold over the taps
(``total += tap(xp, i, j)``) runs inside the loops over the output, so each output row
is summed over every tap while it is in cache, instead of one pass over the whole
output per tap (nine passes for 3x3)."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc.ir import parse_module
from pyasc.ir.ops import loop, mem
from pyasc.ir.rewrite import constant_value
from pyasc.ops import avg_pool2d, max_pool2d


def _fold_nests(loop_ir: str) -> list[list[int]]:
    """Trip counts (outermost first) of the loops around each store of a 4-D array
    that the same block also loads (an in-place fold ``out[idx] = f(out[idx], ...)``)."""
    nests = []
    for op in parse_module(loop_ir).walk():
        if not isinstance(op, mem.StoreOp) or len(op.operand_values) != 6:
            continue
        buf = op.operand_values[1]
        if not any(isinstance(o, mem.LoadOp) and o.operand_values[0] is buf
                   for o in op.parent.ops):
            continue
        trips, parent = [], op.parent_op
        while isinstance(parent, loop.ForOp):
            trips.append(constant_value(parent.upper))
            parent = parent.parent_op
        nests.append(trips[::-1])
    return nests


@pytest.mark.parametrize("pool", [avg_pool2d, max_pool2d])
@pytest.mark.parametrize("k, s, p", [(3, 2, 1), (2, 2, 0)])
def test_tap_fold_runs_inside_the_output_loops(pool, k, s, p):
    x = np.zeros((2, 3, 20, 20), np.float32)
    nests = _fold_nests(pool.kernel(x, k, s, p, target="cpu").loop_ir)
    assert nests
    for trips in nests:
        assert trips[:2] == [2, 3], trips  # batch and channel loops outermost
        assert trips.count(k) >= 2 and trips[-1] != k, trips  # taps inside, not last
