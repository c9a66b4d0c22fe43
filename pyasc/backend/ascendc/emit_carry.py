"""Arrays carried by loops and branches in scalar kernels (``acc = acc + x[i]``).

At loop level a ``loop.for``/``while``/``if`` may carry or produce memrefs: each
iteration (branch) yields a fresh buffer.  In C++ the buffer of one iteration goes out
of scope, so each carried array gets a *carrier*: a local array declared before the
loop, bound to the loop's block argument and result.  The initial value and every
yielded array are copied into it element by element.  When a yielded array shares
storage with a carrier (``a, b = b, a`` or a view of the carried array) the copies go
through temporaries first.  Carriers are static; up to ``LOCAL_LIMIT`` bytes of them are
local arrays, the rest live in GM (``scalar_plan.place_carriers``): a region result in
its own result array, any other in the block's scratch slice.
"""

from __future__ import annotations

from pyasc.backend.ascendc.scalar_context import (
    MemDesc,
    ScalarContext,
    c_add,
    c_mul,
    contiguous_strides,
)
from pyasc.backend.ascendc.scalar_plan import GmArray
from pyasc.backend.ascendc.tiles import ctype, storage_type
from pyasc.ir.core import Operation, Value
from pyasc.ir.types import MemRefType

Target = str | MemDesc
"""Where a carried value lives: a mutable C++ scalar or a carrier array."""


def slot(em: ScalarContext, v: Value, init: Value | None, hint: str, op: Operation) -> Target:
    """A mutable home for ``v`` (a scalar variable or a carrier array), set to ``init``."""
    if not isinstance(v.type, MemRefType):
        return em.mutable(v, em.get(init) if init is not None else None, hint)
    home = em.k.carriers.get(v)
    if home is not None:
        d = gm_array(em, home, v.type, op)
    else:
        d = local_array(em, v.type, v.name_hint or f"{hint}_arr", op)
    em.mems[v] = d
    if init is not None:
        copy(em, d, em.mems[init], op)
    return d


def bind(em: ScalarContext, v: Value, target: Target) -> None:
    """Make block argument ``v`` read ``target``."""
    if isinstance(target, MemDesc):
        em.mems[v] = target
    else:
        em.vals[v] = target


def local_array(em: ScalarContext, t: MemRefType, hint: str, op: Operation) -> MemDesc:
    """A contiguous local array of the static type ``t``."""
    name = em.names.new(hint)
    sizes = [str(d) for d in t.shape]
    em.w.line(f"{ctype(t.element)} {name}[{max(1, t.num_elements() or 1)}];", op.loc,
              directive=False)
    return MemDesc(name, False, t.element, "0", sizes, contiguous_strides(sizes))


def gm_array(em: ScalarContext, arr: GmArray, t: MemRefType, op: Operation) -> MemDesc:
    """The GM array ``arr`` (static type ``t``) bound as a contiguous carrier; a
    per-block array at this block's slice."""
    sizes = [str(d) for d in t.shape]
    n = max(1, t.num_elements() or 1)
    st = storage_type(t.element)
    at = f" + GetBlockIdx() * {arr.slice}" if arr.per_block else ""
    em.w.line(f"{arr.name}Gm.SetGlobalBuffer((__gm__ {st}*){arr.name}{at}, {n});", op.loc,
              directive=False)
    return MemDesc(f"{arr.name}Gm", True, t.element, "0", sizes, contiguous_strides(sizes))


def _same(a: MemDesc, b: MemDesc) -> bool:
    return (a.base, a.offset, a.sizes, a.strides) == (b.base, b.offset, b.sizes, b.strides)


def _read(d: MemDesc, off: str) -> str:
    if not d.gm:
        return f"{d.base}[{off}]"
    text = f"{d.base}.GetValue({off})"
    return f"({text} != 0)" if d.elem.is_bool else text


def _write(d: MemDesc, off: str, value: str) -> str:
    if not d.gm:
        return f"{d.base}[{off}] = {value};"
    if d.elem.is_bool:
        value = f"static_cast<{storage_type(d.elem)}>({value})"
    return f"{d.base}.SetValue({off}, {value});"


def copy(em: ScalarContext, dst: MemDesc, src: MemDesc, op: Operation) -> None:
    """Element-wise ``dst[...] = src[...]`` (same shape), as nested C++ loops."""
    if _same(dst, src):
        return
    w, idx = em.w, []
    depth = w.depth
    for size in dst.sizes:
        i = em.names.new("c")
        w.line(f"for (int64_t {i} = 0; {i} < {size}; ++{i}) {{", op.loc, directive=False)
        w.depth += 1
        idx.append(i)
    s_off, d_off = src.offset, dst.offset
    for i, ss, ds in zip(idx, src.strides, dst.strides, strict=True):
        s_off, d_off = c_add(s_off, c_mul(i, ss)), c_add(d_off, c_mul(i, ds))
    w.line(_write(dst, d_off, _read(src, s_off)), op.loc, directive=dst.gm or src.gm)
    while w.depth > depth:
        w.depth -= 1
        w.line("}")


def assign(em: ScalarContext, targets: list[Target], values: list[Value],
           op: Operation) -> list[tuple[str, Value]]:
    """Copy the yielded arrays into their carriers; returns the scalar pairs left."""
    arrays = [(t, em.mems[v]) for t, v in zip(targets, values, strict=True)
              if isinstance(t, MemDesc)]
    homes = {t.base for t, _ in arrays}
    staged = []
    for t, src in arrays:
        if src.base in homes and not _same(t, src):  # shares storage with a carrier
            tmp = local_array(em, _static_type(t), t.base + "_next", op)
            copy(em, tmp, src, op)
            src = tmp
        staged.append((t, src))
    for t, src in staged:
        copy(em, t, src, op)
    return [(t, v) for t, v in zip(targets, values, strict=True) if isinstance(t, str)]


def store_carried_results(em: ScalarContext, ret: Operation) -> None:
    """Copy region results that live in carriers into their GM result arrays (declared
    by the prologue; block 0 writes, every block computed the same carrier)."""
    pending = [(a, a.value) for a in em.k.arrays if a.source == "result" and
               a.value in em.mems and em.mems[a.value].base != f"{a.name}Gm"]
    if not pending:
        return
    with em.w.block("if (GetBlockIdx() == 0)", ret.loc, directive=False):
        for arr, v in pending:
            src = em.mems[v]  # type: ignore[index]
            t = v.type  # type: ignore[union-attr]
            assert isinstance(t, MemRefType)
            em.w.line(f"{arr.name}Gm.SetGlobalBuffer((__gm__ {storage_type(t.element)}*)"
                      f"{arr.name}, {max(1, t.num_elements() or 1)});")
            dst = MemDesc(f"{arr.name}Gm", True, t.element, "0", list(src.sizes),
                          contiguous_strides(list(src.sizes)))
            copy(em, dst, src, ret)


def _static_type(d: MemDesc) -> MemRefType:
    return MemRefType(tuple(int(s) for s in d.sizes), d.elem)


__all__ = ["Target", "assign", "bind", "copy", "local_array", "slot", "store_carried_results"]
