"""The SoC table: Unified Buffer size, InitBuffer budget, core counts, compiler arch, dtypes.

Every number carries a tag in its comment: ``[V]`` read in public CANN sources or docs
(file named), ``[V3]`` read in third-party material quoting the CANN platform ini files,
``[I]`` inferred (same family, product literature) and unverified.  Nothing here was
measured on hardware.

Sources:

* UB sizes: asc-devkit ``impl/basic_api/utils/kernel_utils_constants.h``:
  ``__NPU_ARCH__ 1001/2002`` (Ascend910, Ascend310P) ``TOTAL_UB_SIZE = 256 KB``,
  ``TOTAL_VEC_LOCAL_SIZE = 248 KB``; ``2201`` (Ascend910B, Ascend910_93) 192 KB / 184 KB;
  ``3002`` (Ascend310B) 248 KB / 184 KB.  ``TOTAL_VEC_LOCAL_SIZE`` is what ``InitBuffer``
  may hand out; the rest is scratch of the APIs that use reserved UB.
* ``--cce-aicore-arch``: asc-devkit asc plugin ``CCE_AICORE_MAP``: Ascend910 ``dav-c100``,
  Ascend310P ``dav-m200-vec`` (vector) / ``dav-m200``, Ascend910B and the Ascend910_93
  list ``dav-c220-vec`` / ``dav-c220-cube``, Ascend310B ``dav-m300``.  The same file's
  ``SOC_VERSION_MAP`` lists the SoC names used below.
* Core counts: ``data/platform_config/<soc>.ini`` ``[SoCInfo]`` as quoted in CANN and
  torchair docs (Ascend910B1/B2: ``ai_core_cnt=24 vector_core_cnt=48``) and third-party
  excerpts (Ascend910B4: 20/40, Ascend310P3: 8/7).
* Cube numbers (``CubeUnit``, dav-c220 only): ``shared/ascendc-cube-reference.md`` section
  1.2 and 2.1, read in asc-devkit: ``kernel_utils_constants.h`` (``TOTAL_L0A_SIZE =
  TOTAL_L0B_SIZE = 64 KB``, ``TOTAL_L0C_SIZE = 128 KB``, ``TOTAL_L1_SIZE = 512 KB - 128``
  under ``__NPU_ARCH__ == 2201``), ``platform_ascendc.cpp`` (``LOCAL_RESERV_SIZE = 256``
  subtracted from L1 for ASCEND910B; ``matmul_tiling_base.cpp`` uses the same
  ``512 KB - 256``) and ``matmul_config_utils.h`` (C0 = 16 b16 / 8 b32 / 32 b8 elements:
  a fractal is 16 x C0 = 512 bytes in L1/L0A/L0B, 16 x 16 fp32/int32 in L0C).  Cube core
  counts: ``ai_core_cnt`` of the platform ini (24 on 910B1/B2 [V3], 20 on 910B4 [V3]).
  Other SoCs have no verified cube facts and keep ``cube = None``: their matmul stays a
  scalar kernel.
* Scalar GM writes (``dcache_flush``): asc-devkit
  ``include/basic_api/kernel_operator_cache_intf.h`` declares
  ``DataCacheCleanAndInvalid<T, CacheLine>(const GlobalTensor<T>&)`` (and a form with
  ``DcciDst``); ``impl/basic_api/kernel_operator_cache_intf_impl.h`` defines the
  ``<T, CacheLine>`` form for ``__NPU_ARCH__`` 2201, 2002 and 3002 and nothing for 1001;
  the API docs (``docs/zh/api/SIMD-API/基础API/缓存控制/DataCacheCleanAndInvalid.md``) list
  the Atlas A2/A3, 200I/500 A2 and inference AI Core as supported (only the form without
  ``DcciDst`` on the latter) and the training series (dav-c100) as not [V]; they also list
  the 310P *Vector Core* as unsupported, while pyasc's 310P kernels name
  ``dav-m200-vec`` [I: unresolved].  dav-c100's own tensor-dump code writes GM by scalar
  stores and never flushes (``dav_c100`` vs ``dav_c220/kernel_operator_dump_tensor_impl.h``),
  so its kernels get no flush [I].
* float64 (``float64``): no public CANN source says an AI Core computes ``double``: the
  vector APIs take no float64 (the dtype tables above; only ``DataCopy`` moves 8-byte
  elements) and the scalar unit's float64 support is undocumented.  No SoC allows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyasc.errors import InvalidOptionError
from pyasc.ir.types import SCALAR_TYPES

KB = 1024
MB = 1024 * KB

# Element types the vector APIs accept on dav-c220 (static_asserts of the dav_c220 impl
# headers, reference section 1.3) [V].  Other archs are assumed to match [I] except where
# a family overrides it (no bf16 on dav-m200 [V3]).
C220_DTYPES: dict[str, frozenset[str]] = {
    "arith": frozenset({"f16", "f32", "i16", "i32"}),      # Add Sub Mul Max Min, *s forms
    "div": frozenset({"f16", "f32"}),                      # Div
    "unary": frozenset({"f16", "f32"}),                    # Exp Ln Abs Sqrt Rsqrt Reciprocal
    "relu": frozenset({"f16", "f32", "i32"}),
    "duplicate": frozenset({"f16", "bf16", "i16", "ui16", "i32", "ui32", "f32"}),
    "compare": frozenset({"f16", "f32"}),                  # int32 only with EQ
    "select": frozenset({"f16", "f32"}),
    "reduce": frozenset({"f16", "f32"}),                   # ReduceSum/Max/Min
    "copy": frozenset({"i8", "ui8", "i16", "ui16", "f16", "bf16", "i32", "ui32", "f32",
                       "i64", "ui64", "f64"}),             # DataCopy, DataCopyPad
    "compare_eq": frozenset({"f16", "f32", "i32"}),        # Compare with CMPMODE::EQ
    # Gather (count form; asc-devkit dav_c220/kernel_operator_vec_gather_impl.h and the
    # Gather doc: A2/A3 take these): the stencil kernels' shifted windows
    "gather": frozenset({"f16", "bf16", "i16", "ui16", "f32", "i32", "ui32"}),
}

# The dtype class (a key of the tables above) of each AscendC API the vector lowering
# emits.  The type checked is the destination's, except for Compare and the reductions:
# their source's (``api_dtype_class`` in ``vec_lower``).  An API missing here is refused.
API_DTYPE_CLASS: dict[str, str] = {
    **dict.fromkeys(("Add", "Sub", "Mul", "Max", "Min", "Adds", "Muls", "Maxs", "Mins"),
                    "arith"),
    "Div": "div",
    **dict.fromkeys(("Exp", "Ln", "Abs", "Sqrt", "Rsqrt", "Reciprocal", "Sigmoid"), "unary"),
    "Relu": "relu",
    "Duplicate": "duplicate",
    "Compare": "compare",
    "Select": "select",
    **dict.fromkeys(("ReduceSum", "ReduceMax", "ReduceMin"), "reduce"),
    "DataCopy": "copy",
    "Gather": "gather",
    "CreateVecIndex": "arith",  # half, int16, float, int32: the arithmetic types
}

_RFCAZ = frozenset({"CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC"})
_ALL_MODES = _RFCAZ | {"CAST_NONE", "CAST_ODD"}

# Cast on dav-c220: (src, dst) -> the RoundModes the pair takes (CheckCastDatatype's pair
# list and the mode switch of each CastIntrinsicsImpl, dav_c220 vconv_impl.h, reference
# section 1.3; the ascend-sim ``sim_cast.h`` encodes the same table) [V].
C220_CASTS: dict[tuple[str, str], frozenset[str]] = {
    ("f16", "f32"): frozenset({"CAST_NONE"}),
    **dict.fromkeys((("f16", "i32"), ("f16", "i16")), _RFCAZ),
    **dict.fromkeys((("f16", "i8"), ("f16", "ui8")), _RFCAZ | {"CAST_NONE"}),
    ("f32", "f16"): _ALL_MODES,
    **dict.fromkeys((("f32", "f32"), ("f32", "i32"), ("f32", "bf16"), ("f32", "i64"),
                     ("f32", "i16")), _RFCAZ),
    ("bf16", "f32"): frozenset({"CAST_NONE"}),
    ("bf16", "i32"): _RFCAZ,
    ("i32", "f32"): _RFCAZ | {"CAST_NONE"},
    **dict.fromkeys((("i32", "i16"), ("i32", "i64")), frozenset({"CAST_NONE"})),
    ("i16", "f16"): _RFCAZ | {"CAST_NONE"},
    ("i16", "f32"): frozenset({"CAST_NONE"}),
    **dict.fromkeys((("i8", "f16"), ("ui8", "f16")), frozenset({"CAST_NONE"})),
    ("i64", "f32"): _RFCAZ,
    ("i64", "i32"): frozenset({"CAST_NONE"}),
}


# Element types an AI Core stores and computes (scalar unit and DMA).  The families
# without bf16 (dav-m200, dav-c100: reference section 1.3 [V3]/[I]) lack it everywhere,
# so a kernel touching bf16 does not fit them, even as scalar code.
ELEMENT_TYPES = frozenset(SCALAR_TYPES) - {"f64"}  # float64: SoC.float64
_NO_BF16_ELEMENTS = ELEMENT_TYPES - {"bf16"}


@dataclass(frozen=True)
class CubeUnit:
    """The cube (matrix) unit of a dav-c220 SoC: its memories, core count and fractals."""

    cores: int                        # AIC cores a cube kernel may launch (block_dim)
    l1_bytes: int = 512 * KB          # physical L1 (16 banks x 32 KB) [V]
    l1_reserved_bytes: int = 256      # platform LOCAL_RESERV_SIZE on 910B [V]
    l0a_bytes: int = 64 * KB          # TOTAL_L0A_SIZE [V]
    l0b_bytes: int = 64 * KB          # TOTAL_L0B_SIZE [V]
    l0c_bytes: int = 128 * KB         # TOTAL_L0C_SIZE [V]
    aicore_arch: str = "dav-c220-cube"  # --cce-aicore-arch of a cube kernel [V]
    # C0: elements of one fractal row (32 bytes) in L1/L0A/L0B, per operand dtype [V];
    # the fractal is 16 x C0 (512 bytes).  L0C fractals are 16 x 16 fp32/int32 [V].
    c0: dict[str, int] = field(default_factory=lambda: {"f16": 16, "bf16": 16, "f32": 8,
                                                        "i8": 32})
    # Operand dtype -> L0C accumulator dtype (Mmad's dtype table on 910B) [V].
    accumulator: dict[str, str] = field(default_factory=lambda: {
        "f16": "f32", "bf16": "f32", "f32": "f32", "i8": "i32"})
    # Peak numbers for cost estimates (``cube_cost``), none measured: the cube does one
    # 16 x 16 x K0 block per cycle, K0 = C0 of the operand dtype (4096 fp16 MACs, 8192
    # int8: platform ini ``cube_m/n/k_size=16`` and ``DtypeMKN DT_INT8=16,32,16`` [V3];
    # 2048 fp32 [I]); ``cube_freq=1800`` MHz of Ascend910B2C's platform ini [V3] (24 x
    # 4096 x 2 x 1.8 GHz = 354 TFLOPS, the published fp16 figure of 910B2 [V3]; other
    # parts assumed equal [I]); HBM 1.6 TB/s (Atlas A2 spec table quoted in CANN docs
    # [V3]).  L2: 192 MB (ini ``l2_size`` [V3]; asc-devkit's matmul_l2cache sample for
    # Atlas A2/A3 [V3]), "pure read bandwidth about three to four times that of the GM"
    # (CANN 8.5 best practices, "Matmul High-level API Enabling L2 Cache Tiling",
    # hiascend.com atlas_ascendc_best_practices_10_10012) [I: an approximate statement;
    # we take the low end, 3x]; ``cube_cost`` credits it only when the kernel's data fits.
    clock_hz: float = 1.8e9
    hbm_bytes_per_s: float = 1.6e12
    l2_bytes: int = 192 * MB
    l2_read_speedup: float = 3.0

    @property
    def l1_usable_bytes(self) -> int:
        """L1 a kernel may use: the physical size less the platform's reserve."""
        return self.l1_bytes - self.l1_reserved_bytes

    def macs_per_cycle(self, dtype: str) -> int:
        """Peak multiply-accumulates per cycle of one cube core on ``dtype`` operands."""
        return 16 * 16 * self.c0[dtype]

    def fractal(self, dtype: str) -> tuple[int, int]:
        """(rows, cols) of one L1/L0A/L0B fractal of ``dtype`` operands."""
        return 16, self.c0[dtype]


