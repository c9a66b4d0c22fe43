"""The native entry ``<symbol>.pycall``: a ``METH_FASTCALL`` builtin taking the Python call.

Emitted when the frontend asks for it (``Program.call_data["native"]``: the arguments
map one-to-one onto the flat parameters and the result is built from results and
simple constants) and the kernel's results need nothing the runtime would do in Python
(no kernel-allocated buffers, no views, no run-time choice among arguments).

The entry, straight-line code for one specialization (see ``pyasc.runtime.abi``):

1. takes argument ``i`` from ``args`` or, past ``nargs``, its default from the context;
2. checks each exactly as the specialization key classifies it (exact type; for arrays
   the dtype object, rank, static dims, alignment, writeability and the layout class:
   C-contiguous, unit inner stride, or strided); for scalars reads the value (an ``int``
   must fit in 64 bits); any failure returns ``MISS`` before anything is allocated;
3. allocates the preallocated results with ``PyArray_Empty`` (a failure: ``MISS``, so
   the Python path reports it), releases the GIL, calls the core, takes the GIL back;
4. raises through the context's ``raiser`` on a non-zero return code (with the values
   of the error record, if any), else builds the return value: result arrays, the
   caller's own objects, Python/numpy scalars, tuples.

Every context value and C-API function is read from the context (no symbol of the
interpreter is linked), so the object code is the same in every process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir

from pyasc.backend.llvm.entry import mark_wrapper, slot_ptr, unpack_array
from pyasc.backend.llvm.errrecord import HEADER
from pyasc.backend.llvm.lltypes import F64, I1, I8, I32, I64, PTR, i64, opaque, storage_type
from pyasc.backend.llvm.plan import EntryPlan
from pyasc.ir.types import DYN, ScalarType
from pyasc.runtime.abi import (
    NATIVE_FIXED,
    OB_TYPE_OFFSET,
    PYARRAY_OFFSETS,
    VALUE_OFFSET,
    NativeSpec,
)

NPY_C_CONTIGUOUS = 0x0001
_PY_SCALARS = {"py:float": "f64", "py:int": "index", "py:bool": "i1"}
"""IR type of the flat parameter/result of each Python scalar kind."""

_FN = {  # C-API signatures, by context name
    "Py_IncRef": ([PTR], ir.VoidType()), "Py_DecRef": ([PTR], ir.VoidType()),
    "PyArray_Empty": ([I32, PTR, PTR, I32], PTR), "PyArray_Scalar": ([PTR, PTR, PTR], PTR),
    "PyFloat_FromDouble": ([F64], PTR), "PyLong_FromLongLong": ([I64], PTR),
    "PyBool_FromLong": ([I64], PTR), "PyLong_AsLongLongAndOverflow": ([PTR, PTR], I64),
    "PyTuple_New": ([I64], PTR), "PyTuple_SetItem": ([PTR, I64, PTR], I32),
    "PyList_New": ([I64], PTR), "PyList_SetItem": ([PTR, I64, PTR], I32),
    "PyErr_Clear": ([], ir.VoidType()), "PyEval_SaveThread": ([], PTR),
    "PyEval_RestoreThread": ([PTR], ir.VoidType()),
}


class _FnPointer(ir.LoadInstr):
    """A C function pointer loaded from the context and called through (opaque ``ptr``
    for the load, the function type for the call)."""

    def __init__(self, parent: ir.Block, ptr: ir.Value, fnty: ir.FunctionType) -> None:
        super().__init__(parent, ptr, "", typ=PTR)
        self._fnty = fnty

    @property
    def function_type(self) -> ir.FunctionType:
        return self._fnty


def eligible(plan: EntryPlan, request: dict[str, Any] | None) -> bool:
    """Whether the native entry can serve this kernel (see the module docstring)."""
    if request is None or len(request["kinds"]) != len(plan.params) or \
            not all(b.prealloc for b in plan.buffers):
        return False
    for kind, p in zip(request["kinds"], plan.params, strict=True):
        if kind.startswith("array:") != (p.kind == "array") or \
                kind in _PY_SCALARS and p.dtype != _PY_SCALARS[kind] or \
                kind == "array:C" and p.strides is not None:
            return False
    for b in plan.buffers:
        for i, axis in b.dim_sources:
            if axis < 0 and plan.params[i].dtype != "index":
                return False
    return all(_result_ok(plan, leaf) for leaf in _leaves(request["result"]))


def _leaves(tree: list) -> list[list]:
    if tree[0] in ("tuple", "list"):
        return [leaf for item in tree[1] for leaf in _leaves(item)]
    return [tree]


def _result_ok(plan: EntryPlan, leaf: list) -> bool:
    if leaf[0] == "const":
        return True
    r, conv = plan.results[leaf[1]], leaf[2]
    if r.kind in ("buffer", "param") and not r.choices:
        return conv == "array"
    return r.kind == "scalar" and (conv.startswith("np:") or _PY_SCALARS.get(conv) == r.dtype)


def emit_native_entry(module: ir.Module, plan: EntryPlan, core: ir.Function, symbol: str,
                      request: dict[str, Any]) -> NativeSpec:
    """Emit ``<symbol>.pycall`` for an :func:`eligible` kernel; its :class:`NativeSpec`."""
    emitter = _NativeEmitter(module, plan, core, symbol + ".pycall", request)
    emitter.emit()
    return NativeSpec(emitter.fn.name, int(request["nmin"]), tuple(request["kinds"]),
                      request["result"], tuple(emitter.entries))


class _NativeEmitter:
    """Builds one native entry (state: the builder, the context, the miss block)."""

    def __init__(self, module: ir.Module, plan: EntryPlan, core: ir.Function, name: str,
                 request: dict[str, Any]) -> None:
        self.plan, self.core, self.request = plan, core, request
        self.fn = ir.Function(module, ir.FunctionType(PTR, [PTR, PTR, I64]), name=name)
        mark_wrapper(self.fn)
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.miss = self.fn.append_basic_block("miss")
        self.entries: list[tuple[str, str]] = []
        self.ctx = self._load(self.fn.args[0], VALUE_OFFSET)

    # -- small helpers
    def _load(self, base: ir.Value, offset: int, ty: ir.Type = PTR) -> ir.Value:
        ptr = self.b.gep(base, [i64(offset)], inbounds=True, source_etype=I8)
        return self.b.load(ptr, typ=ty, align=4 if ty == I32 else 1 if ty == I8 else 8)

    def _ctx_index(self, kind: str, value: str) -> int:
        if (kind, value) not in self.entries:
            self.entries.append((kind, value))
        return len(NATIVE_FIXED) + self.entries.index((kind, value))

    def _ctx(self, name: str) -> ir.Value:
        return self._load(self.ctx, 8 * NATIVE_FIXED.index(name))

    def _entry(self, kind: str, value: str) -> ir.Value:
        return self._load(self.ctx, 8 * self._ctx_index(kind, value))

    def _api(self, name: str, *args: ir.Value, fnty: ir.FunctionType | None = None) -> Any:
        params, ret = _FN.get(name, ([], PTR))
        fnty = fnty or ir.FunctionType(ret, params)
        ptr = self.b.gep(self.ctx, [i64(NATIVE_FIXED.index(name))], inbounds=True,
                         source_etype=I64)
        callee = _FnPointer(self.b.block, ptr, fnty)
        self.b._insert(callee)
        return self.b.call(callee, list(args))

    def _guard(self, ok: ir.Value) -> None:
        cont = self.fn.append_basic_block("ok")
        self.b.cbranch(ok, cont, self.miss)
        self.b.position_at_end(cont)

    # -- the entry
    def emit(self) -> None:
        b, plan = self.b, self.plan
        n, nmin = len(plan.params), int(self.request["nmin"])
        nargs = self.fn.args[2]
        self._guard(b.and_(b.icmp_signed(">=", nargs, i64(nmin)),
                           b.icmp_signed("<=", nargs, i64(n))))
        self.desc = opaque(b.alloca(I64, size=i64(max(1, plan.arg_slots)), name="desc"))
        self.res = opaque(b.alloca(I64, size=i64(max(1, plan.result_slots)), name="res"))
        self.objs = [self._argument(i, nmin, nargs) for i in range(n)]
        for kind, spec, obj in zip(self.request["kinds"], plan.params, self.objs, strict=True):
            _CHECKS[kind.split(":")[0]](self, kind, spec, obj)
        bufs = self._allocate()
        self._call_core(bufs)
        b.ret(self._result(bufs))
        b.position_at_end(self.miss)
        miss = self._ctx("MISS")
        self._api("Py_IncRef", miss)
        b.ret(miss)

    def _argument(self, i: int, nmin: int, nargs: ir.Value) -> ir.Value:
        b = self.b
        given = b.gep(self.fn.args[1], [i64(i)], inbounds=False, source_etype=PTR)
        if i < nmin:
            return b.load(given, typ=PTR, align=8)
        default = b.gep(self.ctx, [i64(self._ctx_index("default", str(i - nmin)))],
                        inbounds=True, source_etype=I64)
        return b.load(b.select(b.icmp_signed(">", nargs, i64(i)), given, default), typ=PTR,
                      align=8)

    def _check_array(self, kind: str, spec: Any, obj: ir.Value) -> None:
        b = self.b
        self._guard(b.icmp_unsigned("==", self._load(obj, OB_TYPE_OFFSET),
                                    self._ctx("PyArray_Type")))
        self._guard(b.icmp_unsigned("==", self._load(obj, PYARRAY_OFFSETS["descr"]),
                                    self._entry("descr", spec.dtype)))
        self._guard(unpack_array(b, obj, spec, self.desc))
        flags = self._load(obj, PYARRAY_OFFSETS["flags"], I32)
        c_flag = b.icmp_unsigned("!=", b.and_(flags, ir.Constant(I32, NPY_C_CONTIGUOUS)),
                                 ir.Constant(I32, 0))
        layout = kind.split(":")[1]
        if layout == "C":
            self._guard(c_flag)
            return
        self._guard(b.not_(c_flag))
        rank = len(spec.shape)
        last = b.load(slot_ptr(b, self.desc, spec.slot + 2 * rank), typ=I64, align=8)
        unit = b.icmp_signed("==", last, i64(1))
        self._guard(unit if layout == "inner" else b.not_(unit))

    def _check_python(self, kind: str, spec: Any, obj: ir.Value) -> None:
        b = self.b
        dest = slot_ptr(b, self.desc, spec.slot)
        if kind == "py:bool":
            true = b.icmp_unsigned("==", obj, self._ctx("Py_True"))
            self._guard(b.or_(true, b.icmp_unsigned("==", obj, self._ctx("Py_False"))))
            b.store(b.zext(true, I8), dest, align=8)
            return
        cls = "PyFloat_Type" if kind == "py:float" else "PyLong_Type"
        self._guard(b.icmp_unsigned("==", self._load(obj, OB_TYPE_OFFSET), self._ctx(cls)))
        if kind == "py:float":
            b.store(self._load(obj, VALUE_OFFSET, F64), dest, align=8)
            return
        overflow = opaque(b.alloca(I32, name="overflow"))
        value = self._api("PyLong_AsLongLongAndOverflow", obj, overflow)
        self._guard(b.icmp_signed("==", b.load(overflow, typ=I32, align=4),
                                  ir.Constant(I32, 0)))
        b.store(value, dest, align=8)

    def _check_numpy(self, kind: str, spec: Any, obj: ir.Value) -> None:
        b = self.b
        self._guard(b.icmp_unsigned("==", self._load(obj, OB_TYPE_OFFSET),
                                    self._entry("sctype", spec.dtype)))
        raw = self._load(obj, VALUE_OFFSET, storage_type(ScalarType(spec.dtype)))
        b.store(raw, slot_ptr(b, self.desc, spec.slot), align=8)

    def _allocate(self) -> list[ir.Value]:
        """``PyArray_Empty`` for each preallocated buffer (all are, see ``eligible``)."""
        b, bufs = self.b, []
        for buf in self.plan.buffers:
            rank = len(buf.shape)
            dims = opaque(b.alloca(I64, size=i64(max(1, rank)), name="dims"))
            sources = iter(buf.dim_sources)
            for k, d in enumerate(buf.shape):
                b.store(i64(d) if d != DYN else self._dim(*next(sources)), slot_ptr(b, dims, k),
                        align=8)
            descr = self._entry("descr", buf.dtype)
            self._api("Py_IncRef", descr)  # PyArray_Empty steals a reference
            arr = self._api("PyArray_Empty", ir.Constant(I32, rank), dims, descr,
                            ir.Constant(I32, 0))
            failed, cont = self.fn.append_basic_block("no_memory"), \
                self.fn.append_basic_block("allocated")
            b.cbranch(b.icmp_unsigned("==", arr, ir.Constant(PTR, None)), failed, cont)
            b.position_at_end(failed)
            self._api("PyErr_Clear")  # the Python path reports it with its own message
            self._release(bufs)
            b.branch(self.miss)
            b.position_at_end(cont)
            bufs.append(arr)
        return bufs

    def _dim(self, i: int, axis: int) -> ir.Value:
        spec = self.plan.params[i]
        slot = spec.slot if axis < 0 else spec.slot + 1 + axis
        return self.b.load(slot_ptr(self.b, self.desc, slot), typ=I64, align=8)

    def _release(self, objs: list[ir.Value]) -> None:
        for obj in objs:
            self._api("Py_DecRef", obj)

    def _call_core(self, bufs: list[ir.Value]) -> None:
        b = self.b
        data = [self._load(arr, PYARRAY_OFFSETS["data"]) for arr in bufs]
        state = self._api("PyEval_SaveThread")
        rc = b.call(self.core, [self.desc, self.res, *data])
        self._api("PyEval_RestoreThread", state)
        failed, cont = self.fn.append_basic_block("kernel_error"), \
            self.fn.append_basic_block("kernel_done")
        b.cbranch(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), failed, cont)
        b.position_at_end(failed)
        self._release(bufs)
        code = self._api("PyLong_FromLongLong", b.sext(rc, I64))
        values = [self._api("PyLong_FromLongLong", b.load(slot_ptr(b, self.res, s), typ=I64,
                                                          align=8))
                  for s in self._record_value_slots()]
        raised = self._api("PyObject_CallFunctionObjArgs", self._ctx("raiser"), code,
                           *values, ir.Constant(PTR, None),
                           fnty=ir.FunctionType(PTR, [PTR], var_arg=True))
        for obj in (code, *values):
            self._api("Py_DecRef", obj)
        self._api("Py_DecRef", raised)  # NULL: the raiser raised, as it always does
        b.ret(ir.Constant(PTR, None))
        b.position_at_end(cont)

    def _record_value_slots(self) -> range:
        """The result slots of the error record's values (``errrecord.py``)."""
        first = self.plan.error_slot
        if first < 0:
            return range(0)
        return range(first + HEADER, self.plan.result_slots)

    # -- the return value
    def _result(self, bufs: list[ir.Value]) -> ir.Value:
        """Containers first, then leaves (any NULL: release everything, return NULL),
        then fill the containers, which steal their items."""
        b, tree = self.b, self.request["result"]
        containers: list[tuple[str, ir.Value, list]] = []
        self._containers(tree, containers)
        uses = [0] * len(bufs)
        leaves = [self._leaf(leaf, bufs, uses) for leaf in _leaves(tree)]
        self._release([arr for arr, n in zip(bufs, uses, strict=True) if n == 0])
        made = [c for _, c, _ in containers] + leaves
        null = ir.Constant(PTR, None)
        bad: ir.Value = ir.Constant(I1, 0)
        for obj in made:
            bad = b.or_(bad, b.icmp_unsigned("==", obj, null))
        failed, cont = self.fn.append_basic_block("no_result"), \
            self.fn.append_basic_block("result")
        b.cbranch(bad, failed, cont)
        b.position_at_end(failed)
        self._release(made)
        b.ret(null)
        b.position_at_end(cont)
        items = iter(leaves)
        self._fill(tree, containers, items)
        return containers[0][1] if containers else leaves[0]

    def _containers(self, tree: list, out: list) -> None:
        if tree[0] not in ("tuple", "list"):
            return
        new = "PyTuple_New" if tree[0] == "tuple" else "PyList_New"
        out.append((tree[0], self._api(new, i64(len(tree[1]))), tree))
        for item in tree[1]:
            self._containers(item, out)

    def _fill(self, tree: list, containers: list, leaves: Any) -> ir.Value:
        if tree[0] not in ("tuple", "list"):
            return next(leaves)
        kind, obj, _ = next(c for c in containers if c[2] is tree)
        setter = "PyTuple_SetItem" if kind == "tuple" else "PyList_SetItem"
        for k, item in enumerate(tree[1]):
            self._api(setter, obj, i64(k), self._fill(item, containers, leaves))
        return obj

    def _leaf(self, leaf: list, bufs: list[ir.Value], uses: list[int]) -> ir.Value:
        if leaf[0] == "const":
            return self._constant(leaf[1])
        r, conv = self.plan.results[leaf[1]], leaf[2]
        if r.kind == "buffer":
            uses[r.buffer] += 1
            if uses[r.buffer] > 1:  # the same array twice: one more reference
                self._api("Py_IncRef", bufs[r.buffer])
            return bufs[r.buffer]
        if r.kind == "param":
            self._api("Py_IncRef", self.objs[r.param])
            return self.objs[r.param]
        slot = slot_ptr(self.b, self.res, r.slot)
        return _SCALAR_RESULTS.get(conv, _numpy_scalar)(self, slot, r.dtype)

    def _constant(self, value: object) -> ir.Value:
        if value is None or isinstance(value, bool):
            obj = self._ctx({None: "Py_None", True: "Py_True", False: "Py_False"}[value])
            self._api("Py_IncRef", obj)
            return obj
        if isinstance(value, int):
            return self._api("PyLong_FromLongLong", i64(value))
        return self._api("PyFloat_FromDouble", ir.Constant(F64, float(value)))


