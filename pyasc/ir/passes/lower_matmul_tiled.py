"""Cache-blocked, register-tiled ``tensor.matmul`` for matrix @ matrix (``lower_matmul``).

Loop nest per batch index (after the output is zeroed), BLIS style::

    for jc in [0, Nf) step NC:             # column block of the output
      for pc in [0, K) step KC:            # k block
        pack b[pc:pc+kc, jc:jc+nc] -> bp[nc/NR][kc][NR]  (contiguous micro-panels)
        for ir in [0, Mf/MR):              # parallel: disjoint output rows
          pack a[i0:i0+MR, pc:pc+kc] -> ap[kc][MR]       (a buffer per iteration)
          for jr in [0, nc/NR):
            acc[MR][NR] = out[i0:i0+MR, j0:j0+NR]      # scalars carried by the k loop
            for k in [0, kc): acc[ii][jj] += ap[k, ii] * bp[jr, k, jj]
            out[i0:i0+MR, j0:j0+NR] = acc

``Mf``/``Nf`` are ``M``/``N`` rounded down to multiples of ``MR``/``NR``; the remaining
rows and columns are done by plain i-k-j loops.  The ``MR x NR`` accumulators are
unrolled scalars that LLVM's SLP vectorizer packs into vector registers (``NR`` is two
256-bit vectors of the element type: 12 accumulators, two ``b`` vectors, one broadcast
``a`` and one product fill the 16 AVX2 registers without spills).  Packing makes the
micro-kernel read two small contiguous streams whatever the operands' strides (a
transposed operand included) and avoids the cache-set conflicts of rows of ``a`` a
power of two apart.  The sizes were chosen by measurement on AVX2 (1024^2 f32, one
thread): ``NC`` spanning all of ``N`` up to 1 MiB of panel (so ``a`` is packed once
per k block) was worth ~1.5x over a 256 KiB panel.  The panel is allocated with no more
column panels than ``N`` has (a small product must not take a device workspace's 1 MiB).

Determinism and accuracy: every output element is the plain sequential sum
``((0 + a0*b0) + a1*b1) + ...`` in increasing ``k`` (the accumulator is stored after a
k block and reloaded by the next), in every path, so the result does not depend on
the tiling, on which path computed the element, or on the thread count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import arith
from pyasc.ir.passes.loopgen import LoopGen, constant_of
from pyasc.ir.types import DYN, ScalarType

TILED_ELEMENTS = frozenset({"f32", "f64", "i32", "i64"})
"""Element types taking the tiled path (others keep the plain i-k-j loops)."""

MR = 6
"""Rows of the register tile."""
VECTOR_BYTES = 32
"""One AVX2 register; ``NR`` spans two of them."""
KC = 256
"""Depth of a k block (one micro-panel of ``bp`` is ``KC x NR`` elements)."""
PANEL_BYTES = 1 << 20
"""Upper bound of the packed ``b`` block (``KC x NC`` elements)."""


def nr_of(t: ScalarType) -> int:
    """Columns of the register tile for element type ``t``."""
    return 2 * VECTOR_BYTES // (t.bitwidth // 8)


def worth_tiling(t: ScalarType, m: int, n: int) -> bool:
    """Whether the tiled nest applies: a supported type and, for static sizes, at
    least one full register tile."""
    if t.name not in TILED_ELEMENTS:
        return False
    return (m == DYN or m >= MR) and (n == DYN or n >= nr_of(t))


Load = Callable[[list[Value], Value, Value], Value]
"""``load(batch ivs, row or k, k or column)``: an operand element."""


class TiledMatmul:
    """Emits the tiled nest into ``out`` (zeroed, contiguous ``[*batch, M, N]``)."""

    def __init__(self, gen: LoopGen, out: Value, load_a: Load, load_b: Load,
                 sizes: tuple[Value, Value, Value], classes: tuple[type[Operation], ...],
                 k_static: int) -> None:
        self.gen, self.out, self.load_a, self.load_b = gen, out, load_a, load_b
        self.m, self.n, self.k = sizes
        self.add_cls, self.mul_cls = classes
        elem = out.type.element
        self.nr = nr_of(elem)
        self.kc = KC if k_static == DYN else max(1, min(KC, k_static))
        nc = max(self.nr, PANEL_BYTES // (self.kc * elem.bitwidth // 8) // self.nr * self.nr)
        n_static = constant_of(self.n)
        if isinstance(n_static, int):
            nc = min(nc, max(self.nr, n_static // self.nr * self.nr))
        self.nc = nc
        self.bp = self._panel(nc // self.nr)

    def _panel(self, panels: int) -> Value:
        """The packed ``b`` block, with no more column panels than ``n`` has: the bound
        is tuned for a CPU cache, and a narrow product run many times (in a loop body,
        where its temporaries come from a device kernel's fixed workspace) must not take
        it all.  The depth stays ``kc``, so the micro-kernel's strides stay constants."""
        gen, elem, nr = self.gen, self.out.type.element, self.nr
        count = gen.const(panels)
        if constant_of(self.n) is not None:  # nc is already at most n
            return gen.alloc((panels, self.kc, nr), elem,
                             [count, gen.const(self.kc), gen.const(nr)], "packed")
        need = gen.emit(arith.FloorDivOp.new(self.n, gen.const(nr)))
        count = gen.emit(arith.MinOp.new(gen.emit(arith.MaxOp.new(need, gen.const(1))),
                                         count))  # in [1, panels]
        return gen.alloc((DYN, self.kc, nr), elem, [count, gen.const(self.kc),
                                                    gen.const(nr)], "packed")

    def full(self, size: Value, tile: int) -> Value:
        """``size`` rounded down to a multiple of ``tile``."""
        return self.gen.sub(size, self.gen.rem(size, self.gen.const(tile)))

    def emit(self, bidx: list[Value]) -> None:
        """The whole product for one batch index."""
        gen = self.gen
        mf, nf = self.full(self.m, MR), self.full(self.n, self.nr)
        step = gen.const(self.nc)
        gen.for_(gen.const(0), nf, lambda jc, _: self._column_block(bidx, jc[0], mf, nf),
                 step=step, name="jc")
        zero = gen.const(0)
        self.ikj(bidx, (zero, mf), (nf, self.n))
        self.ikj(bidx, (mf, self.m), (zero, self.n))

    def _column_block(self, bidx: list[Value], jc: Value, mf: Value,
                      nf: Value) -> list[Value]:
        gen = self.gen
        nc = gen.emit(arith.MinOp.new(gen.const(self.nc), gen.sub(nf, jc)))
        panels = gen.emit(arith.FloorDivOp.new(nc, gen.const(self.nr)))

        def k_block(pcs: list[Value], _: list[Value]) -> list[Value]:
            pc = pcs[0]
            kc = gen.emit(arith.MinOp.new(gen.const(self.kc), gen.sub(self.k, pc)))
            self._pack(bidx, jc, pc, panels, kc)
            rows = gen.emit(arith.FloorDivOp.new(mf, gen.const(MR)))
            gen.for_(gen.const(0), rows, lambda ir, _: self._row_tiles(
                bidx, gen.mul(ir[0], gen.const(MR)), jc, pc, panels, kc), name="ir")
            gen.b.block.ops[gen.b.index - 1].attributes["parallel"] = True
            return []
        gen.for_(gen.const(0), self.k, k_block, step=gen.const(self.kc), name="pc")
        return []

    def _pack(self, bidx: list[Value], jc: Value, pc: Value, panels: Value,
              kc: Value) -> None:
        """``bp[jr, k, jj] = b[pc + k, jc + jr*NR + jj]``."""
        gen = self.gen
        nr = gen.const(self.nr)

        def body(ivs: list[Value]) -> None:
            jr, k, jj = ivs
            j = gen.add(jc, gen.add(gen.mul(jr, nr), jj))
            gen.store(self.load_b(bidx, gen.add(pc, k), j), self.bp, ivs)
        gen.nest([panels, kc, nr], body, prefix="p")

    def _row_tiles(self, bidx: list[Value], i0: Value, jc: Value, pc: Value,
                   panels: Value, kc: Value) -> list[Value]:
        gen = self.gen
        load_a = self._pack_a(bidx, i0, pc, kc)
        gen.for_(gen.const(0), panels, lambda jr, _: self._micro(
            bidx, i0, jc, jr[0], kc, load_a), name="jr")
        return []

    def _pack_a(self, bidx: list[Value], i0: Value, pc: Value,
                kc: Value) -> Callable[[int, Value], Value]:
        """``ap[k, ii] = a[i0 + ii, pc + k]`` in a buffer of this (parallel) iteration."""
        gen = self.gen
        elem = self.out.type.element
        ap = gen.alloc((self.kc, MR), elem, [gen.const(self.kc), gen.const(MR)], "packed_a")

        def body(ivs: list[Value]) -> None:
            ii, k = ivs
            gen.store(self.load_a(bidx, gen.add(i0, ii), gen.add(pc, k)), ap, [k, ii])
        gen.nest([gen.const(MR), kc], body, prefix="q")
        return lambda ii, k: gen.load(ap, [k, gen.const(ii)])

    def _micro(self, bidx: list[Value], i0: Value, jc: Value, jr: Value, kc: Value,
               load_a: Callable[[int, Value], Value]) -> list[Value]:
        """One ``MR x NR`` register tile over one k block."""
        gen = self.gen
        j0 = gen.add(jc, gen.mul(jr, gen.const(self.nr)))
        rows = [gen.add(i0, gen.const(ii)) for ii in range(MR)]
        cols = [gen.add(j0, gen.const(jj)) for jj in range(self.nr)]
        places = [[*bidx, i, j] for i in rows for j in cols]
        inits = [gen.load(self.out, p) for p in places]

        def step(ks: list[Value], accs: list[Value]) -> list[Value]:
            bs = [gen.load(self.bp, [jr, ks[0], gen.const(jj)]) for jj in range(self.nr)]
            new: list[Value] = []
            for ii in range(MR):
                a = load_a(ii, ks[0])
                for jj, b in enumerate(bs):
                    prod = gen.emit(self.mul_cls.new(a, b))
                    new.append(gen.emit(self.add_cls.new(accs[ii * self.nr + jj], prod)))
            return new
        accs = gen.for_(gen.const(0), kc, step, inits, name="k")
        for value, p in zip(accs, places, strict=True):
            gen.store(value, self.out, p)
        return []

    def ikj(self, bidx: list[Value], rows: tuple[Value, Value],
            cols: tuple[Value, Value]) -> None:
        """``out[i, j] += a[i, k] * b[k, j]`` over a rectangle, k before j (the rows are
        independent: the outer loop is ``parallel``)."""
        gen = self.gen

        def row(i: Value) -> None:
            def k_step(ks: list[Value], _: list[Value]) -> list[Value]:
                aik = self.load_a(bidx, i, ks[0])

                def update(js: list[Value], _: list[Value]) -> list[Value]:
                    place = [*bidx, i, js[0]]
                    prod = gen.emit(self.mul_cls.new(aik, self.load_b(bidx, ks[0], js[0])))
                    gen.store(gen.emit(self.add_cls.new(gen.load(self.out, place), prod)),
                              self.out, place)
                    return []
                gen.for_(cols[0], cols[1], update, name="j")
                return []
            gen.for_(gen.const(0), self.k, k_step, name="k")
        _ranged_parallel(gen, rows, row)


def _ranged_parallel(gen: LoopGen, bounds: tuple[Value, Value],
                     body: Callable[[Value], None]) -> None:
    """A ``parallel`` loop over ``[lo, hi)``."""
    def wrapped(ivs: list[Value], _: list[Value]) -> list[Value]:
        body(ivs[0])
        return []
    gen.for_(bounds[0], bounds[1], wrapped, name="i")
    gen.b.block.ops[gen.b.index - 1].attributes["parallel"] = True


def batch_nest(gen: LoopGen, dims: Sequence[Value], body: Callable[[list[Value]], None]) -> None:
    """Sequential loops over the batch axes (the packed panel is shared by them)."""
    gen.nest(dims, body, prefix="b")
