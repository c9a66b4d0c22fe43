"""C++ text of a scalar kernel: loop-level IR as AscendC scalar code.

GM arrays are ``GlobalTensor``s read with ``GetValue`` and written with ``SetValue``;
small temporaries are local arrays.  A memref value is a compile-time descriptor
(``scalar_context.MemDesc``: base, offset, extents and strides as C++ expressions), so
views cost nothing.  Loops, ifs and whiles become C++ control flow with loop-carried values in
mutable variables; ``func.assert`` records its number (and the values it reports) in the
block's status record and ends the kernel.  Op emitters are a table ``{op class: fn}``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyasc.backend.ascendc import cexpr
from pyasc.backend.ascendc.emit_carry import store_carried_results
from pyasc.backend.ascendc.emit_control import CONTROL_EMITTERS
from pyasc.backend.ascendc.scalar_context import (
    Emit,
    MemDesc,
    ScalarContext,
    c_add,
    c_mul,
    contiguous_strides,
)
from pyasc.backend.ascendc.scalar_math import math_expr
from pyasc.backend.ascendc.scalar_plan import GmArray, ScalarKernel, _Names
from pyasc.backend.ascendc.tiles import ctype, storage_type
from pyasc.backend.ascendc.unsupported import unsupported
from pyasc.ir.core import Operation, Value
from pyasc.ir.ops import func, mem
from pyasc.ir.types import DYN, MemRefType, ScalarType


@dataclass
class Param:
    """One parameter of a scalar kernel: an ``array`` (``GM_ADDR``), the ``dim`` extent
    ``axis`` of array input ``index``, or the ``scalar`` input ``index``."""

    ctype: str
    name: str
    role: str
    array: GmArray | None = None
    index: int = -1
    axis: int = -1


def kernel_params(k: ScalarKernel) -> list[Param]:
    """The kernel's parameters in order: arrays, run-time extents, scalars."""
    out = [Param("GM_ADDR", a.name, "array", a) for a in k.arrays]
    for a in k.arrays:
        if a.source == "input":
            t = a.value.type  # type: ignore[union-attr]
            out += [Param("int64_t", f"{a.name}_d{axis}", "dim", index=a.index, axis=axis)
                    for axis, d in enumerate(t.shape) if d == DYN]
    for i, arg in enumerate(k.fn.entry.args):
        if isinstance(arg.type, ScalarType) and arg.uses:  # folded away: not passed
            out.append(Param(ctype(arg.type), arg.name_hint or f"arg{i}", "scalar", index=i))
    names = _Names()
    for p in out:
        p.name = names.new(p.name)
    return out


class ScalarEmitter(ScalarContext):
    """Writes one :class:`ScalarKernel`; collects the math helpers it calls."""

    def emit(self) -> None:
        k, w = self.k, self.w
        params = kernel_params(k)
        sig = ", ".join(f"{p.ctype} {p.name}" for p in params)
        w.raw(f"// {k.name}: scalar code for {_where(k)} ({k.reason}); "
              f"{'split across blocks' if k.parallel else 'one block'}")
        w.raw(f'extern "C" __global__ __aicore__ void {k.name}({sig})')
        w.raw("{")
        w.depth += 1
        self.names.taken.update(p.name for p in params)
        self._prologue(params)
        self.block(k.fn.entry)
        emit_flush(self)
        w.depth -= 1
        w.raw("}")
        w.raw("")

    def _prologue(self, params: list[Param]) -> None:
        w, k = self.w, self.k
        self.flush_gm = _flush_tensor(params)
        dims = {(p.index, p.axis): p.name for p in params if p.role == "dim"}
        for p in params:
            if p.role == "scalar":
                self.vals[k.fn.entry.args[p.index]] = p.name
            a = p.array
            if a is None or a.source == "arena":
                continue
            t = storage_type(a.elem)
            w.line(f"GlobalTensor<{t}> {p.name}Gm;")
            if a.source == "input":
                assert a.value is not None
                sizes = [str(d) if d != DYN else dims[(a.index, ax)]
                         for ax, d in enumerate(a.value.type.shape)]  # type: ignore[union-attr]
                _bind(self, a.value, p.name, a.elem, sizes)
            elif a.source == "scalar":
                w.line(f"{p.name}Gm.SetGlobalBuffer((__gm__ {t}*){p.name}, 1);")
            elif a.source == "status":
                n = "GetBlockNum()" if k.status_stride == 1 else \
                    f"GetBlockNum() * {k.status_stride}"
                w.line(f"{p.name}Gm.SetGlobalBuffer((__gm__ {t}*){p.name}, {n});")
        if k.arena:
            w.line("int64_t arenaTop = 0;  // bytes of the block's GM workspace in use")

    def block_op(self, op: Operation) -> None:
        """Emit ``op`` with its emitter from :data:`EMITTERS` (nested regions too)."""
        fn = EMITTERS.get(type(op))
        if fn is None and type(op).__module__ in _SCALAR_MODULES:
            fn = _emit_scalar_op
        if fn is None:
            raise unsupported(f"'{op.name}' in scalar device code", op.loc)
        fn(self, op)


