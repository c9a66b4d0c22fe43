"""The seed's multi-device advice (section 7): one operator declared for two SoCs.

``device_type=['Ascend310', 'Ascend910']`` names the SoCs the AscendC code is generated
and checked for; ``fn.ascendc(x, soc=...)`` gives each SoC's kernel source (the first
listed is the default).  The same function runs on the CPU (or ``ascend-sim``) here,
checked against numpy.
"""

import numpy as np

from pyasc import hybrid


@hybrid(device_type=['Ascend310', 'Ascend910'])
def cross_device_op(x):
    # 实现兼容不同设备的逻辑 (logic that suits every device): elementwise math only
    return np.where(x > 0, x, 0.1 * x) * 2.0


def check(n=1000):
    """The per-SoC AscendC and the run; returns the lines to print."""
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    np.testing.assert_allclose(cross_device_op(x), np.where(x > 0, x, 0.1 * x) * 2.0,
                               rtol=1e-6)
    lines = [f"cross_device_op: {n} float32 values, equal to numpy"]
    for soc in cross_device_op.options.device_type:
        source = cross_device_op.ascendc(x, soc=soc)
        assert "__aicore__" in source
        header = source.splitlines()[0].split(" for ", 1)[1].split(")")[0] + ")"
        lines.append(f"cross_device_op: AscendC for {soc}: {len(source.splitlines())} "
                     f"lines, generated for {header}")
    return lines


def _inputs(rng, size):
    n = {"small": 1 << 12, "default": 1 << 22}[size]
    return (rng.standard_normal(n).astype(np.float32),)


DEMO_CASES = [{"name": "cross_device_op", "fn": cross_device_op, "inputs": _inputs,
               "rtol": 1e-6}]

if __name__ == "__main__":
    print("\n".join(check()))
