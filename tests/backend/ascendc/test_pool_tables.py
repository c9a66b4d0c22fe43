"""The pool kernel's window tables and input copies on ascend-sim (issue 19).

The kernel reads its window tables (``[start, end)`` of the windows of every output row
and column) from UB, brought in by ``DataCopyPad`` at most ``TAB_CAP`` windows at a
time: no scalar ``GetValue`` of GM (a slow access on the device), whatever the output's
size.  Checked on tables longer than one tile (more output rows per block, and more
output columns, than ``TAB_CAP``), and that a copy of input rows made in the middle of
a window starts at the next window's first row (the rows the two share are read once,
not a whole copy twice).  Every result equals ``target="interpret"`` bit for bit (max).
"""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc.pool_kernel import TAB_CAP, PoolKernel

RNG = np.random.default_rng(1919)


def windows(x, k, s, kc, sc):
    """Max over windows ``k`` rows tall moving ``s`` rows, ``kc`` columns wide moving
    ``sc`` columns."""
    h, w = x.shape[-2:]
    oh, ow = (h - k) // s + 1, (w - kc) // sc + 1
    out = np.zeros(x.shape[:-2] + (oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[..., i, j] = x[..., i * s:i * s + k, j * sc:j * sc + kc].max(axis=(-2, -1))
    return out


@pytest.fixture(scope="module")
def sim():
    return hybrid(windows, target="ascend-sim", dynamic_shape=True)


def _run(sim, shape, *args):
    """The kernel's counters after one call, checked equal to interpret, as the pool
    kernel alone with no scalar GM read; and the minimum GM bytes."""
    x = RNG.standard_normal(shape).astype(np.float32)
    got = sim(x, *args)
    np.testing.assert_array_equal(got, hybrid(windows, target="interpret")(x, *args))
    k = sim.kernel(x, *args)
    kinds = {kk.name: type(kk) for kk in k.ascend.kernels}
    assert [kinds[n] for n, _ in k.last_kernels] == [PoolKernel], k.last_kernels
    c = k.last_counters
    assert c["gm_scalar_read_bytes"] == 0 and c["gm_scalar_write_bytes"] == 0, c
    return c, x.nbytes + got.nbytes


def test_window_tables_longer_than_a_ub_tile(sim):
    """50 planes of TAB_CAP + 90 output rows (more planes than any SoC's vector cores):
    the blocks' units run past a tile inside a plane (the rows they read ahead stop at
    its end) and into the next plane (the tile from row 0 serves it again); then
    2 * TAB_CAP + 76 output columns, three tiles of column windows."""
    rows = TAB_CAP + 90
    c, minimum = _run(sim, (50, rows + 2, 5), 3, 1, 5, 5)
    tables = 8 * 3 * rows * c["blocks"]  # at most 3 planes' row windows (int32 pairs)
    assert c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] <= 1.01 * minimum + tables, c
    c, minimum = _run(sim, (1, 3, 2 * TAB_CAP + 77), 2, 1, 2, 1)
    assert c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] <= 1.01 * minimum + \
        8 * (2 * TAB_CAP + 76 + 2) * c["blocks"], c


def test_rows_two_windows_share_are_copied_once(sim):
    """Rows of 1,000 floats: a block's windows need more rows than one copy holds (25),
    so copies start in the middle of a window.  Reading from the next window's first
    row, the input is read about once (plus k - 1 rows per copy: within 1.15x); it was
    1.58x when every such copy was read again for the next window."""
    c, minimum = _run(sim, (1, 2400, 1000), 3, 1, 100, 100)
    assert c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] <= 1.15 * minimum, c
    assert len(sim.specializations) == 1  # one compilation for the module