@dataclass(frozen=True)
class SoC:
    """One SoC: the numbers the tiling and the compiler driver need."""

    name: str
    family: str              # Ascend910B, Ascend910_93, Ascend310P, Ascend310B, Ascend910
    ub_bytes: int            # TOTAL_UB_SIZE
    init_buffer_bytes: int   # TOTAL_VEC_LOCAL_SIZE: the sum of InitBuffer sizes
    vector_blocks: int       # blocks a vector-only kernel may launch (block_dim bound)
    aicore_arch: str         # --cce-aicore-arch of a vector kernel
    npu_arch: int            # __NPU_ARCH__
    dtypes: dict[str, frozenset[str]]
    casts: dict[tuple[str, str], frozenset[str]] = field(default_factory=lambda: C220_CASTS)
    element_types: frozenset[str] = ELEMENT_TYPES
    cube: CubeUnit | None = None   # None: no verified cube facts, matmul stays scalar
    # The DataCacheCleanAndInvalid template arguments after T that make a block's scalar
    # GM writes visible (None: the arch declares no such API; see the module docstring).
    dcache_flush: str | None = "CacheLine::ENTIRE_DATA_CACHE"
    float64: bool = False    # double in device code (no SoC: module docstring)

    @property
    def reserved_ub_bytes(self) -> int:
        """UB above the InitBuffer budget (API scratch, e.g. Select's reserved buffer)."""
        return self.ub_bytes - self.init_buffer_bytes

    def supports(self, api: str, dtype: str) -> bool:
        """Whether the vector API class ``api`` takes element type ``dtype`` here."""
        return dtype in self.dtypes.get(api, frozenset())

    def has_element(self, dtype: str) -> bool:
        """Whether kernels on this SoC may hold ``dtype`` values at all."""
        return dtype in self.element_types or dtype == "f64" and self.float64

    def supports_cast(self, src: str, dst: str, mode: str) -> bool:
        """Whether ``Cast`` converts ``src`` to ``dst`` elements with ``RoundMode::mode``."""
        return mode in self.casts.get((src, dst), frozenset())


