"""Buffers: views (subview with negative steps and drops, transpose, reshape), strided
and 0-d arguments, every kind of returned buffer, constants, f16 and bool storage."""

from __future__ import annotations

import resource

import numpy as np
import pytest
from llvmkit import both, compile_ir, descriptor_twin

from pyasc.ir import Builder, DenseArray
from pyasc.ir.ops import arith, func, loop, mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.types import DYN, MemRefType, TensorType, bf16, f16, f32, i1, i32, index


def _module(params, body, name="f"):
    mod = ModuleOp.empty()
    fn = FuncOp.empty(name, list(params), [])
    mod.append(fn)
    b = Builder.at_end(fn.entry)
    results = body(b, *fn.entry.args)
    b.insert(func.ReturnOp(list(results)))
    fn.set_result_types([v.type for v in results])
    return mod


def _c(b, v, t=index):
    return b.insert(arith.ConstantOp.new(v, t)).result


def _copy_2d(b, src, dst, rows, cols):
    """dst[i, j] = src[i, j] for a 2-d view ``src`` (a loop nest in the IR)."""
    c0, c1 = _c(b, 0), _c(b, 1)
    outer = b.insert(loop.ForOp.empty(c0, rows, c1))
    with b.at(outer.body.blocks[0]):
        inner = b.insert(loop.ForOp.empty(c0, cols, c1))
        with b.at(inner.body.blocks[0]):
            i, j = outer.induction_var, inner.induction_var
            v = b.insert(mem.LoadOp([src, i, j], [src.type.element])).result
            b.insert(mem.StoreOp([v, dst, i, j]))
            b.insert(loop.YieldOp([]))
        b.insert(loop.YieldOp([]))


def _subview(b, src, offsets, sizes, steps, result_type, drop=()):
    ops = [src] + [_c(b, v) if isinstance(v, int) else v for v in (*offsets, *sizes, *steps)]
    attrs = {"drop": tuple(drop)} if drop else {}
    return b.insert(mem.SubviewOp(ops, [result_type], attrs)).result


def test_subview_with_negative_steps_copied_into_a_result():
    t = MemRefType((6, 8), f32)
    view_t = MemRefType((3, 4), f32, (DYN, DYN))

    def body(b, x):
        v = _subview(b, x, (5, 7), (3, 4), (-2, -2), view_t)  # x[5::-2, 7::-2]
        out = b.insert(mem.AllocOp([], [MemRefType((3, 4), f32)])).result
        _copy_2d(b, v, out, _c(b, 3), _c(b, 4))
        return [out]

    x = np.arange(48, dtype=np.float32).reshape(6, 8)
    (out,) = both(compile_ir(_module([t], body)), [x])
    np.testing.assert_array_equal(out, x[5::-2, 7::-2])


def test_returned_views_of_parameters_alias_them():
    t = MemRefType((DYN, DYN), i32)

    def body(b, x):
        n0 = b.insert(mem.DimOp([x], [index], {"axis": 0})).result
        row = _subview(b, x, (1, 0), (1, _dim(b, x, 1)), (1, 1), MemRefType((DYN,), i32),
                       drop=(0,))
        rev = _subview(b, x, (_sub1(b, n0), 0), (n0, _dim(b, x, 1)), (-1, 1),
                       MemRefType((DYN, DYN), i32, (DYN, 1)))
        tr = b.insert(mem.TransposeOp([x], [MemRefType((DYN, DYN), i32, (1, DYN))],
                                      {"perm": (1, 0)})).result
        return [row, rev, tr, x]

    kernel = compile_ir(_module([t], body))
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    row, rev, tr, same = both(kernel, [x])
    np.testing.assert_array_equal(row, x[1])
    np.testing.assert_array_equal(rev, x[::-1])
    np.testing.assert_array_equal(tr, x.T)
    assert same is x
    for view in (row, rev, tr):
        assert np.shares_memory(view, x)
    row[0] = 100
    assert x[1, 0] == 100


def _dim(b, x, axis):
    return b.insert(mem.DimOp([x], [index], {"axis": axis})).result


def _sub1(b, v):
    return b.insert(arith.SubOp.new(v, _c(b, 1))).result


