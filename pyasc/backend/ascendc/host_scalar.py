"""Host side of a scalar kernel: buffers, parameters, block count, launch and results.

The host allocates the kernel's array results and large temporaries (their extents are
recomputed on the host by cloning the loop-level scalar ops that define them), passes
constant arrays, one-element buffers for scalar results and a zeroed status record per
block, launches, checks the status and reads the results back.  A kernel split across
blocks launches ``min(cores, trip count)`` blocks when the loop bounds are host values,
else one per core.
"""

from __future__ import annotations

from pyasc.backend.ascendc.emit_scalar import kernel_params
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.ops import CheckStatusOp
from pyasc.backend.ascendc.scalar_plan import ARENA_BYTES, GmArray, ScalarKernel
from pyasc.backend.ascendc.soc import SoC
from pyasc.ir.core import BlockArgument, DenseArray, Operation, OpResult, Value
from pyasc.ir.ops import arith, func, mem
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import DYN, MemRefType, ScalarType, TensorType, Type, f32, f64, i64, u8


class NotHostComputable(Exception):
    """A loop-level value the host cannot compute before the launch."""


class _HostValues:
    """Clones the loop-level scalar computations of extents and bounds into the host."""

    def __init__(self, hb: HostBuilder, k: ScalarKernel, inputs: list[Value]) -> None:
        self.hb, self.k, self.inputs = hb, k, inputs
        self.memo: dict[Value, Value] = {}

    def get(self, v: Value) -> Value:
        if v in self.memo:
            return self.memo[v]
        if isinstance(v, BlockArgument):
            if v.block is not self.k.fn.entry or not isinstance(v.type, ScalarType):
                raise NotHostComputable(str(v))
            out = self.inputs[v.index]
        else:
            out = self._op_result(v)
        self.memo[v] = out
        return out

    def _op_result(self, v: Value) -> Value:
        assert isinstance(v, OpResult)
        op: Operation = v.op
        if isinstance(op, mem.DimOp):
            src = op.operand_values[0]
            if not isinstance(src, BlockArgument) or src.block is not self.k.fn.entry:
                raise NotHostComputable(op.name)
            return self.hb.dim(self.inputs[src.index], op.attributes["axis"])
        if op.region_list or op.parent is not self.k.fn.entry or \
                type(op).__module__ not in ("pyasc.ir.ops.arith", "pyasc.ir.ops.math") or \
                not isinstance(v.type, ScalarType):
            raise NotHostComputable(op.name)
        mapping = {x: self.get(x) for x in op.operand_values}
        return self.hb.insert(op.clone(mapping)).result


def _array_arg(hb: HostBuilder, hv: _HostValues, k: ScalarKernel, a: GmArray,
               inputs: list[Value], block_dim: Value) -> Value:
    if a.source == "input":
        return inputs[a.index]
    if a.source == "const":
        assert isinstance(a.value, OpResult)
        dense = a.value.op.attributes["value"]
        assert isinstance(dense, DenseArray)
        return hb.insert(arith.ConstantOp.new(dense, dense.type)).result
    if a.source == "scalar":
        return hb.alloc((1,), a.elem, [hb.const(1)])
    if a.source == "status":
        size = hb.mul(block_dim, k.status_stride) if k.status_stride > 1 else block_dim
        buf = hb.alloc((DYN,), i64, [size])
        hb.insert(mem.FillOp([hb.const(0, i64), buf], []))
        return buf
    if a.source == "arena":
        return hb.alloc((DYN,), u8, [hb.mul(block_dim, ARENA_BYTES)])
    if a.source == "scratch":  # one static slice per block, whole cache lines
        return hb.alloc((DYN,), a.elem, [hb.mul(block_dim, a.slice)])
    assert isinstance(a.value, OpResult)  # result or temp: a top-level mem.alloc, or
    t = a.value.type                      # a loop's or branch's carried static array
    assert isinstance(t, MemRefType)
    extents = a.value.op.operand_values if isinstance(a.value.op, mem.AllocOp) else []
    try:
        dims = [hv.get(d) for d in extents]
    except NotHostComputable:
        from pyasc.backend.ascendc.unsupported import unsupported

        raise unsupported("an array whose size depends on data computed in device code "
                          "(the host must compute array sizes before the launch)",
                          a.value.op.loc) from None
    it = iter(dims)
    full = [hb.const(d) if d != DYN else next(it) for d in t.shape]
    return hb.alloc(t.shape, t.element, full)


def _block_dim(hb: HostBuilder, hv: _HostValues, k: ScalarKernel, soc: SoC) -> Value:
    lp = k.parallel
    if lp is None:
        return hb.const(1)
    step = constant_value(lp.step)
    try:
        if isinstance(step, int) and step < 0:
            span = hb.binary(arith.SubOp, hv.get(lp.lower), hv.get(lp.upper))
            step = -step
        else:
            span = hb.binary(arith.SubOp, hv.get(lp.upper), hv.get(lp.lower))
        step_v = step if isinstance(step, int) else hv.get(lp.step)
        trip = hb.ceil_div(hb.max(span, 0), hb.max(step_v, 1))
    except NotHostComputable:
        return hb.const(soc.vector_blocks)
    return hb.max(hb.min(trip, soc.vector_blocks), 1)


