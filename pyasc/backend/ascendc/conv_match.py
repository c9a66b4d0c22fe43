"""A loop of window copies that is an im2col, feeding a cube matmul: a convolution.

``pyasc.ops.conv2d`` (and any user code computing the same thing) reaches the AscendC
backend as a copy loop filling a column matrix ``cols`` from the (padded) input and a
``cube_matmul`` of the weights with ``cols``.  :func:`match_conv` recognizes the pair by
what the copies *do*, not by how they are written: the copy plan's element map (every
``cols`` element -> the ``src`` element it copies, from the plan's boxes) must equal the
im2col of a convolution geometry derived from a few of its entries (checked in chunks,
so planning a large im2col stays a few MB), and ``cols`` must
reach the matmul as its B (``(N, [1,] C*kh*kw, OH*OW)``, K ordered (c, kh, kw), not
transposed) through reshapes only.  When ``src`` is a zero-padded copy of the input
(``conv_pad``), the geometry is the unpadded input's with those pads, which the kernel
applies through ``LoadData`` 3D's padList (so the host neither fills nor copies the padded
array); else the padding (if any) is already in ``src`` and the geometry's is 0.  Then
``conv_plan`` can run the convolution with its im2col in L1.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from pyasc.backend.ascendc.conv_pad import ZeroPadded, zero_padded
from pyasc.backend.ascendc.conv_plan import ConvGeometry
from pyasc.backend.ascendc.copy_loops import CopyKernel, CopyLoop
from pyasc.backend.ascendc.cube_match import CubeMatmulOp
from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import mem, tensor
from pyasc.ir.types import MemRefType, TensorType

CHUNK = 1 << 17   # elements per chunk of the element checks (a few MB of int64 arrays)


@dataclass(frozen=True)
class ConvMatch:
    """A recognized convolution: the geometry, the copy loop, the matmul; ``padded``
    when the geometry's pads replace the zero-padded copy the loop reads (the kernel
    then reads ``padded.value``); ``host_ops``: what the conv kernel makes needless (the
    fill of the column matrix, the padded copy's fill and interior write)."""

    geo: ConvGeometry
    copy: CopyLoop
    op: CubeMatmulOp
    padded: ZeroPadded | None = None
    host_ops: tuple[Operation, ...] = ()

    @property
    def source(self) -> Value:
        """The NCHW input the conv kernel reads (the unpadded one when ``padded``)."""
        return self.padded.value if self.padded is not None else self.copy.src


def _through_reshapes(v: Value) -> Value:
    """The buffer ``v`` is a contiguous reshape (or tensor snapshot) of."""
    while isinstance(v, OpResult) and isinstance(v.op, mem.ToTensorOp | mem.ReshapeOp |
                                                 tensor.ReshapeOp):
        v = v.op.operand_values[0]
    return v


def copies(k: CopyKernel, limit: int = CHUNK) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The (dst, src) element indices of the plan's copies, in chunks of about ``limit``
    elements (so a large im2col is checked in a few MB)."""
    dims = [*k.outer, (k.rows, k.src_row, k.dst_row), (k.run, 1, 1)]
    split = len(dims) - 1
    while split > 0 and math.prod(e for e, _, _ in dims[split - 1:]) <= limit:
        split -= 1
    src = np.zeros([e for e, _, _ in dims[split:]], np.int64)
    dst = np.zeros_like(src)
    for axis, (e, sd, dd) in enumerate(dims[split:]):
        idx = np.arange(e, dtype=np.int64).reshape([e if i == axis else 1 for i in range(src.ndim)])
        src, dst = src + idx * sd, dst + idx * dd
    src, dst = src.ravel(), dst.ravel()
    for so, do in zip(k.src_offsets, k.dst_offsets, strict=True):
        for outer in itertools.product(*(range(e) for e, _, _ in dims[:split])):
            s0 = so + sum(i * sd for i, (_, sd, _) in zip(outer, dims, strict=False))
            d0 = do + sum(i * dd for i, (_, _, dd) in zip(outer, dims, strict=False))
            yield dst + d0, src + s0


def _probe(k: CopyKernel, want: np.ndarray) -> np.ndarray:
    """The ``src`` element copied into each ``dst`` element of the sorted ``want`` (-1:
    none)."""
    got = np.full(len(want), -1, np.int64)
    lo, hi = want[0], want[-1]
    for d, s in copies(k):
        if d[0] > hi and d.min() > hi or d[0] < lo and d.max() < lo:
            continue  # the image-0 probes lie in few chunks
        at = np.searchsorted(want, d)
        hit = (at < len(want)) & (want[np.minimum(at, len(want) - 1)] == d)
        got[at[hit]] = s[hit]
    return got


def _geometry(k: CopyKernel, shape: tuple[int, ...], o: int, kk: int, p: int, dtype: str,
              fits: Callable[[ConvGeometry], bool]) -> ConvGeometry | None:
    """The geometry whose im2col of an input of ``shape`` (n, c, hp, wp), as (n, kk, p),
    the copies of ``k`` are; only one that ``fits`` is checked element by element."""
    n, c, hp, wp = shape
    taps = kk // c
    if taps * c != kk or k.dst_size != n * kk * p:
        return None
    want = np.unique(np.concatenate([np.arange(taps) * p, np.arange(p)]))
    found = dict(zip(want.tolist(), _probe(k, want).tolist(), strict=True))
    first = np.array([found[t * p] for t in range(taps)])  # tap t at pixel 0: (i*dh, j*dw)
    pix = np.array([found[q] for q in range(p)])           # tap 0 at every pixel
    if first[0] != 0 or np.any(first < 0) or np.any(first >= hp * wp) or np.any(pix < 0) \
            or np.any(pix >= hp * wp):
        return None
    kw, ow = int(np.count_nonzero(first < wp)), int(np.count_nonzero(pix < wp))
    if kw == 0 or taps % kw or ow == 0 or p % ow:
        return None
    kh, oh = taps // kw, p // ow
    dw = int(first[1]) if kw > 1 else 1
    dh = int(first[kw]) // wp if kh > 1 else 1
    sw = int(pix[1]) if ow > 1 else 1
    sh = int(pix[ow]) // wp if oh > 1 else 1
    if min(dw, dh, sw, sh) < 1:
        return None
    g = ConvGeometry(n, c, hp, wp, o, kh, kw, (sh, sw), (dh, dw), dtype=dtype)
    if (g.oh, g.ow) != (oh, ow) or not fits(g):
        return None
    written = 0
    for d, s in copies(k):
        if not np.array_equal(s, _im2col_src(g, d)):
            return None
        written += len(d)
    return g if written == k.dst_size else None


def _im2col_src(g: ConvGeometry, d: np.ndarray) -> np.ndarray:
    """The NCHW element the im2col of ``g``, as (n, c, kh, kw, oh, ow), holds at ``d``."""
    (sh, sw), (dh, dw) = g.stride, g.dilation
    d, x = np.divmod(d, g.ow)
    d, y = np.divmod(d, g.oh)
    d, j = np.divmod(d, g.fw)
    d, i = np.divmod(d, g.fh)
    ni, ci = np.divmod(d, g.c)
    return ((ni * g.c + ci) * g.h + i * dh + y * sh) * g.w + j * dw + x * sw


def _only_for(v: Value, op: Operation, nest: Operation) -> bool:
    """Every use of buffer ``v`` is its fill, a write inside the copy ``nest`` or a
    reshape chain read by ``op`` alone: skipping the copies loses nothing else."""
    for user, _ in v.uses:
        if user is op or isinstance(user, mem.FillOp) or nest.is_ancestor_of(user):
            continue
        if isinstance(user, mem.ToTensorOp | mem.ReshapeOp | tensor.ReshapeOp) and \
                all(_only_for(r, op, nest) for r in user.result_values):
            continue
        return False
    return True


def match_conv(copy: CopyLoop, op: CubeMatmulOp, nest: Operation,
               fits: Callable[[ConvGeometry], bool] = lambda g: True) -> ConvMatch | None:
    """``op`` as a convolution whose column matrix the copy loop ``nest`` (planned as
    ``copy``) fills, or None; ``fits`` vets the geometry before the (longer)
    element-by-element check."""
    if op.attributes["trans_a"] or op.attributes["trans_b"]:
        return None
    if _through_reshapes(op.rhs) is not copy.dst or not _only_for(copy.dst, op, nest):
        return None
    src, a, b = copy.src.type, op.lhs.type, op.rhs.type
    if not (isinstance(src, MemRefType | TensorType) and src.rank in (3, 4) and
            isinstance(a, TensorType) and isinstance(b, TensorType)):
        return None
    dtype = b.element.name  # the cube's operands: Mmad f16/bf16 -> f32, or f32
    if dtype not in ("f16", "bf16", "f32") or b.element != src.element:
        return None
    batch = b.shape[:-2]
    # a (C, H, W) source (a loop convolution's x, reshaped in the copy loop) is one image
    shape = tuple(src.shape) if src.rank == 4 else (1, *src.shape)
    if batch not in ((shape[0],), (shape[0], 1)) or any(d != 1 for d in a.shape[:-2]):
        return None
    pad = zero_padded(copy.src, nest)

    def unpad(g: ConvGeometry) -> ConvGeometry:
        if pad is None:
            return g
        (pl, pr, pt, pb), (h, w) = pad.pads, pad.value.type.shape[2:]
        return dataclasses.replace(g, h=h, w=w, pads=(pl, pr, pt, pb))

    g = _geometry(copy.plan, shape, a.shape[-2], *b.shape[-2:], dtype,
                  lambda g: fits(unpad(g)) or fits(g))
    if g is None:
        return None
    fills = tuple(u for u, _ in copy.dst.uses if isinstance(u, mem.FillOp))
    if pad is not None and fits(unpad(g)):   # else the plan takes the padded array only
        return ConvMatch(unpad(g), copy, op, pad, fills + pad.ops)
    return ConvMatch(g, copy, op, None, fills)


__all__ = ["ConvMatch", "copies", "match_conv"]
