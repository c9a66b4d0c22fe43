"""An array of the trailing axes broadcast over leading ones is a vector kernel.

``x / w`` with ``x`` (N, C, h, w) and ``w`` (h, w) has no vector class of its own (``w``
is not one row repeated over rows); seen as the 2-D space (N * C, h * w) it is a ``row``
value (``vec_collapse``).  The kernels must be vector kernels (no scalar GM access) and
equal numpy's results, static and with run-time shapes (one specialization for every
shape, a plane operand that is 1 wide at run time included).
"""

from __future__ import annotations

import numpy as np
import pytest
from ascendc_kit import check

from pyasc import hybrid

RNG = np.random.default_rng(1907)


def divide(x, w):
    return x / w


def scaled_exp(x, w):
    return np.exp(x) * w + 1.0


def plane_twice(x, w, b):
    return (x - b) * w - w


def _f32(*shape):
    return (RNG.random(shape) + 0.5).astype(np.float32)


CASES = [
    ("divide 4-D by 2-D", divide, [(_f32(2, 3, 5, 7), _f32(5, 7)),
                                   (_f32(3, 4, 9, 33), _f32(9, 33)),
                                   (_f32(1, 2, 3, 5), _f32(3, 1))]),
    ("exp times plane", scaled_exp, [(_f32(2, 3, 5, 7), _f32(1, 5, 7)),
                                     (_f32(5, 2, 11, 13), _f32(1, 11, 13))]),
    ("3-D with two planes", plane_twice, [(_f32(4, 5, 7), _f32(5, 7), _f32(5, 7)),
                                          (_f32(9, 17, 3), _f32(17, 3), _f32(17, 3))]),
]


def _kinds(k) -> list[str]:  # noqa: ANN001
    kinds = {x.name: type(x).__name__ for x in k.ascend.kernels}
    return [kinds[n] for n, _ in k.last_kernels]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name,fn,calls", CASES, ids=[c[0] for c in CASES])
def test_plane_broadcast_is_one_vector_kernel(name, fn, calls, dynamic):
    compiled = hybrid(fn, dynamic_shape=dynamic)
    for args in calls:
        if not dynamic and args[-1].shape[-1] == 1:
            continue  # a (h, 1) plane is the col class already: tested dynamic only
        k = check(compiled, *args)
        assert _kinds(k) == ["VectorKernel"], (name, [a.shape for a in args])
        c = k.last_counters
        assert c["gm_scalar_read_bytes"] == c["gm_scalar_write_bytes"] == 0
        minimum = sum(a.nbytes for a in args) + np.asarray(fn(*args)).nbytes
        assert c["gm_to_ub_bytes"] + c["ub_to_gm_bytes"] <= 1.2 * minimum
    if dynamic:
        assert len(compiled.specializations) == 1