def test_reshape_view_and_kernel_allocated_result():
    """A result whose size is computed (2 * n) is allocated by the kernel itself."""
    t = MemRefType((DYN,), f32)

    def body(b, x):
        n = _dim(b, x, 0)
        n2 = b.insert(arith.MulOp.new(n, _c(b, 2))).result
        buf = b.insert(mem.AllocOp([n2], [MemRefType((DYN,), f32)])).result
        c0, c1 = _c(b, 0), _c(b, 1)
        lp = b.insert(loop.ForOp.empty(c0, n2, c1))
        with b.at(lp.body.blocks[0]):
            i = lp.induction_var
            src = b.insert(arith.FloorDivOp.new(i, _c(b, 2))).result
            v = b.insert(mem.LoadOp([x, src], [f32])).result
            b.insert(mem.StoreOp([v, buf, i]))
            b.insert(loop.YieldOp([]))
        grid = b.insert(mem.ReshapeOp([buf, n], [MemRefType((DYN, 2), f32)])).result
        return [grid, buf]

    kernel = compile_ir(_module([t], body))
    assert not kernel.abi.buffers[0].prealloc
    x = np.array([1.0, 2.0, 3.0], np.float32)
    grid, flat = both(kernel, [x])
    np.testing.assert_array_equal(grid, np.repeat(x, 2).reshape(3, 2))
    np.testing.assert_array_equal(flat, np.repeat(x, 2))
    assert np.shares_memory(grid, flat)
    del flat
    grid[:] = 7  # the shared buffer lives as long as any result using it


