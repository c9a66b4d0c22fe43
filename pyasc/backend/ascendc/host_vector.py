"""Host side of a vector kernel: iteration space, broadcasts, outputs, tiling, launch.

Work split (computed on the host, passed as kernel arguments):

* ``flat``/``reduce``: ``n`` elements; ``perBlock`` is ``ceil(n / cores)``, at least
  :data:`MIN_BLOCK_ELEMENTS`, rounded up so that every block starts on a 32-byte
  boundary of every array; ``block_dim = ceil(n / perBlock)`` (no empty blocks).
* ``rows``: ``rows`` x ``cols``; ``rowsPerBlock`` is ``ceil(rows / cores)``, at least
  enough rows for :data:`MIN_BLOCK_ELEMENTS` elements, rounded up to 8 rows.

Whole-array reductions come back as one 32-byte slot per block; the host reduces the
``block_dim`` partial results (the final step of the reduction) and rounds to the
result type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pyasc.backend.ascendc.analysis import COL, FULL, PARTIAL, ROW, SCALAR, GroupInfo, body_ops
from pyasc.backend.ascendc.host import HostBuilder
from pyasc.backend.ascendc.ops import UBCheckOp
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.unsupported import unsupported
from pyasc.backend.ascendc.vec_alloc import bytes_per_element
from pyasc.backend.ascendc.vec_kernel import KernelInput, KernelOutput, VectorKernel, result_slot
from pyasc.backend.ascendc.vec_spans import Source, SpanCheck, shape_op_dim
from pyasc.errors import InternalCompilerError
from pyasc.ir.core import BlockArgument, Value
from pyasc.ir.ops import arith, func, tensor
from pyasc.ir.ops.loop import IfOp, YieldOp
from pyasc.ir.passes.lower_reduce import REDUCTIONS
from pyasc.ir.rewrite import constant_value
from pyasc.ir.types import DYN, ScalarType, TensorType, Type, element_type

Operand = Value | list[Value]
"""A kernel operand on the host, or the extents of one not computed yet (``space_dims``)."""

MIN_BLOCK_ELEMENTS = 1024
"""Fewest elements a block gets: smaller problems use fewer blocks (launch overhead)."""

_HOST_REDUCE = {"sum": tensor.SumOp, "max": tensor.ReduceMaxOp, "min": tensor.ReduceMinOp}


def space_dims(hb: HostBuilder, k: VectorKernel, operands: Sequence[Operand]) -> list[Value]:
    """Run-time extents of the iteration space: numpy's broadcast of everything that
    sizes each axis (``vec_spans``: array inputs, fills inside the kernel).  A fill
    that does not broadcast against the others raises ValueError, like numpy.  An
    operand not computed yet (a MIX kernel's C) may be given as its list of extents."""
    dims: list[Value] = []
    for axis, extent in enumerate(k.info.space):
        if extent != DYN:
            dims.append(hb.const(extent))
            continue
        sizes = [_extent(hb, k, operands, c, axis) for c in k.spans.contributors[axis]]
        if not sizes:
            raise unsupported(f"an array whose size the kernel {k.name} computes inside "
                              "itself", k.group.loc)
        acc = sizes[0]
        for d in sizes[1:]:
            acc = hb.broadcast_dim(acc, d)
        dims.append(acc)
    _check_fills(hb, k, operands, dims)
    return dims


def span_condition(hb: HostBuilder, k: VectorKernel, operands: list[Value],
                   dims: list[Value]) -> Value | None:
    """``i1``: every value the kernel must not enlarge spans the space (``vec_spans``
    checks); ``None`` when the classes hold for every shape."""
    conds: list[Value] = []
    for check in k.spans.checks:
        if check.result is None:
            extent = _numpy_extent(hb, k, operands, check)
            conds.append(hb.insert(arith.CmpOp.new("eq", extent, dims[check.axis])).result)
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = hb.insert(arith.AndOp.new(out, c)).result
    return out


def _numpy_extent(hb: HostBuilder, k: VectorKernel, operands: Sequence[Operand],
                  check: SpanCheck) -> Value:
    """The numpy extent of the value ``check`` is about: its sources' broadcast."""
    acc = hb.const(1)
    for source in check.sources:
        acc = hb.broadcast_dim(acc, _extent(hb, k, operands, source, check.axis))
    return acc


def _extent(hb: HostBuilder, k: VectorKernel, operands: Sequence[Operand], source: Source,
            axis: int) -> Value:
    """The run-time extent of contributor ``source`` along space axis ``axis``."""
    args = list(k.group.body.blocks[0].args)
    rank = k.info.rank
    if isinstance(source, BlockArgument):
        host = operands[args.index(source)]
        if isinstance(host, list):  # not computed yet (a MIX kernel's C): its extents
            return host[axis - (rank - len(host))]
        t = host.type
        assert isinstance(t, TensorType)
        return hb.dim(host, axis - (rank - t.rank))
    dim = shape_op_dim(source, axis, rank)
    if dim in args:
        return operands[args.index(dim)]
    value = constant_value(dim) if dim is not None else None
    if not isinstance(value, int):
        raise InternalCompilerError(f"kernel {k.name}: a fill of unknown size")
    return hb.const(value)


def _check_fills(hb: HostBuilder, k: VectorKernel, operands: Sequence[Operand],
                 dims: list[Value]) -> None:
    """numpy's broadcast check for fills and broadcasts inside the kernel (arrays are
    checked when the host broadcasts them to the space)."""
    for axis, sources in enumerate(k.spans.contributors):
        for source in sources:
            if isinstance(source, BlockArgument):
                continue
            d = _extent(hb, k, operands, source, axis)
            if d is dims[axis]:
                continue
            one = hb.insert(arith.CmpOp.new("eq", d, hb.const(1))).result
            same = hb.insert(arith.CmpOp.new("eq", d, dims[axis])).result
            ok = hb.insert(arith.OrOp.new(one, same)).result
            hb.insert(func.AssertOp([ok, d, dims[axis]], [], {
                "message": f"operands could not be broadcast together (axis {axis}: "
                           "size {0} against {1})", "kind": "shape"}, loc=source.loc))


def _required_shape(cls: str, space: tuple[int, ...], info: GroupInfo) -> tuple[int, ...]:
    if cls == FULL:
        return space
    if cls == COL:
        return (*space[:-1], 1)
    j, t = info.planes, _tail(info)
    return (*space[:j], *(1,) * (t - j), *space[t:])


def _tail(info: GroupInfo) -> int:
    """The first of the trailing axes a column reduction keeps (its columns)."""
    return info.rank - 1 if info.tail < 0 else info.tail


def _row_dims(hb: HostBuilder, rank: int, info: GroupInfo, dims: list[Value]) -> list[Value]:
    """Extents of a rank-``rank`` row value: one row (per plane of a plane reduction)
    of the kept trailing axes, ones between (none: ``(B, D)`` without keepdims)."""
    t = _tail(info)
    lead = rank - (len(dims) - t)
    j = min(info.planes, lead)
    return [*dims[:j], *[hb.const(1)] * (lead - j), *dims[t:]]


def _prepare_input(hb: HostBuilder, inp: KernelInput, host: Value, k: VectorKernel,
                   dims: list[Value]) -> Value:
    """The array the kernel reads: ``host`` broadcast to its class's shape.

    Equal static shapes are not enough when a ``?`` dim is involved: a ``?`` of ``host``
    may be 1 at run time where the space's is not (``x + b`` with ``x`` (5, 8) and ``b``
    (1, 8), both typed ``?x?``), and the kernel reads its class's whole shape.  The
    broadcast is a no-op view when the sizes agree (and folds away when its dims are
    ``host``'s own, e.g. a kernel with one array input)."""
    if inp.vv.cls == SCALAR:
        return hb.extract_scalar(host)
    shape = _required_shape(inp.vv.cls, k.info.space, k.info)
    t = host.type
    if isinstance(t, TensorType) and t.shape == shape and DYN not in shape:
        return host
    if inp.vv.cls == COL:
        bdims = [*dims[:-1], hb.const(1)]
    elif inp.vv.cls == ROW:
        bdims = _row_dims(hb, len(shape), k.info, dims)
    else:
        bdims = dims
    return hb.broadcast(host, shape, element_type(t), bdims)


def launch_vector(hb: HostBuilder, k: VectorKernel, operands: list[Value], soc: SoC,
                  result_types: list, dims: list[Value] | None = None) -> list[Value]:  # noqa: ANN001
    """Emit the host ops that run kernel ``k`` (over the space ``dims``, computed here by
    default); returns the group's result values."""
    dims = space_dims(hb, k, operands) if dims is None else dims
    _check_rows_of_nothing(hb, k, dims)
    return _launch(hb, k, operands, soc, result_types, dims)


def _check_rows_of_nothing(hb: HostBuilder, k: VectorKernel, dims: list[Value]) -> None:
    """numpy's ValueError for a max/min of rows with no columns (``cols == 0``), or of
    columns with no rows (a column reduction), which have no identity.  Such kernels
    still launch (their sums are 0), and would write a made-up value; the loop path
    checks the same in ``lower_reduce``."""
    cols = k.schedule == "cols"
    reductions = k.info.col_reductions if cols else k.info.row_reductions
    empty_fails = [op for op in body_ops(k.group)
                   if op in reductions and REDUCTIONS[type(op)][3]]
    if not empty_fails:  # all rows are checked at once: the first such op reports
        return
    op = empty_fails[0]
    extent = hb.product(dims[k.info.planes:_tail(k.info)]) if cols else dims[-1]
    some = hb.insert(arith.CmpOp.new("ne", extent, hb.const(0))).result
    hb.insert(func.AssertOp([some], [], {
        "message": f"zero-size array to reduction operation {REDUCTIONS[type(op)][3]} "
                   "which has no identity", "kind": "shape"}, loc=op.loc))


def _launch(hb: HostBuilder, k: VectorKernel, operands: list[Value], soc: SoC,
            result_types: list, dims: list[Value]) -> list[Value]:  # noqa: ANN001
    if k.alt is not None:
        return _launch_either(hb, k, operands, soc, result_types, dims)
    args = [_prepare_input(hb, i, h, k, dims)
            for i, h in zip(k.inputs, operands, strict=True) if i.vv.cls != SCALAR]
    scalars = [hb.extract_scalar(h) for i, h in zip(k.inputs, operands, strict=True)
               if i.vv.cls == SCALAR]
    tiling, block_dim = _tiling(hb, k, dims, soc)
    outs: dict[int, Value] = {}
    out_args: list[Value] = []
    for o in k.written:
        t = result_types[o.index]
        if o.kind == PARTIAL:
            assert o.partial is not None
            size = hb.mul(block_dim, result_slot(o.partial))
            buf = hb.alloc((DYN,), o.partial.acc.dtype, [size])
        elif k.split_rows:  # a partial row per row block (_finish_rows)
            t = _written_type(o.kind, t)
            buf = hb.alloc((DYN, k.info.space[-1]), t.element,
                           [_partial_rows(hb, k, dims, soc), dims[-1]])
        else:
            t = _written_type(o.kind, t)
            shape_dims = _result_dims(hb, o.kind, o.squeezed, dims, t, k.info)
            buf = hb.alloc(t.shape, t.element, shape_dims)
        outs[o.index] = buf
        out_args.append(buf)
    first_out = len(args)
    all_args = args + out_args + scalars + tiling
    hb.launch(k.name, block_dim, all_args, range(first_out, first_out + len(out_args)))
    if k.split_rows:
        for o in k.written:
            outs[o.index] = _finish_rows(hb, k, o, outs[o.index],
                                         _written_type(o.kind, result_types[o.index]), dims)
    return _results(hb, k, operands, outs, block_dim, result_types)


def _launch_either(hb: HostBuilder, k: VectorKernel, operands: list[Value], soc: SoC,
                   result_types: list, dims: list[Value]) -> list[Value]:  # noqa: ANN001
    """``if a row fits k's tile: k else: its long-rows twin`` (a run-time row length)."""
    assert k.alt is not None
    pitch = hb.round_up(dims[-1], k.unit)
    fits = hb.insert(arith.CmpOp.new("le", pitch, hb.const(k.tile))).result
    types = [t for t in result_types]
    branch = hb.insert(IfOp.empty(fits, types, k.group.loc))
    arms = [(branch.then_region.blocks[0], replace(k, alt=None)),
            (branch.else_region.blocks[0], k.alt)]
    for block, kernel in arms:
        arm = HostBuilder(block, k.group.loc)
        arm.insert(YieldOp(_launch(arm, kernel, operands, soc, result_types, dims)))
    return list(branch.result_values)


def _written_type(kind: str, t: Type) -> TensorType:
    """The array a kernel writes for a result of type ``t``: a scalar result is a row
    reduction of a 1-D space (``x.sum()`` also used by ``x - x.sum()``), written as
    its one-row column (shape ``(1,)``) and read back by the host."""
    if isinstance(t, TensorType):
        return t
    if kind != COL or not isinstance(t, ScalarType):
        raise InternalCompilerError(f"a vector kernel result of type {t} in a {kind} "
                                    "buffer")
    return TensorType((1,), t)


def _result_dims(hb: HostBuilder, kind: str, squeezed: bool, dims: list[Value],
                 t: TensorType, info: GroupInfo) -> list[Value]:
    if kind == COL:
        return list(dims[:-1]) if squeezed else [*dims[:-1], hb.const(1)]
    if kind == ROW:  # a column reduction: (C,), or (1, ..., 1, C) with keepdims; of
        # each plane: (B, D) or (B, 1, D)
        return _row_dims(hb, t.rank, info, dims)
    return dims[len(dims) - t.rank:]


def _tiling(hb: HostBuilder, k: VectorKernel, dims: list[Value],
            soc: SoC) -> tuple[list[Value], Value]:
    cores = soc.vector_blocks
    if k.schedule == "longrows":  # long rows: whole rows per block, no minimum
        rows, cols = hb.product(dims[:-1]), dims[-1]
        per = hb.max(hb.ceil_div(rows, cores), 1)
        empty = hb.insert(arith.CmpOp.new("eq", cols, hb.const(0))).result
        blocks = hb.insert(arith.SelectOp.new(empty, hb.const(0), hb.ceil_div(rows, per))).result
        return [rows, cols, per], blocks
    if k.schedule == "cols":  # units (plane, row range, column range), at most a
        # block per core: a block takes units GetBlockNum() apart
        tiling, col_blocks, row_blocks = _cols_tiling(hb, k, dims, cores)
        units = hb.mul(tiling[-1], hb.mul(col_blocks, row_blocks))
        return tiling, hb.min(units, hb.const(cores))
    if k.schedule == "rows":
        rows = hb.product(dims[:-1])
        cols = dims[-1]
        if k.info.space[-1] == DYN:  # one row must fit a tile (static: checked at compile)
            bpe = bytes_per_element(k.phys)
            need = hb.mul(hb.round_up(cols, k.unit), bpe)
            hb.insert(UBCheckOp([need], [], {"budget": k.tile * bpe, "soc": soc.name,
                                             "what": f"one row of kernel '{k.name}'"},
                                loc=k.group.loc))
        min_rows = hb.ceil_div(MIN_BLOCK_ELEMENTS, hb.max(cols, 1))
        per = hb.round_up(hb.max(hb.ceil_div(rows, cores), min_rows), 8)
        # rows of no columns still launch: their row results (reductions of nothing)
        # are written; the kernel moves no row data then
        return [rows, cols, per], hb.ceil_div(rows, per)
    n = hb.product(dims)
    unit = 32 // min(_gm_itemsizes(k))
    per = hb.round_up(hb.max(hb.ceil_div(n, cores), MIN_BLOCK_ELEMENTS), unit)
    return [n, per], hb.ceil_div(n, per)


def _cols_tiling(hb: HostBuilder, k: VectorKernel, dims: list[Value], cores: int
                 ) -> tuple[list[Value], Value, Value]:
    """Column ranges of whole 32-byte blocks (at most a tile) and, for a ``split_rows``
    kernel, row ranges for the cores the column ranges leave idle (at least
    ``MIN_BLOCK_ELEMENTS`` elements each): the tiling, column and row block counts."""
    j, t = k.info.planes, _tail(k.info)
    planes, rows, cols = hb.product(dims[:j]), hb.product(dims[j:t]), hb.product(dims[t:])
    min_cols = hb.ceil_div(MIN_BLOCK_ELEMENTS, hb.max(rows, 1))
    spare = hb.max(hb.binary(arith.FloorDivOp, hb.const(cores), hb.max(planes, 1)), 1)
    per = hb.round_up(hb.max(hb.ceil_div(cols, spare), min_cols), k.unit)
    per = hb.min(per, k.tile)
    col_blocks = hb.ceil_div(cols, per)
    if not k.split_rows:
        return [rows, cols, per, hb.max(rows, 1), planes], col_blocks, hb.const(1)
    idle = hb.max(hb.binary(arith.FloorDivOp, hb.const(cores), hb.max(col_blocks, 1)), 1)
    min_rows = hb.ceil_div(MIN_BLOCK_ELEMENTS, per)
    rows_per = hb.max(hb.max(hb.ceil_div(rows, idle), min_rows), 1)
    row_blocks = hb.max(hb.ceil_div(rows, rows_per), 1)
    return [rows, cols, per, rows_per, planes], col_blocks, row_blocks


def _partial_rows(hb: HostBuilder, k: VectorKernel, dims: list[Value], soc: SoC) -> Value:
    """How many partial rows each result of a ``split_rows`` kernel gets."""
    return _cols_tiling(hb, k, dims, soc.vector_blocks)[2]


def _finish_rows(hb: HostBuilder, k: VectorKernel, o: KernelOutput, buf: Value,
                 t: TensorType, dims: list[Value]) -> Value:
    """The host's final step of a ``split_rows`` result: its reduction over the
    ``(row blocks, cols)`` partial rows, in the result's shape."""
    term = k.group.body.blocks[0].terminator
    assert term is not None and o.buf is not None
    op = term.operand_values[o.index].op
    assert op is not None
    red = hb.insert(type(op).new(hb.to_tensor(buf), (0,), False)).result
    shape_dims = _result_dims(hb, ROW, o.squeezed, dims, t, k.info)
    return hb.insert(tensor.ReshapeOp([red, *hb.dyn_dims(t.shape, shape_dims)], [t])).result


def _gm_itemsizes(k: VectorKernel) -> list[int]:
    sizes = [i.vv.buf.itemsize for i in k.array_inputs if i.vv.buf is not None]
    sizes += [o.buf.itemsize for o in k.written if o.buf is not None]
    return sizes or [4]


def _results(hb: HostBuilder, k: VectorKernel, operands: list[Value], outs: dict[int, Value],
             block_dim: Value, result_types: list) -> list[Value]:  # noqa: ANN001
    results: list[Value] = []
    for o in k.outputs:
        if o.kind == "passthrough":
            results.append(operands[o.source])
        elif o.kind == "same":
            results.append(results[o.source])
        elif o.kind == PARTIAL:
            results.append(_final_reduce(hb, o, outs[o.index], block_dim,
                                         result_types[o.index]))
        else:
            value = outs[o.index]
            value = value if isinstance(value.type, TensorType) else hb.to_tensor(value)
            if isinstance(result_types[o.index], ScalarType):
                results.append(hb.extract_scalar(value))
            else:
                results.append(_sliced(hb, k, o, value, operands))
    return results


def _sliced(hb: HostBuilder, k: VectorKernel, o: KernelOutput, value: Value,
            operands: list[Value]) -> Value:
    """Result ``o`` at its numpy extents: along an axis its inputs do not all size,
    the kernel computed it broadcast to the space (``vec_spans``)."""
    checks = [c for c in k.spans.checks if c.result == o.index]
    t = value.type
    if not checks or not isinstance(t, TensorType):
        return value
    sizes = [hb.dim(value, i) for i in range(t.rank)]
    for check in checks:
        local = check.axis - (k.info.rank - t.rank) if o.kind == FULL else check.axis
        sizes[local] = _numpy_extent(hb, k, operands, check)
    zero, one = [hb.const(0)] * t.rank, [hb.const(1)] * t.rank
    return hb.insert(tensor.SliceOp([value, *zero, *sizes, *one], [t])).result


def _final_reduce(hb: HostBuilder, o, buf: Value, block_dim: Value, t) -> Value:  # noqa: ANN001
    """The host's final step of a whole-array reduction over the per-block results."""
    assert o.partial is not None
    acc_t = o.partial.acc.dtype
    parts = hb.to_tensor(buf)
    slot = result_slot(o.partial)
    zero, one = hb.const(0), hb.const(slot)
    if o.partial.tree:  # every element of a slot is a result (emit_vector._fold_halves)
        block_dim, one = hb.mul(block_dim, slot), hb.const(1)
    picked = hb.insert(tensor.SliceOp([parts, zero, block_dim, one],
                                      [TensorType((DYN,), acc_t)])).result
    red = hb.insert(_HOST_REDUCE[o.partial.kind].new(picked, (0,), False)).result
    elem = element_type(t)
    if elem != acc_t:
        red = hb.insert(arith.CastOp.new(red, elem)).result
    if isinstance(t, ScalarType):
        return red
    assert isinstance(t, TensorType)
    return hb.insert(tensor.FillOp.new(red, t)).result


__all__ = ["MIN_BLOCK_ELEMENTS", "launch_vector", "prepare_input", "space_dims",
           "span_condition"]


prepare_input = _prepare_input
"""The array a vector kernel reads for one input (also the epilogue of a MIX kernel)."""
