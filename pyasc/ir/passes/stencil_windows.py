"""``stencil-windows``: mark the fused groups that are stencils (inputs that are windows
of one array).

A stencil written with loops (``for i: for j: acc += img[i + di, j + dj]``) reaches the
backend, after ``batch-loops``, as a group whose array inputs are snapshots of shifted
views of the same array: ``mem.to_tensor(mem.subview(img, [a + di, b + dj], [Ho, Wo],
[1, 1]))`` per window offset.  As a ``flat`` kernel each view is a separate kernel
input that the host copies first: a 3x3 blur moves its image nine times.
:func:`match_stencil` recognizes the shape generally, from the IR alone (any number of
bases, any static offsets, any elementwise body the vector planner accepts), and the
pass marks the group (``stencil = true``), so that the AscendC backend's stencil kernel
(``backend/ascendc/stencil_kernel.py``) can load each base's rows once per tile (halo
included) and read every view as a shift inside the Unified Buffer.  It runs in the
AscendC pipeline only, after grouping; ``PYASC_DISABLE_PASSES=stencil-windows`` keeps
the ``flat`` kernels.

Conditions (else ``None``: the group stays a ``flat`` kernel, as before):

* the group's space is of rank 2 or 3 (``(rows, cols)`` or ``(planes, rows, cols)``)
  and every result is an array of that shape; with a run-time space (``dynamic_shape``)
  the windows have the same size values (``m.sizes``; the backend computes the tiling
  on the host from them and checks the extents);
* every other array input is a window: a snapshot of a static, unit-step, full-rank view of a
  C-contiguous static buffer of the group's rank (or of a function argument, which a
  launch passes C-contiguous; directly or through plain views of it, ``y = x[1:, 2:]``:
  ``window_values.window_root``, the offsets added), with constant offsets (or numpy's
  clamped start ``min(c, D)`` of ``x[c:...]`` on the buffer's run-time extent ``D``:
  ``c`` for every non-empty window, ``window_values.window_start``), whose snapshot
  and view are in the group's block with nothing written in between (the kernel reads
  the buffer when the snapshot would have been taken);
* the windows of one buffer agree on the plane offset (they differ in rows and
  columns), and at least one buffer is read through two or more windows;
* or a window is a *fixed plane* (``StencilBase.fixed``): one plane of a rank-3 buffer
  (``x[c, a:..., b:...]``, axis 0 dropped), broadcast over the space's planes
  (``broadcast(reshape(snapshot))``: a multi-channel convolution's ``x[c, i + a, j + b]``
  in its nest over ``(o, i, j)``), one base per plane; in a rank-4 space ``(N, O,
  rows, cols)`` (a batch loop around it) every window is one channel of every image
  (``x[:, c, a:..., b:...]``, ``StencilBase.images``; with run-time shapes from image
  0 on, the host checks the count), and other bases are whole planes of the space
  (``res[n, o, i + 1, j + 1]``, read per plane: ``_images_beside_planes``); with a
  run-time space the count of planes is the broadcast's (``StencilMatch.planes``);
* or, in a rank-4 space ``(N, C, rows, cols)`` (a batch loop around a depthwise
  stencil), every window is every channel of every image of a rank-4 base
  (``x[:, :, a:..., b:...]``: offsets 0 on the two leading axes, all of axis 1): the
  leading axes collapse into ``N * C`` planes, plane ``n * C + c`` of the contiguous
  base (``StencilMatch.collapsed``; at run time the host checks axis 1 is whole);
* inside a ``channels`` loop (``channel_stencil``, ``match_stencil(group, channel)``) a
  fixed plane may be the loop's index (``x[c, ...]``, ``x[:, c, ...]``:
  ``StencilBase.channel``), the plane the kernel's channel loop walks;
* other array inputs are arrays of the space's shape (a window of themselves at offset
  0, e.g. the result of an earlier kernel) or one value per plane broadcast over it
  (``(planes, 1, 1)`` or all-ones arrays: a depthwise convolution's weights; ``(?, 1,
  1)`` with run-time shapes, which the host broadcasts to the space's planes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyasc.ir.core import Operation, OpResult, Value
from pyasc.ir.ops import mem, tensor
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.passes.manager import Pass, PassContext, register_pass
from pyasc.ir.passes.versioning import top_blocks
from pyasc.ir.passes.window_values import (
    passable_base,
    same_size,
    static_int,
    window_root,
    window_start,
)
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType


@dataclass
class StencilBase:
    """One array the stencil reads through windows, and the rows/columns they span."""

    value: Value                     # the buffer (kernel IR value) the host passes
    shape: tuple[int, ...]
    plane: int = 0                   # plane offset of every window (rank 3), else 0
    # the windows are one plane of the base (``x[c, a:..., b:...]``, axis 0 dropped):
    # ``plane`` is absolute, the same for every plane of the space (broadcast over it)
    fixed: bool = False
    # a fixed channel of every image (``x[:, c, a:..., b:...]`` of a rank-4 base): the
    # plane is ``image * C + plane``, the image the kernel's unit walks
    images: bool = False
    # the windows are plane ``c + plane`` of the base, ``c`` the index of the enclosing
    # ``channels`` loop (``StencilMatch.channel``): a run-time plane the kernel walks
    channel: bool = False
    rows: tuple[int, int] = (0, 0)   # smallest and largest row offset of its windows
    cols: tuple[int, int] = (0, 0)   # smallest and largest column offset
    views: int = 0

    @property
    def halo(self) -> int:
        """Rows a tile of output rows needs beyond its own count."""
        return self.rows[1] - self.rows[0]


@dataclass
class Window:
    """Group input ``index`` is base ``base`` at row/column offset ``(row, col)``."""

    index: int
    base: int
    row: int
    col: int


@dataclass
class StencilMatch:
    space: tuple[int, ...]           # (planes, rows, cols): rank 2 gets planes = 1
    # rank 4 (a batch loop around a multi-channel conv, ``(N, O, rows, cols)``): N, the
    # images; every base is then a fixed channel of a ``(N, C, H, W)`` array
    outer: int = 1
    bases: list[StencilBase] = field(default_factory=list)
    # a run-time space (dynamic_shape): the windows' common size values, one per axis
    sizes: list[Value] | None = None
    # a run-time space whose windows are fixed planes (2-D): the count of planes they
    # are broadcast over (a multi-channel conv's output planes), from the broadcast
    planes: Value | None = None
    windows: list[Window] = field(default_factory=list)
    # inputs that are one value per plane broadcast over the plane (a depthwise conv's
    # weights): group input index -> the ``(planes, 1, 1)`` (or all-ones) array
    per_plane: dict[int, Value] = field(default_factory=dict)
    # the index of the ``channels`` loop around the group (``channel_stencil``): a window
    # whose plane (channel) offset is this value is a plane of the channel walked
    channel: Value | None = None
    # rank 4 with bases that are not fixed planes: the images and channels are the
    # ``outer * space[0]`` planes the units walk; a per-plane input is per channel
    # (plane ``p`` reads value ``p % space[0]``)
    collapsed: bool = False


def _per_plane(v: Value, space: tuple[int, ...]) -> Value | None:
    """The ``(planes, 1, 1)`` (rank 3) or all-ones array ``v`` broadcasts, else None."""
    if not (isinstance(v, OpResult) and isinstance(v.op, tensor.BroadcastOp)):
        return None
    src = v.op.operand_values[0]
    t = src.type
    if isinstance(t, TensorType) and len(space) == 4:  # (1, O, 1, 1): one value per o
        return src if t.shape[0] == 1 and t.shape[1] in (1, space[1]) and \
            t.shape[2:] == (1, 1) else None
    if not isinstance(t, TensorType) or t.rank != len(space) or DYN in t.shape[1:]:
        return None
    ones = all(d == 1 for d in t.shape[1:]) if len(space) == 3 else all(d == 1 for d in t.shape)
    # a run-time count of planes: the host broadcasts it to the space's planes
    return src if ones and (t.shape[0] in (1, space[0]) or t.shape[0] == DYN and
                            len(space) == 3) else None


def _broadcast_planes(v: Value, axis: int) -> Value | None:
    """The run-time count of planes a plane window ``v`` is broadcast over (the
    broadcast's operand for ``axis``: 0, or 1 after the images), else None."""
    if not (isinstance(v, OpResult) and isinstance(v.op, tensor.BroadcastOp)):
        return None
    shape = v.type.shape  # type: ignore[attr-defined]
    dims = list(v.op.operand_values[1:])
    if shape[axis] != DYN or len(dims) != sum(d == DYN for d in shape):
        return None
    return dims[sum(d == DYN for d in shape[:axis])]


def _window_view(v: Value) -> tuple[Operation, mem.SubviewOp] | None:
    """``(snapshot, view)`` when ``v`` is a snapshot of a subview (or a plane window
    broadcast over the planes: ``broadcast(reshape(snapshot))``, a multi-channel
    convolution's ``x[c, i + a, j + b]`` batched over its output planes), else None."""
    if isinstance(v, OpResult) and isinstance(v.op, tensor.BroadcastOp):
        src = v.op.operand_values[0]
        if not (isinstance(src, OpResult) and isinstance(src.op, tensor.ReshapeOp)):
            return None
        inner = src.op.operand_values[0]
        shape = tuple(inner.type.shape)  # type: ignore[attr-defined]
        # (rows, cols) -> (1, rows, cols); (N, rows, cols) -> (N, 1, rows, cols)
        want = (1, *shape) if len(shape) == 2 else (*shape[:1], 1, *shape[1:])
        if tuple(src.type.shape) != want:  # type: ignore[attr-defined]
            return None
        v = inner
    if not (isinstance(v, OpResult) and isinstance(v.op, mem.ToTensorOp)):
        return None
    src = v.op.operand_values[0]
    if not (isinstance(src, OpResult) and isinstance(src.op, mem.SubviewOp)):
        return None
    return v.op, src.op


def _plane_dropped(view: mem.SubviewOp) -> str:
    """How ``view`` is a fixed plane: ``"plane"``, one plane of a rank-3 buffer (axis 0
    dropped) or of a static rank-4 one (image and channel dropped: plane ``n * C + c``);
    ``"images"``, one channel of every image of a static rank-4 buffer (axis 1 dropped,
    all of axis 0); else ``""``."""
    drop = tuple(view.attributes.get("drop") or ())
    src = view.source.type
    if src.rank == 4 and DYN in src.shape:  # type: ignore[attr-defined]
        # run-time extents: the images from 0 (their count is the space's, which the
        # host checks against the array's)
        offsets, sizes, _ = view.parts()
        return "images" if drop == (1,) and static_int(offsets[0]) == 0 else ""
    if src.rank == 4:  # type: ignore[attr-defined]
        offsets, sizes, _ = view.parts()
        if drop == (0, 1):
            return "plane"
        whole = static_int(offsets[0]) == 0 and static_int(sizes[0]) == src.shape[0]  # type: ignore[attr-defined]
        return "images" if drop == (1,) and whole else ""
    return "plane" if drop == (0,) and src.rank == 3 else ""  # type: ignore[attr-defined]


def _offsets(view: mem.SubviewOp, space: tuple[int, ...],
             m: StencilMatch | None = None) -> list[int] | None:
    """The view's constant offsets when it is a unit-step window of ``space``'s shape
    into a contiguous static buffer (full rank, or one plane of a rank-3 buffer: its
    rows and columns), else None.  With a run-time space (``m.sizes`` set) the buffer
    may have run-time extents and every window must have the same size values (the
    first one sets them); the offsets stay constants, at least 0."""
    src = window_root(view)[0].type
    dynamic = m is not None and DYN in space
    plane = _plane_dropped(view)
    if not isinstance(src, MemRefType) or not passable_base(view) or \
            DYN in src.shape and not dynamic or view.attributes.get("drop") and not plane or \
            src.rank != len(space) and not plane:
        return None
    offsets, sizes, steps = view.parts()
    offs = [window_start(view, a, o) for a, o in enumerate(offsets)]
    axis = _channel_axis(view, m)
    if axis is not None:  # plane c of the channel loop: the base's ``channel`` plane 0
        offs[axis] = 0
    if any(o is None for o in offs) or any(static_int(s) != 1 for s in steps):
        return None
    offs = [o + d for o, d in zip(offs, window_root(view)[1], strict=True)]  # type: ignore[operator]
    kept = [n for a, n in enumerate(sizes) if a not in view.attributes["drop"]] if plane \
        else list(sizes)
    if plane and len(kept) == 2 and src.rank == 4:  # image n, channel c: plane n * C + c
        offs = [offs[0] * src.shape[1] + offs[1], *offs[2:]]  # type: ignore[operator]
    if dynamic:
        assert m is not None
        m.sizes = kept if m.sizes is None else m.sizes
        if any(o < 0 for o in offs) or len(kept) != len(m.sizes) or \
                not all(same_size(a, b) for a, b in zip(kept, m.sizes, strict=True)):  # type: ignore[operator]
            return None
    elif [static_int(s) for s in kept] != (list(space[-len(kept):]) if len(kept) < 3 else
                                           [space[0], *space[-2:]] if len(kept) == 3 else
                                           list(space)):
        return None
    if len(kept) == 4 and (offs[0] or offs[1] or not dynamic and
                           static_int(sizes[1]) != src.shape[1]):  # type: ignore[attr-defined]
        return None  # not whole planes n * C + c of the base (the host checks at run time)
    return offs  # type: ignore[return-value]


def _channel_axis(view: mem.SubviewOp, m: StencilMatch | None) -> int | None:
    """The axis of ``view`` whose offset is the channel loop's index (``m.channel``):
    the dropped plane of a rank-3 base (``x[c, a:..., b:...]``) or the dropped channel of
    a rank-4 one (``x[:, c, a:..., b:...]``), else None."""
    if m is None or m.channel is None:
        return None
    drop = tuple(view.attributes.get("drop") or ())
    axis = {(0,): 0, (1,): 1}.get(drop)
    rank = view.source.type.rank  # type: ignore[attr-defined]
    if axis is None or rank != axis + 3 or view.parts()[0][axis] is not m.channel:
        return None
    return axis


def _unwritten_between(first: Operation, group: FusionGroupOp) -> bool:
    """Nothing between ``first`` and ``group`` (one block) writes memory (an op with
    regions might, unless it is pure: a fused group)."""
    block = group.parent
    if block is None:  # a detached grouping probe: the marked group is checked again
        return True
    if first.parent is not block:
        return False
    ops = block.ops
    start, end = ops.index(first), ops.index(group)
    return start < end and not any(op.has_trait("writes") or
                                   op.region_list and not op.has_trait("pure")
                                   for op in ops[start + 1:end])


def _base(bases: list[StencilBase], value: Value, plane: int, kind: str,
          channel: bool = False) -> int:
    """The base of ``value`` (one per fixed plane of ``kind``: each is its own halo
    buffer; a plane of the channel loop is another plane than a static one)."""
    fixed, images = bool(kind), kind == "images"
    for k, b in enumerate(bases):
        if b.value is value and (b.fixed, b.images, b.channel) == (fixed, images, channel) \
                and (not fixed or b.plane == plane):
            return k
    shape = value.type.shape  # type: ignore[attr-defined]
    bases.append(StencilBase(value, shape, plane, fixed, images=images, channel=channel))
    return len(bases) - 1


def _add_window(m: StencilMatch, index: int, source: Value, offs: list[int],
                kind: str = "", channel: bool = False) -> bool:
    plane = offs[-3] if len(offs) >= 3 else 0
    k = _base(m.bases, source, plane, kind, channel)
    b = m.bases[k]
    row, col = offs[-2], offs[-1]
    if b.views and plane != b.plane:
        return False
    b.plane = plane
    b.rows = (row, row) if not b.views else (min(b.rows[0], row), max(b.rows[1], row))
    b.cols = (col, col) if not b.views else (min(b.cols[0], col), max(b.cols[1], col))
    b.views += 1
    m.windows.append(Window(index, k, row, col))
    return True


def match_stencil(group: FusionGroupOp, channel: Value | None = None,
                  skip: frozenset[int] = frozenset()) -> StencilMatch | None:
    """The windows of ``group``'s inputs when it is a stencil (module docstring).
    ``channel``: the index of a ``channels`` loop around the group, whose windows may
    be its plane (``StencilBase.channel``); inputs ``skip`` are the caller's (the
    channel loop's accumulator, ``channel_stencil``)."""
    types = [r.type for r in group.result_values]
    if not types or not all(isinstance(t, TensorType) for t in types):
        return None
    space = types[0].shape  # type: ignore[union-attr]
    dynamic = DYN in space
    if len(space) not in (2, 3, 4) or any(t.shape != space for t in types):  # type: ignore[union-attr]
        return None
    m = StencilMatch((1, *space) if len(space) == 2 else tuple(space[-3:]),
                     outer=space[0] if len(space) == 4 else 1, channel=channel)
    for index, v in enumerate(group.inputs):
        if isinstance(v.type, ScalarType) or index in skip:
            continue
        plane = _per_plane(v, space)
        if plane is not None:
            m.per_plane[index] = plane
            continue
        found = _window_view(v)
        if found is None and isinstance(v.type, TensorType) and \
                (v.type.shape == space if not dynamic else v.type.rank == len(space)):
            # an array of the space itself (at run time: the host checks that it spans
            # the space, as for every window)
            _add_window(m, index, v, [0] * len(space))
            continue
        offs = _offsets(found[1], space, m) if found is not None else None
        if dynamic and offs is not None and _plane_dropped(found[1]):  # type: ignore[index]
            m.planes = m.planes or _broadcast_planes(v, len(space) - 3)
        if found is None or offs is None or not _unwritten_between(found[0], group) or \
                not _add_window(m, index, window_root(found[1])[0], offs, _plane_dropped(found[1]),
                                _channel_axis(found[1], m) is not None):
            return None
    if dynamic and any(b.fixed for b in m.bases) and m.planes is None:
        return None  # fixed planes over a run-time count of planes that is not known
    # (one window of each base is elementwise work, a vector kernel's; in a channel
    # loop, a 1x1 convolution's, it is the channel kernel's one tap)
    m.collapsed = len(space) == 4 and channel is None and \
        not any(b.fixed or b.channel for b in m.bases)
    if not any(b.views >= 2 or b.channel for b in m.bases) or \
            len(space) == 4 and not (m.collapsed or _images_beside_planes(m.bases)) or \
            len(space) < 4 and any(b.images for b in m.bases):
        return None  # rank 4: the images walked by the units, the channels fixed or walked
    return m


def _images_beside_planes(bases: list[StencilBase]) -> bool:
    """Rank 4, not collapsed: fixed channels of every image (``x[:, c, ...]``), and
    maybe bases of the space's own planes (``res[n, o, i, j]``: whole planes ``n * O +
    o``, ``_offsets``), which the kernel copies per plane (``plane_bases``)."""
    return any(b.images for b in bases) and \
        all(b.images or not (b.fixed or b.channel) for b in bases)


@register_pass
class StencilWindows(Pass):
    """Mark stencil groups (``stencil = true``) for the AscendC stencil kernel."""

    name = "stencil-windows"
    description = __doc__ or ""

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        for fn in module.functions:
            for op in [op for block in top_blocks(fn.entry) for op in block.ops]:
                if isinstance(op, FusionGroupOp) and match_stencil(op) is not None:
                    op.attributes["stencil"] = True


__all__ = ["StencilBase", "StencilMatch", "StencilWindows", "Window", "match_stencil"]
