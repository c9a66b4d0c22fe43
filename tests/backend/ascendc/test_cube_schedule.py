"""The cube kernels' tile schedule: the GM traffic against the least a schedule with the
SoC's L1 and L0C can reach (``cube_cost.schedule_bound_read_bytes``), the issue's
4096^3 float16 target on Ascend910B1, and the larger blocks running right in ascend-sim."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc import PyascPerformanceWarning
from pyasc.backend.ascendc.cube_cost import cube_cost, schedule_bound_read_bytes
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.soc import get_soc

SOC = get_soc("Ascend910B1")
MIB = 2**20


def _mm(a, b):
    return a @ b


def _plan(sa: tuple, sb: tuple, dtype=np.float16) -> CubeKernel:
    a, b = np.zeros(sa, dtype), np.zeros(sb, dtype)
    (k,) = [x for x in hybrid(_mm, target="ascend-sim").kernel(a, b).ascend.kernels
            if isinstance(x, CubeKernel)]
    return k


def test_4096_cubed_float16_reads_within_a_quarter_of_the_schedule_bound():
    k = _plan((4096, 4096), (4096, 4096))
    cost, bound = cube_cost(k, SOC), schedule_bound_read_bytes(k, SOC)
    # (i) of the bound: a 181 x 181 block of fp32 accumulators fills L0C (a * b <= 32768)
    assert bound == pytest.approx(4096**3 * 2 * 2 / 181, rel=1e-3)
    assert cost.gm_read_bytes <= 1.25 * bound
    assert cost.gm_read_bytes == 1536 * MIB   # 128 x 256 blocks: K * M * N * (1/128 + 1/256)
    assert k.block_dim == SOC.cube.cores      # every cube core busy
    busiest = -(-k.units // k.block_dim) * k.single_m * k.single_n
    assert busiest <= 1.05 * 4096 * 4096 / SOC.cube.cores


def test_4096_cubed_float16_estimate_with_the_l2_credit_is_within_1_3x_of_peak():
    k = _plan((4096, 4096), (4096, 4096))
    cost = cube_cost(k, SOC)
    assert cost.estimate_s / cost.peak_s > 2.5        # no L2 credit: memory-bound
    # compulsory 64 MiB + 32 MiB of C at HBM bandwidth, then 1472 MiB of re-reads at 3x
    hbm = SOC.cube.hbm_bytes_per_s
    want = 96 * MIB / hbm + 1472 * MIB / (3 * hbm)
    assert cost.l2_memory_s == pytest.approx(want)
    assert cost.bound_l2 == "compute"
    assert cost.estimate_l2_s / cost.peak_s <= 1.3   # issue 14's time target


def test_no_l2_credit_for_data_larger_than_l2():
    # 8192 x 8192 x 4096 float16: operands 64 + 64 MiB, C 128 MiB > 192 MB
    k = _plan((8192, 4096), (4096, 8192))
    cost = cube_cost(k, SOC)
    assert cost.min_read_bytes + cost.gm_write_bytes > SOC.cube.l2_bytes
    assert cost.l2_memory_s == cost.memory_s


@pytest.mark.parametrize(("sa", "sb"), [((17, 33), (33, 20)), ((1, 64), (64, 4096)),
                                        ((100, 64), (64, 130))])
def test_bound_is_the_compulsory_minimum_when_everything_fits(sa, sb):
    k = _plan(sa, sb)
    cost = cube_cost(k, SOC)
    assert schedule_bound_read_bytes(k, SOC) == cost.min_read_bytes


def test_bound_never_exceeds_what_the_kernel_reads():
    for sa, sb in [((4096, 4096), (4096, 4096)), ((512, 512), (512, 512)),
                   ((8, 1024, 64), (8, 64, 1024)), ((1, 4096), (4096, 4096)),
                   ((3000, 200), (200, 5000))]:
        k = _plan(sa, sb)
        assert schedule_bound_read_bytes(k, SOC) <= cube_cost(k, SOC).gm_read_bytes, (sa, sb)


def test_block_shape_follows_the_model():
    """Large M and N take a block filling L0C (one buffer); a C of at most one 128 x 128
    block keeps two L0C buffers (FIX drains one while M fills the other)."""
    big, small = _plan((1024, 512), (512, 1024)), _plan((8, 128, 64), (8, 64, 128))
    assert (big.tile.base_m * big.tile.base_n, big.tile.c_bufs) == (128 * 256, 1)
    assert (small.tile.base_m, small.tile.base_n, small.tile.c_bufs) == (128, 128, 2)


def _at_b(a, b):
    return a.T @ b


def _widened(a, b):
    return a.astype(np.int32) @ b.astype(np.int32)


# (form, A shape, B shape, dtype, block): tails on M, N and K of every block shape
LARGE = [
    (_mm, (1000, 100), (100, 1000), np.float16, (128, 256)),
    (_mm, (600, 100), (100, 1400), np.float32, (128, 256)),       # float32: baseK 32
    (_mm, (3, 700, 70), (3, 70, 513), np.float16, (256, 128)),
    (_at_b, (100, 1000), (100, 700), np.float16, (256, 128)),     # A^T: LoadData transposes
    (_widened, (1000, 150), (150, 1000), np.int8, (128, 256)),    # int8: baseK 128
]


@pytest.mark.parametrize(("form", "sa", "sb", "dtype", "block"), LARGE)
def test_large_blocks_match_interpret(form, sa, sb, dtype, block):
    rng = np.random.default_rng(sum(sa) + sum(sb))
    if dtype == np.int8:
        a, b = rng.integers(-128, 128, sa, dtype), rng.integers(-128, 128, sb, dtype)
    else:
        a, b = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
    sim = hybrid(form, target="ascend-sim")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PyascPerformanceWarning)
        got = sim(a, b)
    want = hybrid(form, target="interpret")(a, b)
    if dtype == np.int8:
        assert np.array_equal(got, want)
    else:
        scale = form(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
        tol = 2e-3 if dtype == np.float16 else 1e-5
        assert np.all(np.abs(got.astype(np.float64) - want) <= tol * (scale + 1))
    kernel = sim.kernel(a, b)
    # a b32 B (K x N): B^T by a transpose kernel (int8: no Gather for b8, the host's)
    k, *xposes = kernel.ascend.kernels
    device = k.host_trans_b and k.dtype.name != "i8"
    assert [type(x).__name__ for x in xposes] == ["TransposeKernel"] * device
    assert ((k.tile.base_m, k.tile.base_n), k.tile.c_bufs) == (block, 1)
    counters, cost = kernel.last_counters, cube_cost(k, SOC)
    assert (counters["gm_to_l1_bytes"], counters["cube_macs"]) == (cost.gm_read_bytes, cost.macs)
    for mem in ("l0a", "l0b"):
        assert counters[f"{mem}_peak_bytes"] <= 64 * 1024


def test_streamed_large_blocks_match_interpret(monkeypatch):
    """128 x 256 blocks with A and B streamed (ping-pong only), as large K gets them."""
    from pyasc.backend.ascendc import cube_plan
    monkeypatch.setattr(cube_plan, "with_residency", lambda tile, split, *rest: split)
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((700, 300)).astype(np.float16), \
        rng.standard_normal((300, 1100)).astype(np.float16)
    sim = hybrid(_mm, target="ascend-sim")
    got, want = sim(a, b), hybrid(_mm, target="interpret")(a, b)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(got.astype(np.float64) - want) <= 2e-3 * (scale + 1))
    kernel = sim.kernel(a, b)
    (k,) = kernel.ascend.kernels
    assert (k.a_resident, k.b_resident, k.tile.c_bufs) == (False, False, 1)
    assert kernel.last_counters["gm_to_l1_bytes"] == cube_cost(k, SOC).gm_read_bytes


# (A, B, residency): K <= baseK (one K step), so the ping-pong flags alone do not order
# a panel's overwrite after its last read; more units than cores, so B panels are reused
RESIDENT = [((30, 300, 40), (30, 40, 600), (True, True)),
            ((30, 600, 40), (30, 40, 200), (False, True)),
            ((1000, 100), (100, 1000), (True, True))]


@pytest.mark.parametrize(("sa", "sb", "resident"), RESIDENT)
def test_l1_resident_panels_match_interpret_and_read_once(sa, sb, resident):
    rng = np.random.default_rng(sum(sa) * 7 + sum(sb))
    a, b = rng.standard_normal(sa).astype(np.float16), rng.standard_normal(sb).astype(np.float16)
    sim = hybrid(_mm, target="ascend-sim")
    got, want = sim(a, b), hybrid(_mm, target="interpret")(a, b)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(got.astype(np.float64) - want) <= 2e-3 * (scale + 1))
    kernel = sim.kernel(a, b)
    (k,) = kernel.ascend.kernels
    assert (k.a_resident, k.b_resident) == resident
    counters, cost = kernel.last_counters, cube_cost(k, SOC)
    assert counters["gm_to_l1_bytes"] == cost.gm_read_bytes
    assert counters["l1_peak_bytes"] <= SOC.cube.l1_usable_bytes
    # each unit reads its A rows and B columns once (A per N block without a_resident)
    m, n, kk = k.m, k.n, k.k
    a_reads = m * (k.n_blocks if k.a_resident else k.tile.tiles(m, n)[1])
    assert cost.gm_read_bytes == k.batch * (a_reads + n * k.m_blocks) * kk * 2


# (A, B, flag whose every SetFlag/WaitFlag is removed, the call that then races, words)
UNORDERED = [
    (RESIDENT[0][0], RESIDENT[0][1], "<HardEvent::MTE1_MTE2>(2);", "DataCopy(Nd2Nz)",
     "overwrites L1"),
    (RESIDENT[1][0], RESIDENT[1][1], "<HardEvent::MTE1_MTE2>(3);", "DataCopy(Nd2Nz)",
     "overwrites L1"),
    # one L0C buffer: the next block's first Mmad overwrites what Fixpipe reads
    (RESIDENT[0][0], RESIDENT[0][1], "<HardEvent::FIX_M>(", "Mmad", "overwrites L0C"),
]


@pytest.mark.parametrize(("sa", "sb", "flag", "api", "words"), UNORDERED)
def test_the_flags_of_the_new_schedule_are_what_orders_it(sa, sb, flag, api, words):
    """Without the MTE1_MTE2 flag of a resident panel (id 2: A, id 3: B), the next
    panel's GM -> L1 copy overwrites L1 that LoadData of the previous block read;
    without FIX_M, a single L0C buffer is overwritten under Fixpipe; the sim's
    pipe-order check names the racing call."""
    from pyasc.backend.ascendc.emit_cube import param_values
    from pyasc.backend.ascendc.sim import SimViolationError, compile_kernels
    from pyasc.backend.ascendc.sim_backend import sim_config

    a, b = np.ones(sa, np.float16), np.ones(sb, np.float16)
    ap = hybrid(_mm, target="ascend-sim").kernel(a, b).ascend
    (k,) = ap.kernels
    assert k.tile.c_bufs == 1 and flag in ap.source
    source = "\n".join(x for x in ap.source.splitlines() if flag not in x)
    lib = compile_kernels(source, [k.name], filename=ap.filename, config=sim_config(ap.soc),
                          cores={k.name: "cube"})
    c = np.zeros(np.matmul(a, b).shape, np.float16)
    with pytest.raises(SimViolationError) as err:
        lib.launch(k.name, k.block_dim, a, b, c, *param_values(k))
    assert err.value.api == api, str(err.value)
    assert words in err.value.detail and "with no SetFlag/WaitFlag" in err.value.detail


ODD = [1, 17, 33, 130, 1000]


@pytest.mark.parametrize(("m", "n", "k"), [(1000, 33, 1000), (33, 1000, 130), (1, 1000, 1000),
                                           (1000, 1000, 33), (130, 1000, 1000), (1000, 1, 17),
                                           (17, 130, 1000), (1000, 130, 1)])
def test_odd_sizes_under_every_plan_match_interpret(m, n, k):
    """M, N and K of 1, 17, 33, 130 and 1000, whatever block, split and residency the
    model takes for them."""
    assert {m, n, k} <= set(ODD)
    rng = np.random.default_rng(m + 7 * n + 31 * k)
    a, b = rng.standard_normal((m, k)).astype(np.float16), \
        rng.standard_normal((k, n)).astype(np.float16)
    sim = hybrid(_mm, target="ascend-sim")
    got, want = sim(a, b), hybrid(_mm, target="interpret")(a, b)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(got.astype(np.float64) - want) <= 2e-3 * (scale + 1))
    kernel = sim.kernel(a, b)
    (kc,) = kernel.ascend.kernels
    assert kernel.last_counters["gm_to_l1_bytes"] == cube_cost(kc, SOC).gm_read_bytes