def _no_bf16(table: dict[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    return {k: v - {"bf16"} for k, v in table.items()}


_NO_BF16_CASTS = {pair: modes for pair, modes in C220_CASTS.items() if "bf16" not in pair}


def _c220(name: str, family: str, vector_blocks: int) -> SoC:
    # One AIC per two AIVs on every dav-c220 part (a 1:2 MIX launch) [V].
    return SoC(name, family, 192 * KB, 184 * KB, vector_blocks, "dav-c220-vec", 2201,
               C220_DTYPES, cube=CubeUnit(cores=vector_blocks // 2))


SOCS: dict[str, SoC] = {s.name: s for s in (
    # Ascend910B: 24 AIC + 48 AIV on B1/B2 [V3]; B4 20 + 40 [V3]; B3 20 + 40 [I].
    _c220("Ascend910B1", "Ascend910B", 48),
    _c220("Ascend910B2", "Ascend910B", 48),
    _c220("Ascend910B3", "Ascend910B", 40),
    _c220("Ascend910B4", "Ascend910B", 40),
    # Ascend910_93 (Atlas A3): dav-c220 like 910B [V]; 24 + 48 per die on 9391/9392/9381/
    # 9382 [I], 20 + 40 on 9372/9362 [I].
    _c220("Ascend910_9391", "Ascend910_93", 48),
    _c220("Ascend910_9392", "Ascend910_93", 48),
    _c220("Ascend910_9381", "Ascend910_93", 48),
    _c220("Ascend910_9382", "Ascend910_93", 48),
    _c220("Ascend910_9372", "Ascend910_93", 40),
    _c220("Ascend910_9362", "Ascend910_93", 40),
    # Ascend310P: 256 KB UB / 248 KB budget [V]; vector kernels run on the 8 AI cores of
    # a 310P3 (ai_core_cnt=8 [V3]); 310P1 assumed 10 [I]; no bf16 [V3].
    SoC("Ascend310P1", "Ascend310P", 256 * KB, 248 * KB, 10, "dav-m200-vec", 2002,
        _no_bf16(C220_DTYPES), _NO_BF16_CASTS, _NO_BF16_ELEMENTS),
    SoC("Ascend310P3", "Ascend310P", 256 * KB, 248 * KB, 8, "dav-m200-vec", 2002,
        _no_bf16(C220_DTYPES), _NO_BF16_CASTS, _NO_BF16_ELEMENTS),
    # Ascend310B: 248 KB UB, 184 KB InitBuffer budget [V]; one AI core [I].
    SoC("Ascend310B1", "Ascend310B", 248 * KB, 184 * KB, 1, "dav-m300", 3002, C220_DTYPES),
    SoC("Ascend310B4", "Ascend310B", 248 * KB, 184 * KB, 1, "dav-m300", 3002, C220_DTYPES),
    # Ascend910 (first generation): 256 KB / 248 KB [V]; 32 AI cores on 910A, 30 on the
    # "Ascend910B" first-generation part [I]; no bf16 [I].
    SoC("Ascend910A", "Ascend910", 256 * KB, 248 * KB, 32, "dav-c100", 1001,
        _no_bf16(C220_DTYPES), _NO_BF16_CASTS, _NO_BF16_ELEMENTS, dcache_flush=None),
    SoC("Ascend910ProB", "Ascend910", 256 * KB, 248 * KB, 30, "dav-c100", 1001,
        _no_bf16(C220_DTYPES), _NO_BF16_CASTS, _NO_BF16_ELEMENTS, dcache_flush=None),
)}

DEFAULT_SOC = "Ascend910B1"

# ``device_type=[...]`` names of the decorator -> the SoC compiled for.  "Ascend910B" in
# the decorator means the 910B family (the first-generation part of the same name is
# reachable as "Ascend910ProB").
ALIASES: dict[str, str] = {
    "Ascend910": "Ascend910A",
    "Ascend910B": "Ascend910B1",
    "Ascend910_93": "Ascend910_9391",
    "Ascend310": "Ascend310P3",
    "Ascend310P": "Ascend310P3",
    "Ascend310B": "Ascend310B1",
}


def get_soc(name: str | None = None) -> SoC:
    """The SoC called ``name`` (a table name or a family alias); the default is 910B1."""
    key = ALIASES.get(name or DEFAULT_SOC, name or DEFAULT_SOC)
    try:
        return SOCS[key]
    except KeyError:
        known = ", ".join(sorted(set(SOCS) | set(ALIASES)))
        raise InvalidOptionError(f"unknown SoC {name!r}", hint=f"known SoCs: {known}") from None


def socs_for(device_type: tuple[str, ...] | list[str] | None) -> list[SoC]:
    """The SoCs a ``device_type`` option asks for (the default SoC when it is ``None``)."""
    if not device_type:
        return [get_soc()]
    seen: dict[str, SoC] = {}
    for name in device_type:
        soc = get_soc(name)
        seen.setdefault(soc.name, soc)
    return list(seen.values())