_SCALAR_MODULES = {"pyasc.ir.ops.arith", "pyasc.ir.ops.math"}


def _flush_tensor(params: list[Param]) -> tuple[str, str] | None:
    """(name, element type) of the GlobalTensor the flush names: one the prologue binds
    when there is one (ENTIRE_DATA_CACHE ignores its address: the docs)."""
    declared = [(p.name + "Gm", storage_type(p.array.elem), p.array.source) for p in params
                if p.array is not None and p.array.source != "arena"]
    bound = [d for d in declared if d[2] in ("input", "scalar", "status")]
    first = (bound or declared or [None])[0]
    return None if first is None else first[:2]


def emit_flush(em: ScalarContext) -> None:
    """Write this block's scalar GM writes back before the kernel ends (at its end and
    before each early ``return``): ``SetValue`` writes sit in the scalar unit's data
    cache, which the host and later kernels do not see (``DataCacheCleanAndInvalid``
    docs, asc-devkit ``include/basic_api/kernel_operator_cache_intf.h``: ``template
    <typename T, CacheLine entireType> void DataCacheCleanAndInvalid(const
    GlobalTensor<T>& dst)``).  The whole-cache form: one call per block, whatever
    lines the block wrote (scatters included); the per-line form would need a call per
    64-byte line of every written range.  The form without ``DcciDst`` is the one every
    SoC with the API declares (soc.py); a SoC without it gets no call."""
    gm = em.flush_gm
    if em.k.dcache_flush is None or gm is None:
        return
    name, t = gm
    em.w.line(f"DataCacheCleanAndInvalid<{t}, {em.k.dcache_flush}>({name});  "
              "// scalar GM writes leave the data cache")


def _bind(em: ScalarContext, v: Value, name: str, elem: ScalarType, sizes: list[str],
          slice_: int = 0) -> None:
    """Memref ``v`` as the GM array of parameter ``name`` (contiguous, extents ``sizes``;
    ``slice_``: this block's slice, of that many elements, of a per-block array)."""
    total = "1"
    for s in sizes:
        total = c_mul(total, s)
    at = f" + GetBlockIdx() * {slice_}" if slice_ else ""
    em.w.line(f"{name}Gm.SetGlobalBuffer((__gm__ {storage_type(elem)}*){name}{at}, "
              f"{total});")
    em.mems[v] = MemDesc(name + "Gm", True, elem, "0", sizes, contiguous_strides(sizes))


def _where(k: ScalarKernel) -> str:
    import os

    return f"{os.path.basename(k.loc.file)}:{k.loc.line}" if k.loc.known else "<unknown>"


# -------------------------------------------------------------------- scalar ops


def _emit_scalar_op(em: ScalarContext, op: Operation) -> None:
    if op.name == "arith.constant":
        return  # literals are written where they are used
    args = [em.get(v) for v in op.operand_values]
    expr = cexpr.scalar_expr(op, args)
    if expr is None:
        expr = math_expr(op, args, em.helpers)
    em.declare(op.result, expr, op, op.name.split(".")[-1])