STRIDED = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<?x?xf64, strided<[?, ?]>>, %y: memref<f64>):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %n0 = "mem.dim"(%x) {axis = 0} : (memref<?x?xf64, strided<[?, ?]>>) -> index
    %n1 = "mem.dim"(%x) {axis = 1} : (memref<?x?xf64, strided<[?, ?]>>) -> index
    %y0 = "mem.load"(%y) : (memref<f64>) -> f64
    %out = "mem.alloc"(%n0, %n1) : (index, index) -> memref<?x?xf64>
    "loop.for"(%c0, %n0, %c1) ({
    ^bb0(%i: index):
      "loop.for"(%c0, %n1, %c1) ({
      ^bb0(%j: index):
        %v = "mem.load"(%x, %i, %j) : (memref<?x?xf64, strided<[?, ?]>>, index, index) -> f64
        %w = "arith.mul"(%v, %y0) : (f64, f64) -> f64
        "mem.store"(%w, %out, %i, %j) : (f64, memref<?x?xf64>, index, index) -> ()
        "loop.yield"() : () -> ()
      }) : (index, index, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    %two = "arith.constant"() {value = 2.0} : () -> f64
    "mem.store"(%two, %y) : (f64, memref<f64>) -> ()
    "func.return"(%out) : (memref<?x?xf64>) -> ()
  }) {function_type = (memref<?x?xf64, strided<[?, ?]>>, memref<f64>) -> memref<?x?xf64>,
      sym_name = "f"} : () -> ()
}) : () -> ()
"""


@pytest.mark.parametrize("make", [
    lambda a: a, lambda a: np.asfortranarray(a), lambda a: a[::-1, ::2],
    lambda a: a[1:, ::-3], lambda a: a.T, lambda a: a[:0], lambda a: a[2:3, 1:2]])
def test_strided_layouts_and_a_0d_inout_argument(make):
    kernel = compile_ir(STRIDED)
    x = make(np.arange(42, dtype=np.float64).reshape(6, 7))
    for call in (kernel, descriptor_twin(kernel)):
        y = np.array(1.5)
        (out,) = call([x, y])
        np.testing.assert_array_equal(out, x * 1.5)
        assert y == 2.0  # written in place


def test_constants_f16_and_bool_storage():
    table = np.array([0.5, -1.25, 3.0, 1e4], np.float16)

    def body(b, x, m):
        c = b.insert(mem.ConstantOp([], [MemRefType((4,), f16)],
                                    {"value": DenseArray(table, TensorType((4,), f16))}))
        lut = c.result
        out = b.insert(mem.AllocOp([], [MemRefType((4,), f16)])).result
        flags = b.insert(mem.AllocOp([], [MemRefType((4,), i1)])).result
        c0, c1, c4 = _c(b, 0), _c(b, 1), _c(b, 4)
        lp = b.insert(loop.ForOp.empty(c0, c4, c1))
        with b.at(lp.body.blocks[0]):
            i = lp.induction_var
            v = b.insert(mem.LoadOp([x, i], [f16])).result
            t = b.insert(mem.LoadOp([lut, i], [f16])).result
            s = b.insert(arith.AddOp.new(v, t)).result
            keep = b.insert(mem.LoadOp([m, i], [i1])).result
            r = b.insert(arith.SelectOp.new(keep, s, v)).result
            b.insert(mem.StoreOp([r, out, i]))
            neg = b.insert(arith.NotOp.new(keep)).result
            b.insert(mem.StoreOp([neg, flags, i]))
            b.insert(loop.YieldOp([]))
        return [out, flags, lut]

    kernel = compile_ir(_module([MemRefType((4,), f16), MemRefType((4,), i1)], body))
    x = np.array([1.0, 2.0, 0.1, 65504.0], np.float16)
    m = np.array([True, False, True, True])
    out, flags, lut = both(kernel, [x, m])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, np.where(m, x + table, x))
    np.testing.assert_array_equal(flags, ~m)
    np.testing.assert_array_equal(lut, table)
    lut[0] = 9  # a copy: the kernel's constant stays intact
    np.testing.assert_array_equal(kernel([x, m])[2], table)


def test_same_buffer_returned_twice_is_the_same_object():
    def body(b, x):
        out = b.insert(mem.AllocOp([], [MemRefType((3,), f32)])).result
        c0, c1, c3 = _c(b, 0), _c(b, 1), _c(b, 3)
        lp = b.insert(loop.ForOp.empty(c0, c3, c1))
        with b.at(lp.body.blocks[0]):
            v = b.insert(mem.LoadOp([x, lp.induction_var], [f32])).result
            b.insert(mem.StoreOp([v, out, lp.induction_var]))
            b.insert(loop.YieldOp([]))
        return [out, out]

    kernel = compile_ir(_module([MemRefType((3,), f32)], body))
    a, b = kernel([np.ones(3, np.float32)])
    assert a is b


def test_static_shapes_vectorize_and_inspection_works():
    t = MemRefType((64, 32), f32)

    def body(b, x):
        out = b.insert(mem.AllocOp([], [t])).result
        zero = _c(b, 0.0, f32)
        c0, c1 = _c(b, 0), _c(b, 1)
        outer = b.insert(loop.ForOp.empty(c0, _c(b, 64), c1))
        with b.at(outer.body.blocks[0]):
            inner = b.insert(loop.ForOp.empty(c0, _c(b, 32), c1))
            with b.at(inner.body.blocks[0]):
                idx = [outer.induction_var, inner.induction_var]
                v = b.insert(mem.LoadOp([x, *idx], [f32])).result
                r = b.insert(arith.MaxOp.new(v, zero)).result
                b.insert(mem.StoreOp([r, out, *idx]))
                b.insert(loop.YieldOp([]))
            b.insert(loop.YieldOp([]))
        return [out]

    kernel = compile_ir(_module([t], body))
    x = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    np.testing.assert_array_equal(both(kernel, [x])[0], np.maximum(x, 0))
    assert "x float>" in kernel.llvm_ir  # vector code
    assert "ret" in kernel.asm and "pyasc.kernel.f" in kernel.asm
    assert '"mem.alloc"' in kernel.loop_ir


def _bf16_round(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 precision (nearest even), as float32."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = bits.view(np.float32)
    return np.where(np.isnan(x), x, out)


def test_bf16_arithmetic_and_storage_inside_a_kernel():
    """bf16 arrays cannot cross the boundary without ml_dtypes, but kernels may use bf16
    internally: casts round to nearest even, ops round after each step, storage is 2 bytes."""
    consts = np.array([1.0, 3.14159, -2.71828, 1e-3], np.float32)

    def body(b, x, y):
        n = _dim(b, x, 0)
        tmp = b.insert(mem.AllocOp([n], [MemRefType((DYN,), bf16)])).result
        out = b.insert(mem.AllocOp([n], [MemRefType((DYN,), f32)])).result
        table = b.insert(mem.ConstantOp([], [MemRefType((4,), bf16)], {
            "value": DenseArray(consts, TensorType((4,), bf16))})).result
        c0, c1, c3 = _c(b, 0), _c(b, 1), _c(b, 3)
        lp = b.insert(loop.ForOp.empty(c0, n, c1))
        with b.at(lp.body.blocks[0]):
            i = lp.induction_var
            xb = b.insert(arith.CastOp.new(b.insert(mem.LoadOp([x, i], [f32])).result,
                                           bf16)).result
            yb = b.insert(arith.CastOp.new(b.insert(mem.LoadOp([y, i], [f32])).result,
                                           bf16)).result
            k = b.insert(arith.RemOp.new(i, b.insert(arith.AddOp.new(c3, c1)).result)).result
            t = b.insert(mem.LoadOp([table, k], [bf16])).result
            s = b.insert(arith.AddOp.new(b.insert(arith.MulOp.new(xb, yb)).result, t)).result
            b.insert(mem.StoreOp([s, tmp, i]))
            back = b.insert(mem.LoadOp([tmp, i], [bf16])).result
            b.insert(mem.StoreOp([b.insert(arith.CastOp.new(back, f32)).result, out, i]))
            b.insert(loop.YieldOp([]))
        b.insert(mem.DeallocOp([tmp]))
        return [out]

    t = MemRefType((DYN,), f32)
    kernel = compile_ir(_module([t, t], body))
    rng = np.random.default_rng(3)
    x = rng.standard_normal(64).astype(np.float32) * 100
    y = rng.standard_normal(64).astype(np.float32)
    x[:3] = [np.nan, np.inf, 1.00390625]  # 1 + 2**-8: a tie, rounds to even (1.0)
    (out,) = both(kernel, [x, y])
    table = _bf16_round(consts)[np.arange(64) % 4]
    want = _bf16_round(_bf16_round(_bf16_round(x) * _bf16_round(y)) + table)
    np.testing.assert_array_equal(out, want)


PING_PONG = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<5xf64>, %n: index):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c5 = "arith.constant"() {value = 5} : () -> index
    %half = "arith.constant"() {value = 0.5} : () -> f64
    %first = "mem.alloc"() : () -> memref<5xf64>
    "loop.for"(%c0, %c5, %c1) ({
    ^bb0(%i: index):
      %v = "mem.load"(%x, %i) : (memref<5xf64>, index) -> f64
      "mem.store"(%v, %first, %i) : (f64, memref<5xf64>, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    %last = "loop.for"(%c0, %n, %c1, %first) ({
    ^bb0(%k: index, %cur: memref<5xf64>):
      %next = "mem.alloc"() : () -> memref<5xf64>
      "loop.for"(%c0, %c5, %c1) ({
      ^bb0(%i2: index):
        %w = "mem.load"(%cur, %i2) : (memref<5xf64>, index) -> f64
        %h = "arith.mul"(%w, %half) : (f64, f64) -> f64
        "mem.store"(%h, %next, %i2) : (f64, memref<5xf64>, index) -> ()
        "loop.yield"() : () -> ()
      }) : (index, index, index) -> ()
      "mem.dealloc"(%cur) : (memref<5xf64>) -> ()
      "loop.yield"(%next) : (memref<5xf64>) -> ()
    }) : (index, index, index, memref<5xf64>) -> memref<5xf64>
    %odd = "arith.rem"(%n, %c1) : (index, index) -> index
    %zero = "arith.cmp"(%odd, %c0) {predicate = "eq"} : (index, index) -> i1
    %pick = "loop.if"(%zero) ({
      "loop.yield"(%last) : (memref<5xf64>) -> ()
    }, {
      "loop.yield"(%last) : (memref<5xf64>) -> ()
    }) : (i1) -> memref<5xf64>
    "func.return"(%pick) : (memref<5xf64>) -> ()
  }) {function_type = (memref<5xf64>, index) -> memref<5xf64>, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_buffers_carried_through_loops_and_ifs_are_returned_and_freed():
    kernel = compile_ir(PING_PONG)
    buf = kernel.abi.buffers[0]
    assert not buf.prealloc  # the kernel allocates it; the runtime frees it
    x = np.arange(5, dtype=np.float64)
    for n in (0, 1, 4):
        (out,) = both(kernel, [x, n])
        np.testing.assert_array_equal(out, x * 0.5 ** n)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    big = compile_ir(PING_PONG.replace("5xf64", "65536xf64").replace("value = 5}",
                                                                      "value = 65536}"))
    xs = np.ones(65536)
    for _ in range(2000):  # 1 GiB if the returned or the carried buffers leaked
        big([xs, 3])
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000


CHOOSE = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<3xf32, strided<[?]>>, %y: memref<3xf32, strided<[?]>>, %c: i1):
    %w = "loop.if"(%c) ({
      "loop.yield"(%x) : (memref<3xf32, strided<[?]>>) -> ()
    }, {
      "loop.yield"(%y) : (memref<3xf32, strided<[?]>>) -> ()
    }) : (i1) -> memref<3xf32, strided<[?]>>
    "func.return"(%w) : (memref<3xf32, strided<[?]>>) -> ()
  }) {function_type = (memref<3xf32, strided<[?]>>, memref<3xf32, strided<[?]>>, i1) ->
      memref<3xf32, strided<[?]>>, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_one_of_several_arguments_is_returned_as_the_callers_object():
    """``x if c else y`` returns the caller's own object, whichever it is."""
    kernel = compile_ir(CHOOSE)
    x = np.arange(3, dtype=np.float32)
    y = np.arange(9, dtype=np.float32)[::-3]
    for call in (kernel, descriptor_twin(kernel)):
        assert call([x, y, True])[0] is x
        assert call([x, y, False])[0] is y
