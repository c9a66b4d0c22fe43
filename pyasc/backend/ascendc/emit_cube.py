"""AscendC text of a cube kernel (``cube_plan.CubeKernel``): a basic-API matmul.

Block ``b`` takes the units ``b, b + GetBlockNum(), ...`` (``cube_plan``): a batch index
and a ``singleCoreM x singleCoreN`` part of that batch's C, whose ``baseM x baseN`` blocks
(``cube_tiling``) it walks; each block stays in L0C over a K loop of ``baseK`` steps, and
each step's A and B slices are copied GM -> L1 and loaded into L0A/L0B once for the whole
block.  L1 (A1/B1) and L0A/L0B hold two buffers each, so MTE2 loads step k+1 while M
computes step k; L0C holds ``cBufs`` blocks (two 128 x 128: FIX drains one while M fills
the other; one 128 x 256 or 256 x 128 filling L0C: M waits for FIX between blocks).  The
cube core gets no automatic synchronisation, so every hand-off is an explicit flag
(reference section 7):

* forward (RAW): ``MTE2_MTE1`` after the GM->L1 copies, ``MTE1_M`` after the L1->L0
  loads, ``M_FIX`` before ``Fixpipe``;
* backward (WAR), pre-armed before the loops and drained after them: ``MTE1_MTE2`` (L1
  buffer free), ``M_MTE1`` (L0A/L0B buffer free), ``FIX_M`` (L0C buffer free);
* ``PipeBarrier<PIPE_M>`` between accumulating Mmads on tiles of fewer than 10 fractals.

Load paths per layout (reference section 4.1): A (M x K) -> L1 NZ -> L0A Zz without a
transpose, one ``LoadData`` per 16-row block [V]; A^T (K x M, b16) -> L1 NZ with K rows
per column block -> one ``LoadData`` of every fractal with ``ifTranspose`` [V for the
flag (``mmad.asc`` SplitATranspose); the single contiguous load follows from the NZ and
Zz orders, I]; B (K x N, b16) -> one transposing ``LoadData`` per 16-row block [V]; B^T
(N x K) -> one contiguous ``LoadData`` without a transpose [V].

Tails: ``Nd2NzParams`` copies the real rows and columns (zero-filling the 32-byte column
padding), ``Mmad`` gets the real m/n/k, ``Fixpipe`` writes the real m x n.  A tile of one
row is a GEMV (``Mmad`` reads L0A as an ND row): its A copy uses ``dstNzC0Stride = 1``,
which lays the row out as ND, and one contiguous ``LoadData``.  From A^T the row cannot
be laid out as ND, so that tile's ``Mmad`` gets m = 2 (no GEMV; the second row is the
zero padding of the copy and is not written out) [I: the reference's workaround].
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.cwriter import CWriter

PARAMS = ("M", "N", "K", "singleCoreM", "singleCoreN", "mBlocks", "nBlocks")
"""The kernel's scalar parameters after ``a, b, c`` (int32), computed by the host; then
``batch<i>, aStride<i>, bStride<i>`` per batch group (``params``)."""

_BACKWARD = ("MTE1_MTE2", "M_MTE1", "FIX_M")
A_PANEL, B_PANEL = 2, 3   # MTE1_MTE2 ids: an L1-resident panel is free to overwrite


def params(k: CubeKernel) -> list[str]:
    """Every scalar parameter of ``k``, in order."""
    groups = [f"{p}{i}" for i in range(len(k.groups)) for p in ("batch", "aStride", "bStride")]
    return [*PARAMS, *groups]


def param_values(k: CubeKernel) -> list[int]:
    """The values of :func:`params`."""
    groups = [v for g in k.groups for v in (g.extent, g.a_stride, g.b_stride)]
    return [k.m, k.n, k.k, k.single_m, k.single_n, k.m_blocks, k.n_blocks, *groups]


def _nothing() -> AbstractContextManager[None]:
    return nullcontext()


class CubeEmitter:
    """Writes one cube kernel."""

    def __init__(self, w: CWriter, k: CubeKernel) -> None:
        self.w, self.k = w, k

    def emit(self) -> None:
        """The kernel's definition."""
        k, w = self.k, self.w
        sig = ", ".join(["GM_ADDR a", "GM_ADDR b", "GM_ADDR c"] +
                        [f"int32_t {p}" for p in params(k)])
        a_shape = "A^T (K x M)" if k.trans_a else "A (M x K)"
        b_shape = "B^T (N x K)" if k.trans_b else "B (K x N)"
        batch = f"{len(k.groups)} batch group(s), " if k.groups else ""
        w.raw(f"// {k.name}: C (M x N) = {a_shape} @ {b_shape} on the cube unit, {batch}"
              f"{k.ctype} -> {k.acc} in L0C -> {k.out_ctype}")
        w.raw(f'extern "C" __global__ __aicore__ void {k.name}({sig})')
        w.raw("{")
        w.depth += 1
        w.line("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);")
        self.body()
        w.depth -= 1
        w.raw("}")
        w.raw("")

    def body(self) -> None:
        """The kernel's statements after its task type."""
        k, w = self.k, self.w
        self._prologue()
        self._backward("SetFlag")
        with w.block("for (int32_t u = GetBlockIdx(); u < units; u += GetBlockNum())"):
            self._unit()
            self._panel(k.b_resident, B_PANEL, "WaitFlag")
            with w.block("for (int32_t mt = m0; mt < mEnd; mt += baseM)"):
                w.line("const int32_t curM = mEnd - mt < baseM ? mEnd - mt : baseM;")
                self._panel(k.a_resident, A_PANEL, "WaitFlag")
                with w.block("for (int32_t nt = n0; nt < nEnd; nt += baseN)"):
                    self._tile()
                self._panel(k.a_resident, A_PANEL, "SetFlag")
            self._panel(k.b_resident, B_PANEL, "SetFlag")
        self._backward("WaitFlag")

    def _panel(self, resident: bool, event_id: int, call: str) -> None:
        """Before its first copy an L1-resident panel waits until MTE1 has read the
        previous one (the ping-pong flags do not order that when the loop is short);
        after its last read MTE1 sets the flag."""
        if resident:
            self.w.line(f"{call}<HardEvent::MTE1_MTE2>({event_id});", self.k.loc)

    def _backward(self, call: str) -> None:
        """Pre-arm (``SetFlag``) or drain (``WaitFlag``) every backward flag."""
        for event in _BACKWARD:
            for i in self._ids(event):
                self.w.line(f"{call}<HardEvent::{event}>({i});", self.k.loc)

    def _ids(self, event: str) -> list[int]:
        """The event ids of a backward flag: one per L0C buffer for FIX_M, two for the
        ping-pong buffers, and for MTE1_MTE2 ``A_PANEL`` / ``B_PANEL`` when kept in L1."""
        k = self.k
        if event == "FIX_M":
            return list(range(k.tile.c_bufs))
        panels = [A_PANEL] * k.a_resident + [B_PANEL] * k.b_resident
        return [0, 1, *panels] if event == "MTE1_MTE2" else [0, 1]

    def _prologue(self) -> None:
        k, w = self.k, self.w
        t, tile = k.ctype, k.tile
        w.line("InitSocState();", k.loc)
        w.line(f"constexpr int32_t baseM = {tile.base_m}, baseN = {tile.base_n}, "
               f"baseK = {tile.base_k}, c0 = {k.c0}, cBufs = {tile.c_bufs};")
        batch = " * ".join(f"batch{i}" for i in range(len(k.groups))) or "1"
        w.line(f"const int32_t tiles = mBlocks * nBlocks, units = {batch} * tiles;")
        sizes = {"a": self._extent("M * K", "a"), "b": self._extent("K * N", "b"),
                 "c": self._c_size()}
        w.line(f"GlobalTensor<{t}> aGM, bGM;")
        w.line(f"GlobalTensor<{k.out_ctype}> cGM;")
        for name, size in sizes.items():
            ct = k.out_ctype if name == "c" else t
            w.line(f"{name}GM.SetGlobalBuffer((__gm__ {ct}*){name}, {size});", k.loc)
        self._buffers()
        w.line("int32_t step = 0, tile = 0;  // ping-pong counters of L1/L0A/L0B and of L0C")

    def _c_size(self) -> str:
        """Elements of the C buffer the kernel writes: a matrix per batch index (not
        ``units / tiles``: an empty M or N makes ``tiles`` 0, a division by zero that
        traps on the host model when the launch has no work)."""
        batch = " * ".join(f"(uint64_t)batch{i}" for i in range(len(self.k.groups)))
        return f"{batch or '(uint64_t)1'} * M * N"

    def _buffers(self) -> None:
        """L1: the A slots, then the B slots (ping and pong, or every K step of a
        resident panel); L0A/L0B: ping, pong; L0C: cBufs blocks."""
        k, w = self.k, self.w
        t, acc = k.ctype, k.acc
        a, b = "baseM * baseK", "baseK * baseN"
        if k.a_resident or k.b_resident:
            w.line("const int32_t kSteps = (K + baseK - 1) / baseK;")
        a_slots = "kSteps" if k.a_resident else "2"
        b_slots = "kSteps * (singleCoreN / baseN)" if k.b_resident else "2"
        w.line(f"const int32_t aSlots = {a_slots}, bSlots = {b_slots};")
        w.line(f"LocalTensor<{t}> a1All(TPosition::A1, 0, aSlots * {a});", k.loc)
        w.line(f"LocalTensor<{t}> b1All(TPosition::B1, aSlots * {a} * sizeof({t}), "
               f"bSlots * {b});", k.loc)
        for arr, pos, n in (("a2", "A2", a), ("b2", "B2", b)):
            w.line(f"LocalTensor<{t}> {arr}[2] = {{LocalTensor<{t}>(TPosition::{pos}, 0, {n}), "
                   f"LocalTensor<{t}>(TPosition::{pos}, {n} * sizeof({t}), {n})}};", k.loc)
        c = ", ".join(f"LocalTensor<{acc}>(TPosition::CO1, {i} * baseM * baseN * sizeof({acc}), "
                      "baseM * baseN)" for i in range(k.tile.c_bufs))
        w.line(f"LocalTensor<{acc}> c1[cBufs] = {{{c}}};", k.loc)

    def _extent(self, matrix: str, name: str) -> str:
        """Elements of operand ``name``: its last batch index's offset plus a matrix."""
        last = " + ".join(f"(uint64_t)(batch{i} - 1) * {name}Stride{i}"
                          for i in range(len(self.k.groups)))
        return f"{last} + (uint64_t){matrix}" if last else f"(uint64_t){matrix}"

    def _unit(self) -> None:
        """The unit's M and N range and its batch's A, B and C offsets (innermost batch
        group first)."""
        k, w = self.k, self.w
        w.line("const int32_t part = u % tiles;")
        w.line("const int32_t m0 = part % mBlocks * singleCoreM, n0 = part / mBlocks * "
               "singleCoreN;")
        w.line("const int32_t mEnd = M < m0 + singleCoreM ? M : m0 + singleCoreM;")
        w.line("const int32_t nEnd = N < n0 + singleCoreN ? N : n0 + singleCoreN;")
        w.line("const uint64_t cBase = (uint64_t)(u / tiles) * M * N;")
        w.line("uint64_t aBase = 0, bBase = 0;")
        if k.groups:
            w.line("int32_t rest = u / tiles;")
        for i in reversed(range(len(k.groups))):
            w.line(f"aBase += (uint64_t)(rest % batch{i}) * aStride{i}; "
                   f"bBase += (uint64_t)(rest % batch{i}) * bStride{i}; rest /= batch{i};")

    def _tile(self) -> None:
        k, w = self.k, self.w
        w.line("const int32_t curN = nEnd - nt < baseN ? nEnd - nt : baseN;")
        w.line("const int32_t cp = tile % cBufs;")
        w.line("WaitFlag<HardEvent::FIX_M>(cp);", k.loc)
        with w.block("for (int32_t k0 = 0; k0 < K; k0 += baseK)"):
            self._k_step()
        w.line("SetFlag<HardEvent::M_FIX>(cp);", k.loc)
        w.line("WaitFlag<HardEvent::M_FIX>(cp);", k.loc)
        self._fixpipe()
        w.line("SetFlag<HardEvent::FIX_M>(cp);", k.loc)
        w.line("++tile;")

    def _fixpipe(self) -> None:
        """The block of C from L0C to GM (NZ -> ND, the real curM x curN)."""
        k = self.k
        relu = "true" if k.relu else "false"
        self.w.line(f"Fixpipe(cGM[cBase + (uint64_t)mt * N + nt], c1[cp], FixpipeParamsV220("
                    f"curN, curM, (curM + 15) / 16 * 16, N, {relu}, QuantMode_t::{k.quant}, 0, 1, "
                    "0, 0, 0));", k.loc)

    def _k_step(self) -> None:
        k, w = self.k, self.w
        w.line("const int32_t curK = K - k0 < baseK ? K - k0 : baseK;")
        w.line("const int32_t kPad = (curK + c0 - 1) / c0 * c0, mPad = (curM + 15) / 16 * 16, "
               "nPad = (curN + 15) / 16 * 16;")
        self._slots()
        w.line("WaitFlag<HardEvent::MTE1_MTE2>(p);", k.loc)
        # a resident panel is copied by the unit's first block that reads it
        with w.block("if (nt == n0)") if k.a_resident else _nothing():
            self._copy_a()
        with w.block("if (mt == m0)") if k.b_resident else _nothing():
            self._copy_b()
        w.line("SetFlag<HardEvent::MTE2_MTE1>(p);", k.loc)
        w.line("WaitFlag<HardEvent::MTE2_MTE1>(p);", k.loc)
        w.line("WaitFlag<HardEvent::M_MTE1>(p);", k.loc)
        self._load_a()
        self._load_b()
        w.line("SetFlag<HardEvent::MTE1_MTE2>(p);", k.loc)
        w.line("SetFlag<HardEvent::MTE1_M>(p);", k.loc)
        w.line("WaitFlag<HardEvent::MTE1_M>(p);", k.loc)
        # Back-to-back Mmads into one L0C tile of < 10 fractals need a barrier (section 5).
        w.line("if (k0 > 0 && (mPad / 16) * (nPad / 16) < 10) PipeBarrier<PIPE_M>();", k.loc)
        m = "(curM == 1 ? 2 : curM)" if k.trans_a else "curM"
        w.line(f"Mmad(c1[cp], a2[p], b2[p], MmadParams({m}, curN, curK, 0, false, k0 == 0));",
               k.loc)
        w.line("SetFlag<HardEvent::M_MTE1>(p);", k.loc)
        w.line("++step;")

    def _slots(self) -> None:
        """This step's ping-pong index ``p`` and its L1 slices ``a1``, ``b1``: slot ``p``
        of a streamed operand, the step's (and N block's) slot of a resident panel."""
        k, w = self.k, self.w
        w.line("const int32_t p = step & 1;" +
               (" const int32_t ks = k0 / baseK;" if k.a_resident or k.b_resident else ""))
        a_slot = "ks" if k.a_resident else "p"
        b_slot = "((nt - n0) / baseN * kSteps + ks)" if k.b_resident else "p"
        w.line(f"const LocalTensor<{k.ctype}> a1 = a1All[{a_slot} * baseM * baseK], "
               f"b1 = b1All[{b_slot} * baseK * baseN];", k.loc)

    def _copy_a(self) -> None:
        k, w = self.k, self.w
        if k.trans_a:
            w.line("DataCopy(a1, aGM[aBase + (uint64_t)k0 * M + mt], Nd2NzParams(1, curK, "
                   "curM, 0, M, kPad, 1, 0));", k.loc)
            return
        a = "aGM[aBase + (uint64_t)mt * K + k0]"
        w.line(f"if (curM == 1) DataCopy(a1, {a}, Nd2NzParams(1, 1, curK, 0, K, 1, 1, 0));",
               k.loc)
        w.line(f"else DataCopy(a1, {a}, Nd2NzParams(1, curM, curK, 0, K, mPad, 1, 0));", k.loc)

    def _copy_b(self) -> None:
        k, w = self.k, self.w
        if k.trans_b:
            w.line("DataCopy(b1, bGM[bBase + (uint64_t)nt * K + k0], Nd2NzParams(1, curN, "
                   "curK, 0, K, nPad, 1, 0));", k.loc)
        else:
            w.line("DataCopy(b1, bGM[bBase + (uint64_t)k0 * N + nt], Nd2NzParams(1, curK, "
                   "curN, 0, N, kPad, 1, 0));", k.loc)

    def _load_a(self) -> None:
        k, w = self.k, self.w
        t = k.ctype
        if k.trans_a:  # b16 only: c0 == 16, fractals in the same order in L1 and L0A
            w.line("LoadData(a2[p], a1, LoadData2DParams(0, (mPad / 16) * (kPad / 16), 1, 0, "
                   "0, true, 0));", k.loc)
            return
        w.line(f"if (curM == 1) LoadData(a2[p], a1, LoadData2DParams(0, (kPad * sizeof({t}) + "
               "511) / 512, 1, 0, 0, false, 0));", k.loc)
        with w.block("else for (int32_t i = 0; i < mPad / 16; ++i)"):
            w.line("LoadData(a2[p][i * kPad * 16], a1[i * 16 * c0], LoadData2DParams(0, "
                   "kPad / c0, mPad / 16, 0, 0, false, 0));", k.loc)

    def _load_b(self) -> None:
        k, w = self.k, self.w
        if k.trans_b:
            w.line("LoadData(b2[p], b1, LoadData2DParams(0, (kPad / c0) * (nPad / 16), 1, 0, 0, "
                   "false, 0));", k.loc)
            return
        with w.block("for (int32_t i = 0; i < kPad / 16; ++i)"):
            w.line("LoadData(b2[p][i * nPad * 16], b1[i * 256], LoadData2DParams(0, nPad / 16, "
                   "kPad / 16, 0, 0, true, 0));", k.loc)


__all__ = ["PARAMS", "CubeEmitter", "param_values", "params"]