# -------------------------------------------------------------------- memory


def _emit_alloc(em: ScalarContext, op: Operation) -> None:
    t = op.result.type
    assert isinstance(t, MemRefType)
    dims = iter(em.get(d) for d in op.operand_values)
    sizes = [str(d) if d != DYN else next(dims) for d in t.shape]
    arr = em.k.array_of(op.result)
    if arr is not None:
        _bind(em, op.result, arr.name, t.element, sizes, arr.slice if arr.per_block else 0)
        return
    if op.result in em.k.arena:
        _arena_alloc(em, op, t, sizes)
        return
    name = em.names.new(op.result.name_hint or "buf")
    em.w.line(f"{ctype(t.element)} {name}[{max(1, t.num_elements() or 1)}];", op.loc,
              directive=False)
    em.mems[op.result] = MemDesc(name, False, t.element, "0", sizes, contiguous_strides(sizes))


def _arena_alloc(em: ScalarContext, op: Operation, t: MemRefType, sizes: list[str]) -> None:
    """A temporary of run-time size: the next slice of the block's GM workspace."""
    from pyasc.backend.ascendc.scalar_plan import ARENA_BYTES

    ws, status = em.k.workspace, em.k.status
    assert ws is not None and status is not None
    name = em.names.new(op.result.name_hint or "tmp")
    total = "1"
    for s in sizes:
        total = c_mul(total, s)
    st = storage_type(t.element)
    code = len(em.k.asserts) + 1
    w = em.w
    w.line(f"const int64_t {name}At = arenaTop;", op.loc)
    w.line(f"arenaTop += ({total} * static_cast<int64_t>(sizeof({st})) + 31) / 32 * 32;")
    with w.block(f"if (arenaTop > {ARENA_BYTES})"):
        w.line(f"{status.name}Gm.SetValue({_status_at(em, 0)}, {code});  // workspace "
               "overflow")
        emit_flush(em)
        w.line("return;")
    w.line(f"GlobalTensor<{st}> {name}Gm;")
    w.line(f"{name}Gm.SetGlobalBuffer((__gm__ {st}*)({ws.name} + GetBlockIdx() * "
           f"{ARENA_BYTES}LL + {name}At), {total});", op.loc)
    em.mems[op.result] = MemDesc(f"{name}Gm", True, t.element, "0", sizes,
                                 contiguous_strides(sizes))


def _emit_constant(em: ScalarContext, op: Operation) -> None:
    arr = em.k.array_of(op.result)
    assert arr is not None
    t = op.result.type
    _bind(em, op.result, arr.name, t.element, [str(d) for d in t.shape])  # type: ignore


def _emit_load(em: ScalarContext, op: Operation) -> None:
    d = em.mems[op.operand_values[0]]
    off = em.offset(d, op.operand_values[1:])
    read = f"{d.base}.GetValue({off})" if d.gm else f"{d.base}[{off}]"
    if d.gm and d.elem.is_bool:
        read = f"({read} != 0)"
    name = em.names.new(op.result.name_hint or "x")
    em.w.line(f"const {ctype(op.result.type)} {name} = {read};", op.loc,  # type: ignore
              directive=d.gm)
    em.vals[op.result] = name


def _emit_store(em: ScalarContext, op: Operation) -> None:
    value, dest, *idx = op.operand_values
    d = em.mems[dest]
    off = em.offset(d, idx)
    v = em.get(value)
    if d.gm:
        if d.elem.is_bool:
            v = f"static_cast<uint8_t>({v})"
        em.w.line(f"{d.base}.SetValue({off}, {v});", op.loc)
    else:
        em.w.line(f"{d.base}[{off}] = {v};", op.loc, directive=False)


def _emit_dim(em: ScalarContext, op: Operation) -> None:
    em.vals[op.result] = em.mems[op.operand_values[0]].sizes[op.attributes["axis"]]


