"""Cache-blocked, register-tiled ``tensor.matmul`` for matrix @ matrix (``lower_matmul``).

Loop nest per batch index, BLIS style (the first k block starts its accumulators at
zero: the output is neither zeroed beforehand nor read back in that block)::

    for jc in [0, Nf) step NC:             # column block of the output
      for pc in [0, K) step KC:            # k block (a 16 KiB micro-panel of b)
        pack b[pc:pc+kc, jc:jc+nc] -> bp[nc/NR][kc][NR]  (contiguous micro-panels)
        for ir in [0, Mf/MR):              # parallel: disjoint output rows
          pack a[i0:i0+MR, pc:pc+kc] -> ap[kc][MR]       (a buffer per iteration)
          for jr in [0, nc/NR):
            acc[MR][NR] = 0 if pc == 0 else out[i0:i0+MR, j0:j0+NR]  # carried scalars
            for k in [0, kc): acc[ii][jj] += ap[k, ii] * bp[jr, k, jj]
            out[i0:i0+MR, j0:j0+NR] = acc
        the rows [Mf, M): the same with tiles of 4, 2 and 1 rows (binary decomposition)
    columns [Nf, N): plain i-k-j loops (each row zeroed first)

``Mf``/``Nf`` are ``M``/``N`` rounded down to multiples of ``MR``/``NR``.  The remaining
rows go through the same packed micro-kernel with fewer rows (as i-k-j loops, which
load and store the output at every ``k``, the 4 rows left by 12-row tiles of 64 made
the product ~35% slower); only the last ``N mod NR`` columns take the i-k-j loops.

The register tile follows the host's vector registers (:func:`tiling`, from the
``vector_bits`` pass option the CPU backend sets): ``NR`` is two vectors of the element
type and ``MR`` rows fill the register file (AVX2, 16 ymm: 6 x 16 f32, 12 accumulators;
AVX-512, 32 zmm: 8 x 32 f32, 16 accumulators).  The accumulators are unrolled scalars
that LLVM's SLP vectorizer packs into vector registers; on AVX-512 the micro-kernel's
loop carries ``vector_bits = 512`` so that the function it lands in is compiled with
``"prefer-vector-width"="512"`` (LLVM prefers 256-bit vectors on these CPUs otherwise
and splits each row into four ymm accumulators, which spill).  Packing makes the
micro-kernel read two small contiguous streams whatever the operands' strides (a
transposed operand included) and avoids the cache-set conflicts of rows of ``a`` a
power of two apart.  A static ``k`` is cut into blocks of at most ``KC`` as even as
possible (a shallow last block stores and reloads the output tile for little work).
``NC`` spans all of ``N`` up to 1 MiB of panel (so ``a`` is packed
once per k block): ~1.5x over a 256 KiB panel on AVX2.  The panel is allocated with no
more column panels than ``N`` has (a small product must not take a device workspace's
1 MiB).

Determinism and accuracy: every output element is the sequential sum in increasing
``k``, ``acc = acc + a[i, k] * b[k, j]`` from ``acc = 0`` (the accumulator is stored
after a k block and reloaded by the next), in every path, so the result does not depend
on the tiling, on which path computed the element, or on the thread count.  Each step
is one ``madd`` given by ``lower_matmul``: a multiply then an add (two roundings), or
for floats with ``matmul_fma`` on a host with FMA, one fused multiply-add (one
rounding, as numpy's BLAS does; docs/math-accuracy.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyasc.ir.core import Value
from pyasc.ir.ops import arith
from pyasc.ir.passes.loopgen import LoopGen, constant_of
from pyasc.ir.types import DYN, ScalarType

TILED_ELEMENTS = frozenset({"f32", "f64", "i32", "i64"})
"""Element types taking the tiled path (others keep the plain i-k-j loops)."""

ROWS_BY_VECTOR_BITS = {512: 8, 256: 6, 128: 6}
"""``MR`` per vector width: 32 zmm hold 8 x 2 accumulators, two ``b`` vectors, the
broadcast ``a`` and a product (8 x 32 f32 ran as fast as 12 x 32 on 1024^2, and 8
divides the usual channel counts, so fewer rows reach the tails); 16 ymm or xmm hold
6 x 2 accumulators and the same four."""
MICRO_PANEL_BYTES = 16 << 10
"""One micro-panel of ``bp`` (``KC x NR`` elements) sets the depth ``KC`` of a k block:
16 KiB stays in L1 beside the ``a`` micro-panel (AVX2 f32: KC = 256; AVX-512 f32 and
f64: 128, which measured ~5-10% faster than 256 on conv2d's 64 x 576 x 3136)."""
PANEL_BYTES = 1 << 20
"""Upper bound of the packed ``b`` block (``KC x NC`` elements)."""


@dataclass(frozen=True)
class Tiling:
    """The register tile of one element type on one host."""

    vector_bits: int
    mr: int
    nr: int
    kc: int

    @property
    def tails(self) -> tuple[int, ...]:
        """Row counts of the tail tiles, largest first (their sums reach ``mr - 1``)."""
        return tuple(1 << p for p in reversed(range((self.mr - 1).bit_length())))


def tiling(t: ScalarType, vector_bits: int = 256) -> Tiling:
    """The register tile for element type ``t`` with vectors of ``vector_bits``."""
    bits = vector_bits if vector_bits in ROWS_BY_VECTOR_BITS else 256
    nr = 2 * bits // t.bitwidth
    return Tiling(bits, ROWS_BY_VECTOR_BITS[bits], nr, MICRO_PANEL_BYTES // (nr * t.bitwidth // 8))


def worth_tiling(t: ScalarType, m: int, n: int, tile: Tiling) -> bool:
    """Whether the tiled nest applies: a supported type and, for static sizes, at
    least one full register tile."""
    if t.name not in TILED_ELEMENTS:
        return False
    return (m == DYN or m >= tile.mr) and (n == DYN or n >= tile.nr)


RowLoad = Callable[[list[Value], Value], Callable[[Value], Value]]
"""``row(batch ivs, i)``: the loader of ``a[batch, i, k]`` for each ``k`` (what does not
depend on ``k``, such as a gathered row's index, is computed once)."""
Load = Callable[[list[Value], Value, Value], Value]
"""``load(batch ivs, k, j)``: an element of ``b``."""
MultiplyAdd = Callable[[Value, Value, Value], Value]
"""``madd(acc, a, b)``: one step of the sum, ``acc + a * b``."""


class TiledMatmul:
    """Emits the tiled nest into ``out`` (contiguous ``[*batch, M, N]``; every element
    is written, its previous contents never read)."""

    def __init__(self, gen: LoopGen, out: Value, loads: tuple[RowLoad, Load],
                 sizes: tuple[Value, Value, Value], madd: MultiplyAdd, k_static: int,
                 tile: Tiling) -> None:
        self.gen, self.out, self.madd, self.tile = gen, out, madd, tile
        self.row_a, self.load_b = loads
        self.m, self.n, self.k = sizes
        elem = out.type.element
        self.nr = tile.nr
        self.kc = tile.kc if k_static == DYN else _even_depth(k_static, tile.kc)
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
        mf, nf = self.full(self.m, self.tile.mr), self.full(self.n, self.nr)
        tails = self._tail_rows(mf)
        gen.for_(gen.const(0), nf, lambda jc, _: self._column_block(
            bidx, jc[0], mf, tails), step=gen.const(self.nc), name="jc")
        self.ikj(bidx, (gen.const(0), self.m), (nf, self.n))

    def _tail_rows(self, mf: Value) -> list[tuple[int, Value, Value]]:
        """(rows, first row, count in {0, 1}) of the tail tiles covering ``[mf, m)``
        (for a static ``m``, only those that run)."""
        gen, out = self.gen, []
        start, m = mf, constant_of(self.m)
        for rows in self.tile.tails:
            if isinstance(m, int):
                if m % self.tile.mr & rows:
                    out.append((rows, start, gen.const(1)))
                    start = gen.add(start, gen.const(rows))
                continue
            count = gen.emit(arith.FloorDivOp.new(gen.sub(self.m, start), gen.const(rows)))
            out.append((rows, start, count))
            start = gen.add(start, gen.mul(count, gen.const(rows)))
        return out

    def _column_block(self, bidx: list[Value], jc: Value, mf: Value,
                      tails: list[tuple[int, Value, Value]]) -> list[Value]:
        gen, mr = self.gen, self.tile.mr
        nf = self.full(self.n, self.nr)
        nc = gen.emit(arith.MinOp.new(gen.const(self.nc), gen.sub(nf, jc)))
        panels = gen.emit(arith.FloorDivOp.new(nc, gen.const(self.nr)))

        def k_block(pcs: list[Value], _: list[Value]) -> list[Value]:
            pc = pcs[0]
            kc = gen.emit(arith.MinOp.new(gen.const(self.kc), gen.sub(self.k, pc)))
            self._pack(bidx, jc, pc, panels, kc)
            block = (jc, pc, panels, kc)
            count = gen.emit(arith.FloorDivOp.new(mf, gen.const(mr)))
            gen.for_(gen.const(0), count, lambda ir, _: self._row_tiles(
                bidx, gen.mul(ir[0], gen.const(mr)), block, mr), name="ir")
            gen.b.block.ops[gen.b.index - 1].attributes["parallel"] = True
            for rows, start, n_tiles in tails:  # 0 or 1 tile each
                gen.for_(gen.const(0), n_tiles, lambda _i, _c, r=rows, s=start:
                         self._row_tiles(bidx, s, block, r), name="it")
            return []
        gen.for_(gen.const(0), self.k, k_block, step=gen.const(self.kc), name="pc")
        return []

    def _pack(self, bidx: list[Value], jc: Value, pc: Value, panels: Value,
              kc: Value) -> None:
        """``bp[jr, k, jj] = b[pc + k, jc + jr*NR + jj]``, row by row of ``b``: ``k``
        outside, so that the loads run along a row of ``b`` (a matrix larger than the
        caches, such as conv2d's column matrix, streams from memory: column panel by
        column panel, each row of the panel is another page and the prefetcher does not
        follow; it was 20% of a batched conv2d's time).  The ``NR`` loads of a panel row
        come before its stores: they are then one vector load and one vector store
        (the panel is a fresh buffer, but LLVM cannot know it does not alias ``b``)."""
        gen = self.gen
        nr = gen.const(self.nr)

        def panel_row(ivs: list[Value]) -> None:
            k, jr = ivs
            j0 = gen.add(jc, gen.mul(jr, nr))
            row = gen.add(pc, k)
            values = [self.load_b(bidx, row, gen.add(j0, gen.const(jj)))
                      for jj in range(self.nr)]
            for jj, v in enumerate(values):
                gen.store(v, self.bp, [jr, k, gen.const(jj)])
        gen.nest([kc, panels], panel_row, prefix="p")

    def _row_tiles(self, bidx: list[Value], i0: Value,
                   block: tuple[Value, Value, Value, Value], rows: int) -> list[Value]:
        """Rows ``[i0, i0 + rows)`` of the column block ``block`` = (jc, pc, panels, kc)."""
        gen = self.gen
        jc, pc, panels, kc = block
        load_a = self._pack_a(bidx, i0, pc, kc, rows)
        gen.for_(gen.const(0), panels, lambda jr, _: self._micro(
            bidx, (i0, rows), (jc, jr[0], pc), kc, load_a), name="jr")
        return []

    def _pack_a(self, bidx: list[Value], i0: Value, pc: Value, kc: Value,
                rows: int) -> Callable[[int, Value], Value]:
        """``ap[k, ii] = a[i0 + ii, pc + k]`` in a buffer of this (parallel) iteration,
        the rows side by side in one k loop: their cache misses overlap (rows gathered
        from a table are far apart) and the stores are contiguous."""
        gen = self.gen
        elem = self.out.type.element
        ap = gen.alloc((self.kc, rows), elem, [gen.const(self.kc), gen.const(rows)],
                       "packed_a")
        loads = [self.row_a(bidx, gen.add(i0, gen.const(ii))) for ii in range(rows)]

        def step(ks: list[Value]) -> None:
            k = gen.add(pc, ks[0])
            for ii, load in enumerate(loads):
                gen.store(load(k), ap, [ks[0], gen.const(ii)])
        gen.nest([kc], step, prefix="q")
        return lambda ii, k: gen.load(ap, [k, gen.const(ii)])

    def _micro(self, bidx: list[Value], tile_rows: tuple[Value, int],
               where: tuple[Value, Value, Value], kc: Value,
               load_a: Callable[[int, Value], Value]) -> list[Value]:
        """One ``rows x NR`` register tile over one k block; ``where`` = (jc, jr, pc)."""
        gen = self.gen
        i0, count = tile_rows
        jc, jr, pc = where
        j0 = gen.add(jc, gen.mul(jr, gen.const(self.nr)))
        rows = [gen.add(i0, gen.const(ii)) for ii in range(count)]
        cols = [gen.add(j0, gen.const(jj)) for jj in range(self.nr)]
        places = [[*bidx, i, j] for i in rows for j in cols]
        inits = self._tile_inits(places, pc)

        def step(ks: list[Value], accs: list[Value]) -> list[Value]:
            bs = [gen.load(self.bp, [jr, ks[0], gen.const(jj)]) for jj in range(self.nr)]
            new: list[Value] = []
            for ii in range(count):
                a = load_a(ii, ks[0])
                new += [self.madd(accs[ii * self.nr + jj], a, b) for jj, b in enumerate(bs)]
            return new
        accs = gen.for_(gen.const(0), kc, step, inits, name="k")
        k_loop = gen.b.block.ops[gen.b.index - 1]
        k_loop.attributes["register_tile"] = True  # vectorized across accs, not along k
        if self.tile.vector_bits > 256:  # see the module docstring
            k_loop.attributes["vector_bits"] = self.tile.vector_bits
        for value, p in zip(accs, places, strict=True):
            gen.store(value, self.out, p)
        return []

    def _tile_inits(self, places: list[list[Value]], pc: Value) -> list[Value]:
        """The accumulators at the start of the k block at ``pc``: zero in the first
        block (one block when the static ``k`` fits in ``kc``), else the output tile."""
        gen, elem = self.gen, self.out.type.element
        zero = gen.const(0.0 if elem.is_float else 0, elem)
        k = constant_of(self.k)
        if isinstance(k, int) and k <= self.kc:
            return [zero] * len(places)
        return gen.if_(gen.cmp("eq", pc, gen.const(0)), [elem] * len(places),
                       lambda: [zero] * len(places),
                       lambda: [gen.load(self.out, p) for p in places])

    def ikj(self, bidx: list[Value], rows: tuple[Value, Value],
            cols: tuple[Value, Value]) -> None:
        """``out[i, j] = sum over k of a[i, k] * b[k, j]`` over a rectangle: each row
        zeroed, then k before j (the rows are independent: the outer loop is
        ``parallel``)."""
        gen = self.gen
        elem = self.out.type.element
        zero = gen.const(0.0 if elem.is_float else 0, elem)

        def row(i: Value) -> None:
            load = self.row_a(bidx, i)
            gen.for_(cols[0], cols[1], lambda js, _: gen.store(
                zero, self.out, [*bidx, i, js[0]]) or [], name="j")

            def k_step(ks: list[Value], _: list[Value]) -> list[Value]:
                aik = load(ks[0])

                def update(js: list[Value], _: list[Value]) -> list[Value]:
                    place = [*bidx, i, js[0]]
                    acc = gen.load(self.out, place)
                    gen.store(self.madd(acc, aik, self.load_b(bidx, ks[0], js[0])),
                              self.out, place)
                    return []
                gen.for_(cols[0], cols[1], update, name="j")
                return []
            gen.for_(gen.const(0), self.k, k_step, name="k")
        _ranged_parallel(gen, rows, row)


def _even_depth(k: int, kc: int) -> int:
    """The depth of the k blocks of a static ``k``: at most ``kc``, the blocks as even as
    possible (144 = 72 + 72, not 128 + 16: a shallow block stores and reloads the
    output tile for little work)."""
    blocks = max(1, -(-k // kc))
    return max(1, -(-k // blocks))


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
