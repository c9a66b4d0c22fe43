"""AscendC text of a cube kernel (``cube_plan.CubeKernel``): a basic-API matmul.

Every block owns a ``singleCoreM x singleCoreN`` part of C and walks its 128 x 128 base
tiles; each tile runs a K loop of ``baseK`` steps accumulating in L0C.  L1 (A1/B1) and
L0A/L0B hold two buffers each and L0C two tiles, so MTE2 loads step k+1 while M computes
step k and FIX drains one tile while M fills the other.  The cube core gets no automatic
synchronisation, so every hand-off is an explicit flag (reference section 7):

* forward (RAW): ``MTE2_MTE1`` after the GM->L1 copies, ``MTE1_M`` after the L1->L0
  loads, ``M_FIX`` before ``Fixpipe``;
* backward (WAR), pre-armed before the loops and drained after them: ``MTE1_MTE2`` (L1
  buffer free), ``M_MTE1`` (L0A/L0B buffer free), ``FIX_M`` (L0C buffer free);
* ``PipeBarrier<PIPE_M>`` between accumulating Mmads on tiles of fewer than 10 fractals.

Tails: ``Nd2NzParams`` copies the real rows and columns (zero-filling the 32-byte column
padding), ``Mmad`` gets the real m/n/k, ``Fixpipe`` writes the real m x n.  A tile of one
row is a GEMV (``Mmad`` reads L0A as an ND row): its A copy uses ``dstNzC0Stride = 1``,
which lays the row out as ND, and one contiguous ``LoadData``.
"""

from __future__ import annotations

from pyasc.backend.ascendc.cube_plan import BASE_MN, CubeKernel
from pyasc.backend.ascendc.cwriter import CWriter

PARAMS = ("M", "N", "K", "singleCoreM", "singleCoreN", "mBlocks")
"""The kernel's scalar parameters after ``a, b, c`` (int32), computed by the host."""

_BACKWARD = ("MTE1_MTE2", "M_MTE1", "FIX_M")


