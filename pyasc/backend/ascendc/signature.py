"""The C signatures of the generated kernels, as AscendCL argument packing needs them.

:func:`kernel_signatures` reads each ``extern "C" __global__ __aicore__ void name(...)``
line of the generated source (exactly what bisheng compiles) and gives its parameter
kinds in the codes of ``sim/sim_launch.h``: ``ptr`` for ``GM_ADDR`` (any pointer),
``i8``..``u64``, ``f16``, ``bf16``, ``f32``, ``f64``, ``bool`` for by-value scalars.
"""

from __future__ import annotations

import re

from pyasc.errors import InternalCompilerError

_KERNEL = re.compile(r'^extern "C" __global__ __aicore__ void (\w+)\(([^)]*)\)', re.MULTILINE)

SCALAR_CODES: dict[str, str] = {
    "bool": "bool", "half": "f16", "bfloat16_t": "bf16", "float": "f32", "double": "f64",
    "int8_t": "i8", "int16_t": "i16", "int32_t": "i32", "int64_t": "i64",
    "uint8_t": "u8", "uint16_t": "u16", "uint32_t": "u32", "uint64_t": "u64",
}
"""C spelling of a by-value parameter type -> its signature code."""


def _code(param: str, kernel: str) -> str:
    words = param.replace("*", " * ").split()
    if "GM_ADDR" in words or "*" in words:
        return "ptr"
    type_words = [w for w in words[:-1] if w not in ("const", "__gm__")]
    code = SCALAR_CODES.get(" ".join(type_words))
    if code is None:
        raise InternalCompilerError(f"kernel {kernel}: parameter '{param}' has a type the "
                                    "AscendCL argument packer does not know")
    return code


def kernel_signatures(source: str) -> dict[str, tuple[str, ...]]:
    """``{kernel name: parameter codes}`` of every kernel defined in ``source``."""
    out: dict[str, tuple[str, ...]] = {}
    for m in _KERNEL.finditer(source):
        params = [p.strip() for p in m.group(2).split(",") if p.strip()]
        out[m.group(1)] = tuple(_code(p, m.group(1)) for p in params)
    return out