def _written_inputs(k: ScalarKernel) -> set[int]:
    from pyasc.ir.passes.effects import base_buffer

    written = set()
    for op in k.fn.walk():
        if isinstance(op, mem.StoreOp):
            root = base_buffer(op.dest)
            if isinstance(root, BlockArgument) and root.block is k.fn.entry:
                written.add(root.index)
    return written


def launch_scalar(hb: HostBuilder, k: ScalarKernel, inputs: list[Value],
                  soc: SoC) -> list[Value]:
    """Emit the host ops that run scalar kernel ``k``; returns the region's results."""
    originals = list(inputs)
    if k.demoted is not None:  # float64 inputs reach the kernel as float32 copies
        inputs = [_narrowed(hb, v) if i in k.demoted.inputs else v
                  for i, v in enumerate(inputs)]
    if k.host_scalars is not None:  # parameters the host computes (scalar_f64)
        inputs = inputs + _host_scalars(hb, k, inputs)
    hv = _HostValues(hb, k, inputs)
    block_dim = _block_dim(hb, hv, k, soc)
    args: list[Value] = []
    writes: list[int] = []
    buffers: dict[str, Value] = {}
    written_inputs = _written_inputs(k)
    for p in kernel_params(k):
        a = p.array
        if a is not None:
            v = _array_arg(hb, hv, k, a, inputs, block_dim)
            buffers[a.name] = v
            if isinstance(v.type, MemRefType) and (
                    a.source in ("result", "temp", "scalar", "status", "arena", "scratch")
                    or a.index in written_inputs):
                writes.append(len(args))
            args.append(v)
        elif p.role == "dim":
            args.append(hb.dim(inputs[p.index], p.axis))
        else:
            args.append(inputs[p.index])
    hb.launch(k.name, block_dim, args, writes)
    status = k.status
    if status is not None:
        attrs = {**k.check_codes(), "stride": k.status_stride}
        hb.insert(CheckStatusOp([buffers[status.name]], [], attrs, loc=k.loc))
    for i in written_inputs & set(k.demoted.inputs if k.demoted else ()):
        if isinstance(originals[i].type, MemRefType):  # back into the float64 array
            hb.insert(mem.WriteOp([_cast(hb, hb.to_tensor(inputs[i]), f64), originals[i]], []))
    return _results(hb, k, inputs, buffers, originals)


def _host_scalars(hb: HostBuilder, k: ScalarKernel, inputs: list[Value]) -> list[Value]:
    """The values of the parameters ``scalar_f64.fold_host_scalars`` added."""
    hs = k.host_scalars
    assert hs is not None
    env: dict[Value, Value] = dict(zip(hs.fn.entry.args, inputs, strict=False))
    for op in hs.fn.entry.ops:
        if isinstance(op, func.ReturnOp):
            return [env[v] for v in op.operand_values]
        hb.insert(op.clone(env))
    raise AssertionError("host scalars without a return")


def _cast(hb: HostBuilder, v: Value, to: ScalarType) -> Value:
    return hb.insert(arith.CastOp.new(v, to)).result


def _narrowed(hb: HostBuilder, v: Value) -> Value:
    """A float32 copy of float64 ``v`` (a buffer for a memref: the kernel may write it)."""
    t = v.type
    if not isinstance(t, MemRefType):
        return _cast(hb, v, f32)
    buf = hb.alloc(t.shape, f32, [hb.dim(v, a) for a in range(t.rank)])
    hb.insert(mem.WriteOp([_cast(hb, hb.to_tensor(v), f32), buf], []))
    return buf


def _widened(hb: HostBuilder, v: Value, outer: Type) -> Value:
    """Result ``v`` of a demoted kernel as the float64 value the region promised."""
    if isinstance(outer, ScalarType | TensorType):
        return _cast(hb, hb.to_tensor(v) if isinstance(v.type, MemRefType) else v, f64)
    assert isinstance(outer, MemRefType) and isinstance(v.type, MemRefType)
    buf = hb.alloc(outer.shape, f64, [hb.dim(v, a) for a in range(outer.rank)])
    hb.insert(mem.WriteOp([_cast(hb, hb.to_tensor(v), f64), buf], []))
    return buf


def _results(hb: HostBuilder, k: ScalarKernel, inputs: list[Value],
             buffers: dict[str, Value], originals: list[Value]) -> list[Value]:
    term = k.fn.entry.terminator
    assert term is not None
    out: list[Value] = []
    for j, (v, outer) in enumerate(zip(term.operand_values, k.outputs, strict=True)):
        if isinstance(v, BlockArgument):  # a demoted one was written back already
            out.append(originals[v.index] if v.index < len(originals) else inputs[v.index])
            continue
        arr = next(a for a in k.arrays if a.index == j and a.source in ("scalar", "result"))
        buf = buffers[arr.name]
        if arr.source == "scalar":
            val = hb.insert(mem.LoadOp([buf, hb.const(0)], [arr.elem])).result
        elif isinstance(outer.type, MemRefType):
            val = buf  # a new array returned as an array
        else:
            val = hb.to_tensor(buf)
        if k.demoted is not None and j in k.demoted.outputs:
            val = _widened(hb, val, outer.type)
        assert val.type == outer.type or isinstance(outer.type, TensorType | ScalarType)
        out.append(val)
    return out


__all__ = ["NotHostComputable", "launch_scalar"]