class CubeEmitter:
    """Writes one cube kernel."""

    def __init__(self, w: CWriter, k: CubeKernel) -> None:
        self.w, self.k = w, k

    def emit(self) -> None:
        """The kernel's definition."""
        k, w = self.k, self.w
        sig = ", ".join(["GM_ADDR a", "GM_ADDR b", "GM_ADDR c"] + [f"int32_t {p}" for p in PARAMS])
        b_shape = "B^T (N x K)" if k.b_transposed else "B (K x N)"
        w.raw(f"// {k.name}: C (M x N) = A (M x K) @ {b_shape} on the cube unit, "
              f"{k.ctype} -> {k.acc} in L0C -> {k.ctype}")
        w.raw(f'extern "C" __global__ __aicore__ void {k.name}({sig})')
        w.raw("{")
        w.depth += 1
        self._prologue()
        for event in _BACKWARD:
            for i in (0, 1):
                w.line(f"SetFlag<HardEvent::{event}>({i});", k.loc)
        with w.block("for (int32_t mt = m0; mt < mEnd; mt += baseM)"):
            w.line("const int32_t curM = mEnd - mt < baseM ? mEnd - mt : baseM;")
            with w.block("for (int32_t nt = n0; nt < nEnd; nt += baseN)"):
                self._tile()
        for event in _BACKWARD:
            for i in (0, 1):
                w.line(f"WaitFlag<HardEvent::{event}>({i});", k.loc)
        w.depth -= 1
        w.raw("}")
        w.raw("")

    def _prologue(self) -> None:
        k, w = self.k, self.w
        t = k.ctype
        w.line("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);")
        w.line("InitSocState();", k.loc)
        w.line(f"constexpr int32_t baseM = {BASE_MN}, baseN = {BASE_MN}, baseK = {k.base_k}, "
               f"c0 = {k.c0};")
        w.line("const int32_t mIdx = GetBlockIdx() % mBlocks, nIdx = GetBlockIdx() / mBlocks;",
               k.loc)
        w.line("const int32_t m0 = mIdx * singleCoreM, n0 = nIdx * singleCoreN;")
        w.line("const int32_t mEnd = M < m0 + singleCoreM ? M : m0 + singleCoreM;")
        w.line("const int32_t nEnd = N < n0 + singleCoreN ? N : n0 + singleCoreN;")
        w.line(f"GlobalTensor<{t}> aGM, bGM, cGM;")
        for name, size in (("a", "M * K"), ("b", "K * N"), ("c", "M * N")):
            w.line(f"{name}GM.SetGlobalBuffer((__gm__ {t}*){name}, (uint64_t){size});", k.loc)
        tile = "baseM * baseK"
        # L1: A ping, A pong, B ping, B pong; L0A/L0B/L0C: ping, pong.
        w.line(f"LocalTensor<{t}> a1[2] = {{LocalTensor<{t}>(TPosition::A1, 0, {tile}), "
               f"LocalTensor<{t}>(TPosition::A1, {tile} * sizeof({t}), {tile})}};", k.loc)
        w.line(f"LocalTensor<{t}> b1[2] = {{LocalTensor<{t}>(TPosition::B1, 2 * {tile} * "
               f"sizeof({t}), {tile}), LocalTensor<{t}>(TPosition::B1, 3 * {tile} * "
               f"sizeof({t}), {tile})}};", k.loc)
        for arr, pos in (("a2", "A2"), ("b2", "B2")):
            w.line(f"LocalTensor<{t}> {arr}[2] = {{LocalTensor<{t}>(TPosition::{pos}, 0, {tile}), "
                   f"LocalTensor<{t}>(TPosition::{pos}, {tile} * sizeof({t}), {tile})}};", k.loc)
        w.line(f"LocalTensor<{k.acc}> c1[2] = {{LocalTensor<{k.acc}>(TPosition::CO1, 0, baseM * "
               f"baseN), LocalTensor<{k.acc}>(TPosition::CO1, baseM * baseN * sizeof({k.acc}), "
               "baseM * baseN)};", k.loc)
        w.line("int32_t step = 0, tile = 0;  // ping-pong counters of L1/L0A/L0B and of L0C")

    def _tile(self) -> None:
        k, w = self.k, self.w
        w.line("const int32_t curN = nEnd - nt < baseN ? nEnd - nt : baseN;")
        w.line("const int32_t cp = tile & 1;")
        w.line("WaitFlag<HardEvent::FIX_M>(cp);", k.loc)
        with w.block("for (int32_t k0 = 0; k0 < K; k0 += baseK)"):
            self._k_step()
        w.line("SetFlag<HardEvent::M_FIX>(cp);", k.loc)
        w.line("WaitFlag<HardEvent::M_FIX>(cp);", k.loc)
        w.line(f"Fixpipe(cGM[(uint64_t)mt * N + nt], c1[cp], FixpipeParamsV220(curN, curM, "
               f"(curM + 15) / 16 * 16, N, false, QuantMode_t::{k.quant}, 0, 1, 0, 0, 0));", k.loc)
        w.line("SetFlag<HardEvent::FIX_M>(cp);", k.loc)
        w.line("++tile;")

    def _k_step(self) -> None:
        k, w = self.k, self.w
        w.line("const int32_t curK = K - k0 < baseK ? K - k0 : baseK;")
        w.line("const int32_t kPad = (curK + c0 - 1) / c0 * c0, mPad = (curM + 15) / 16 * 16, "
               "nPad = (curN + 15) / 16 * 16;")
        w.line("const int32_t p = step & 1;")
        w.line("WaitFlag<HardEvent::MTE1_MTE2>(p);", k.loc)
        self._copy_in()
        w.line("SetFlag<HardEvent::MTE2_MTE1>(p);", k.loc)
        w.line("WaitFlag<HardEvent::MTE2_MTE1>(p);", k.loc)
        w.line("WaitFlag<HardEvent::M_MTE1>(p);", k.loc)
        self._load()
        w.line("SetFlag<HardEvent::MTE1_MTE2>(p);", k.loc)
        w.line("SetFlag<HardEvent::MTE1_M>(p);", k.loc)
        w.line("WaitFlag<HardEvent::MTE1_M>(p);", k.loc)
        # Back-to-back Mmads into one L0C tile of < 10 fractals need a barrier (section 5).
        w.line("if (k0 > 0 && (mPad / 16) * (nPad / 16) < 10) PipeBarrier<PIPE_M>();", k.loc)
        w.line("Mmad(c1[cp], a2[p], b2[p], MmadParams(curM, curN, curK, 0, false, k0 == 0));",
               k.loc)
        w.line("SetFlag<HardEvent::M_MTE1>(p);", k.loc)
        w.line("++step;")

    def _copy_in(self) -> None:
        k, w = self.k, self.w
        a = "aGM[(uint64_t)mt * K + k0]"
        w.line(f"if (curM == 1) DataCopy(a1[p], {a}, Nd2NzParams(1, 1, curK, 0, K, 1, 1, 0));",
               k.loc)
        w.line(f"else DataCopy(a1[p], {a}, Nd2NzParams(1, curM, curK, 0, K, mPad, 1, 0));", k.loc)
        if k.b_transposed:
            w.line("DataCopy(b1[p], bGM[(uint64_t)nt * K + k0], Nd2NzParams(1, curN, curK, 0, K, "
                   "nPad, 1, 0));", k.loc)
        else:
            w.line("DataCopy(b1[p], bGM[(uint64_t)k0 * N + nt], Nd2NzParams(1, curK, curN, 0, N, "
                   "kPad, 1, 0));", k.loc)

    def _load(self) -> None:
        k, w = self.k, self.w
        t = k.ctype
        w.line(f"if (curM == 1) LoadData(a2[p], a1[p], LoadData2DParams(0, (kPad * sizeof({t}) + "
               "511) / 512, 1, 0, 0, false, 0));", k.loc)
        with w.block("else for (int32_t i = 0; i < mPad / 16; ++i)"):
            w.line("LoadData(a2[p][i * kPad * 16], a1[p][i * 16 * c0], LoadData2DParams(0, "
                   "kPad / c0, mPad / 16, 0, 0, false, 0));", k.loc)
        if k.b_transposed:
            w.line("LoadData(b2[p], b1[p], LoadData2DParams(0, (kPad / c0) * (nPad / 16), 1, 0, 0, "
                   "false, 0));", k.loc)
            return
        with w.block("for (int32_t i = 0; i < kPad / 16; ++i)"):
            w.line("LoadData(b2[p][i * nPad * 16], b1[p][i * 256], LoadData2DParams(0, nPad / 16, "
                   "kPad / 16, 0, 0, true, 0));", k.loc)


__all__ = ["PARAMS", "CubeEmitter"]