def _emit_subview(em: ScalarContext, op: Operation) -> None:
    src = em.mems[op.operand_values[0]]
    r = len(src.sizes)
    rest = [em.get(v) for v in op.operand_values[1:]]
    offs, sizes, steps = rest[:r], rest[r:2 * r], rest[2 * r:]
    off = src.offset
    for o, s in zip(offs, src.strides, strict=True):
        off = c_add(off, c_mul(o, s))
    if not off.lstrip("-").isdigit():
        name = em.names.new("view_off")
        em.w.line(f"const int64_t {name} = {off};", op.loc, directive=False)
        off = name
    drop = set(op.attributes.get("drop", ()))
    strides = [c_mul(s, st) for s, st in zip(src.strides, steps, strict=True)]
    em.mems[op.result] = MemDesc(src.base, src.gm, src.elem, off,
                                 [s for a, s in enumerate(sizes) if a not in drop],
                                 [s for a, s in enumerate(strides) if a not in drop])


def _emit_transpose(em: ScalarContext, op: Operation) -> None:
    src = em.mems[op.operand_values[0]]
    perm = op.attributes["perm"]
    em.mems[op.result] = MemDesc(src.base, src.gm, src.elem, src.offset,
                                 [src.sizes[p] for p in perm], [src.strides[p] for p in perm])


def _emit_reshape(em: ScalarContext, op: Operation) -> None:
    src = em.mems[op.operand_values[0]]
    t = op.result.type
    dims = iter(em.get(d) for d in op.operand_values[1:])
    sizes = [str(d) if d != DYN else next(dims) for d in t.shape]  # type: ignore[union-attr]
    em.mems[op.result] = MemDesc(src.base, src.gm, src.elem, src.offset, sizes,
                                 contiguous_strides(sizes))


def _emit_nothing(em: ScalarContext, op: Operation) -> None:
    """``mem.dealloc``: host-allocated arrays are freed by the host; locals by scope."""


# -------------------------------------------------------------------- checks and return


def _emit_assert(em: ScalarContext, op: Operation) -> None:
    status = em.k.status
    assert status is not None and isinstance(op, func.AssertOp)
    code = em.k.asserts.index(op) + 1
    with em.w.block(f"if (!({em.get(op.cond)}))", op.loc):
        em.w.line(f"{status.name}Gm.SetValue({_status_at(em, 0)}, {code});", op.loc)
        for j, v in enumerate(op.values):  # the values the message names
            em.w.line(f"{status.name}Gm.SetValue({_status_at(em, 1 + j)}, "
                      f"static_cast<int64_t>({em.get(v)}));", op.loc)
        emit_flush(em)
        em.w.line("return;")


def _status_at(em: ScalarContext, k: int) -> str:
    """The index of slot ``k`` of this block's status record."""
    stride = em.k.status_stride
    base = "GetBlockIdx()" if stride == 1 else f"GetBlockIdx() * {stride}"
    return base if k == 0 else f"{base} + {k}"


def _emit_return(em: ScalarContext, op: Operation) -> None:
    store_carried_results(em, op)
    writes = []
    for j, v in enumerate(op.operand_values):
        arr = next((a for a in em.k.arrays if a.source == "scalar" and a.index == j), None)
        if arr is not None:
            val = em.get(v)
            if arr.elem.is_bool:
                val = f"static_cast<uint8_t>({val})"
            writes.append(f"{arr.name}Gm.SetValue(0, {val});")
    if writes:
        with em.w.block("if (GetBlockIdx() == 0)", op.loc):
            for text in writes:
                em.w.line(text, op.loc)


EMITTERS: dict[type, Emit] = {
    mem.AllocOp: _emit_alloc, mem.ConstantOp: _emit_constant, mem.LoadOp: _emit_load,
    mem.StoreOp: _emit_store, mem.DimOp: _emit_dim, mem.SubviewOp: _emit_subview,
    mem.TransposeOp: _emit_transpose, mem.ReshapeOp: _emit_reshape,
    mem.DeallocOp: _emit_nothing, func.AssertOp: _emit_assert, func.ReturnOp: _emit_return,
}
EMITTERS.update(CONTROL_EMITTERS)

__all__ = ["EMITTERS", "MemDesc", "Param", "ScalarEmitter", "emit_flush", "kernel_params"]
