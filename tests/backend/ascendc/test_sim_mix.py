"""ascend-sim's model of MIX kernels: the cross-core flag checks fire on generated
sources edited to break the hand-off (as the cube sync negative tests do)."""

from __future__ import annotations

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc.emit_cube import param_values
from pyasc.backend.ascendc.mix_plan import MixKernel


def _bias_relu(a, b, bias):
    return np.maximum(a @ b + bias, 0) * 0.5


# 1300 x 1300: more blocks than cube cores, so the workspace slots are reused
M = N = 1300
ARGS = (np.ones((M, 16), np.float16), np.ones((16, N), np.float16), np.ones((N,), np.float16))

AIV_WAIT = "CrossCoreWaitFlag<2, PIPE_MTE2>(0 + slot);"
AIC_WAIT = "if (tile >= 2) CrossCoreWaitFlag<2, PIPE_FIX>(2 + slot);"
AIC_SET = "CrossCoreSetFlag<2, PIPE_FIX>(0 + slot);"

BROKEN = [
    # a vector core reads the workspace before the cube core's flag
    (AIV_WAIT, "", "DataCopyPad", "reads GM that the cube core wrote"),
    # the cube core overwrites a slot the vector cores have not released
    (AIC_WAIT, "", "Fixpipe", "overwrites GM bytes"),
    # a flag id out of range
    (AIC_SET, "CrossCoreSetFlag<2, PIPE_FIX>(16 + slot);", "CrossCoreSetFlag",
     "flag id 16 is not in 0..15"),
    # a wait nobody ever satisfies: a deadlock, not a hang
    (AIV_WAIT, "CrossCoreWaitFlag<2, PIPE_MTE2>(5 + slot);", "CrossCoreWaitFlag", "deadlock"),
    # mode 0 is not what pairs a cube core with its vector cores
    (AIC_SET, "CrossCoreSetFlag<0, PIPE_FIX>(0 + slot);", "CrossCoreSetFlag", "mode 0"),
]


def _run(source: str, ap, k: MixKernel) -> None:
    from pyasc.backend.ascendc.sim import compile_kernels
    from pyasc.backend.ascendc.sim_backend import sim_config

    lib = compile_kernels(source, [k.name], filename=ap.filename, config=sim_config(ap.soc),
                          cores={k.name: "mix"})
    a, b, bias = ARGS
    out = np.zeros((M, N), np.float16)
    ws = np.zeros(k.workspace_elems, np.float16)
    lib.launch(k.name, k.block_dim, a, b, bias, out, ws, *param_values(k.cube))
    return out


def _kernel():
    ap = hybrid(_bias_relu, target="ascend-sim").kernel(*ARGS).ascend
    (k,) = ap.kernels
    assert isinstance(k, MixKernel)
    assert -(-M // k.cube.tile.base_m) * -(-N // k.cube.tile.base_n) > 2 * k.block_dim
    return ap, k


def test_the_generated_mix_kernel_runs_clean_when_launched_directly():
    ap, k = _kernel()
    out = _run(ap.source, ap, k)
    np.testing.assert_array_equal(out, np.full((M, N), 8.5, np.float16))


@pytest.mark.parametrize(("line", "new", "api", "words"), BROKEN)
def test_broken_hand_off_is_a_violation(line, new, api, words):
    from pyasc.backend.ascendc.sim import SimViolationError

    ap, k = _kernel()
    assert line in ap.source
    with pytest.raises(SimViolationError) as err:
        _run(ap.source.replace(line, new), ap, k)
    assert err.value.api == api, str(err.value)
    assert words in err.value.detail, str(err.value)
    assert err.value.line > 0


def _kernel_dynamic():
    ap = hybrid(_bias_relu, target="ascend-sim", dynamic_shape=True).kernel(*ARGS).ascend
    k = ap.kernels[0]
    assert isinstance(k, MixKernel) and k.dynamic
    return ap, k


def _run_dynamic(source: str, ap) -> np.ndarray:
    """The dynamic MIX kernel launched with the arguments its host computes for ARGS."""
    from pyasc.backend.ascendc.sim import compile_kernels
    from pyasc.backend.ascendc.sim_backend import sim_config

    k = ap.kernels[0]
    lib = compile_kernels(source, list(ap.kernel_names), filename=ap.filename,
                          config=sim_config(ap.soc),
                          cores={n: c for n, c in ap.cores.items() if c != "vector"})
    a, b, bias = ARGS
    out = np.zeros((M, N), np.float16)
    blocks = -(-M // 128), -(-N // 128)
    block_dim = min(blocks[0] * blocks[1], ap.soc.cube.cores)
    ws = np.zeros(block_dim * k.slot_elems, np.float16)
    lib.launch(k.name, block_dim, a, b, bias, out, ws, M, N, 16, 128, 128, *blocks)
    return out


def test_the_dynamic_mix_kernel_runs_clean_and_its_broken_hand_off_is_caught():
    """The kernel of run-time shapes (sizes as arguments) has the same hand-off, and
    the sim checks it the same way."""
    from pyasc.backend.ascendc.sim import SimViolationError

    ap, _ = _kernel_dynamic()
    np.testing.assert_array_equal(_run_dynamic(ap.source, ap), np.full((M, N), 8.5, np.float16))
    for line, new, api, words in BROKEN[:2]:
        assert line in ap.source
        with pytest.raises(SimViolationError) as err:
            _run_dynamic(ap.source.replace(line, new), ap)
        assert err.value.api == api and words in err.value.detail, str(err.value)


def test_a_flag_left_counted_at_the_end_is_reported():
    """Without the cube core's final waits, the vector cores' last releases stay counted."""
    from pyasc.backend.ascendc.sim import SimViolationError

    ap, k = _kernel()
    drain = [x for x in ap.source.splitlines() if "for (int32_t t = tile > 2" in x]
    assert len(drain) == 1
    with pytest.raises(SimViolationError) as err:
        _run(ap.source.replace(drain[0], ""), ap, k)
    assert err.value.api == "CrossCoreSetFlag" and "never waited" in err.value.detail