def _py_float(e: _NativeEmitter, slot: ir.Value, dtype: str) -> ir.Value:
    return e._api("PyFloat_FromDouble", e.b.load(slot, typ=F64, align=8))


def _py_int(e: _NativeEmitter, slot: ir.Value, dtype: str) -> ir.Value:
    return e._api("PyLong_FromLongLong", e.b.load(slot, typ=I64, align=8))


def _py_bool(e: _NativeEmitter, slot: ir.Value, dtype: str) -> ir.Value:
    byte = e.b.load(slot, typ=I8, align=8)
    return e._api("PyBool_FromLong", e.b.zext(e.b.icmp_unsigned("!=", byte, ir.Constant(I8, 0)),
                                              I64))


def _numpy_scalar(e: _NativeEmitter, slot: ir.Value, dtype: str) -> ir.Value:
    return e._api("PyArray_Scalar", slot, e._entry("descr", dtype), ir.Constant(PTR, None))


_SCALAR_RESULTS: dict[str, Callable[[_NativeEmitter, ir.Value, str], ir.Value]] = {
    "py:float": _py_float, "py:int": _py_int, "py:bool": _py_bool,
}
"""Result conversions by template kind (any ``np:<dtype>`` is a numpy scalar)."""

_CHECKS: dict[str, Callable[[_NativeEmitter, str, Any, ir.Value], None]] = {
    "array": _NativeEmitter._check_array, "py": _NativeEmitter._check_python,
    "np": _NativeEmitter._check_numpy,
}
"""Argument checks by kind prefix."""
