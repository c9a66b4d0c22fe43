"""Performance facts the ascend-sim counters make deterministic.

* fused elementwise, row-wise and reduction kernels move the minimum GM bytes: every
  input read once, every output written once (row vectors such as LayerNorm's gamma
  once per block; a whole-array reduction writes one 32-byte partial result per block);
* every per-tile copy-in goes through a double-buffered ``TQue<VECIN, 2>`` (only the
  once-per-block row-vector loads are single-buffered);
* for large inputs the tiles fill at least half of the SoC's InitBuffer budget.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from ascendc_cases import gelu, layernorm, relu, softmax, squared_error
from ascendc_kit import run_sim

from pyasc.backend.ascendc.soc import get_soc

RNG = np.random.default_rng(7)
BUDGET = get_soc("Ascend910B1").init_buffer_bytes


def _x(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = {
    "relu": (relu, lambda: (_x(300, 1000),)),
    "gelu": (gelu, lambda: (_x(200, 1100),)),
    "softmax": (softmax, lambda: (_x(100, 4000),)),
    "layernorm": (layernorm, lambda: (_x(64, 1000), _x(1000), _x(1000))),
    "squared_error": (squared_error, lambda: (_x(500, 1000), _x(500, 1000))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gm_bytes_are_minimal(name):
    fn, make = CASES[name]
    args = make()
    out, k = run_sim(fn, *args)
    c = k.last_counters
    assert len(k.last_launches) == 1, "one fused kernel"
    blocks = c["blocks"]
    if name == "layernorm":
        x, gamma, beta = args
        assert c["gm_to_ub_bytes"] == x.nbytes + blocks * (gamma.nbytes + beta.nbytes)
    else:
        assert c["gm_to_ub_bytes"] == sum(a.nbytes for a in args)
    if name == "squared_error":
        assert c["ub_to_gm_bytes"] == blocks * 32  # one partial result per block
    else:
        assert c["ub_to_gm_bytes"] == np.asarray(out).nbytes
    assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_copy_in_is_double_buffered(name):
    fn, make = CASES[name]
    args = make()
    _, k = run_sim(fn, *args)
    c = k.last_counters
    row_vectors = 2 if name == "layernorm" else 0
    assert c["copy_in_single_buffered_calls"] == c["blocks"] * row_vectors
    assert c["copy_in_calls"] > c["copy_in_single_buffered_calls"]
    depths = re.findall(r"TQue<QuePosition::VECIN, (\d+)>", k.source)
    assert depths and set(depths) == {"2"}
    inits = re.findall(r"pipe_\.InitBuffer\((\w+Que_), (\d+),", k.source)
    assert inits and all(n == "2" for _, n in inits)


@pytest.mark.parametrize("name", sorted(CASES))
def test_tiles_use_half_the_ub_budget(name):
    fn, make = CASES[name]
    _, k = run_sim(fn, *make())
    assert k.last_counters["ub_peak_bytes"] >= BUDGET // 2
    assert k.last_counters["ub_peak_bytes"] <= BUDGET


def test_blocks_split_work_evenly():
    x = _x(48 * 4096)
    _, k = run_sim(relu, x)
    assert k.last_counters["blocks"] == 48
    assert k.last_counters["gm_to_ub_bytes"] == x.nbytes
