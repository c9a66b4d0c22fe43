"""Text tests: Python source in, IR out (FileCheck lines), one per construct group."""

from __future__ import annotations

import numpy as np
from helpers import filecheck, ops

from pyasc import fusion_scope, hybrid

F32 = np.zeros((4, 6), np.float32)


def ir(fn, *args, optimized=False, **kwargs) -> str:
    return fn.ir(*args, optimized=optimized, **kwargs)


def test_parameters_locations_and_weak_scalar_promotion():
    @hybrid
    def f(x, n, s):
        return x * n + s

    text = ir(f, F32, 3, 0.5)
    filecheck(text, f"""
        // CHECK: ^bb0(%x: memref<4x6xf32>, %n: index, %s: f64):
        // CHECK-NEXT: %[[X:[0-9]+]] = "mem.to_tensor"(%x) : (memref<4x6xf32>) -> tensor<4x6xf32> loc("{__file__}":20:16)
        // CHECK-NEXT: %[[N:[0-9]+]] = "arith.cast"(%n) : (index) -> f32
        // CHECK-NEXT: %[[M:[0-9]+]] = "arith.mul"(%[[X]], %[[N]]) : (tensor<4x6xf32>, f32) -> tensor<4x6xf32> loc("{__file__}":20:16)
        // CHECK-NEXT: %[[S:[0-9]+]] = "arith.cast"(%s) : (f64) -> f32
        // CHECK-NEXT: "arith.add"(%[[M]], %[[S]])
        // CHECK: "func.return"
        // CHECK-SAME: loc("{__file__}":19:5)
    """)


def test_compile_time_values_fold_in_python():
    @hybrid
    def f(x):
        h, w = x.shape
        k = (h * w) // 2 + len(x.shape)
        return x + k

    filecheck(ir(f, F32), """
        // CHECK: "arith.constant"() {value = 14.0} : () -> f32
        // CHECK-NOT: "arith.mul"
    """)


def test_if_with_a_run_time_condition_yields_joined_values():
    @hybrid
    def f(x, n):
        y = 0
        if n > 2:
            y = x.sum()
        return y

    filecheck(ir(f, F32, 3), """
        // CHECK: %[[C:[0-9]+]] = "arith.cmp"(%n, %{{[0-9]+}}) {predicate = "gt"}
        // CHECK: "loop.if"(%[[C]]) ({
        // CHECK: "tensor.sum"
        // CHECK: "loop.yield"(%{{[0-9]+}}) : (f32) -> ()
        // CHECK: }, {
        // CHECK: "arith.constant"() {value = 0.0} : () -> f32
        // CHECK: "loop.yield"
        // CHECK: }) : (i1) -> f32
    """)


def test_compile_time_if_compiles_one_branch():
    @hybrid
    def f(x):
        if x.ndim == 2:
            return x.sum(axis=1)
        return x.undefined_method()

    assert "loop.if" not in ir(f, F32)


def test_for_range_carries_rebound_names():
    @hybrid
    def f(x, n):
        acc = 0
        for i in range(1, n, 2):
            acc += x[i, 0]
        return acc

    filecheck(ir(f, F32, 5), """
        // CHECK: %[[INIT:[0-9]+]] = "arith.constant"() {value = 0.0} : () -> f32
        // CHECK: "loop.for"(%{{[0-9]+}}, %n, %{{[0-9]+}}, %[[INIT]]) ({
        // CHECK-NEXT: ^bb0(%[[IV:[0-9]+]]: index, %[[ACC:[0-9]+]]: f32):
        // CHECK: "mem.load"(%x, %[[IV]], %{{[0-9]+}})
        // CHECK: "arith.add"(%[[ACC]],
        // CHECK: "loop.yield"
        // CHECK: }) : (index, index, index, f32) -> f32
    """)


def test_break_becomes_a_while_with_a_flag():
    @hybrid
    def f(x):
        for i in range(x.shape[0]):
            if x[i, 0] > 0:
                break
        return x

    filecheck(ir(f, F32), """
        // CHECK: "loop.while"
        // CHECK: ^bb0(%{{[0-9]+}}: index, %[[BROKE:[0-9]+]]: i1):
        // CHECK: "arith.not"(%[[BROKE]])
        // CHECK: "loop.condition"
        // CHECK: "loop.if"
    """)


def test_continue_guards_the_rest_of_the_body():
    @hybrid
    def f(x):
        s = 0.0
        for i in range(4):
            if x[i, 0] < 0:
                continue
            s += x[i, 1]
        return s

    text = ir(f, F32)
    assert "loop.while" not in text and text.count('"loop.if"') == 2
    filecheck(text, """
        // CHECK: "loop.for"
        // CHECK: "arith.not"
        // CHECK: "loop.if"
    """)


def test_slices_fold_to_static_window_shapes():
    @hybrid
    def f(img):
        out = np.zeros_like(img)
        for i in range(2, img.shape[0] - 2):
            out[i, 0] = img[i - 2:i + 3, 0:5].sum()
        return out

    text = ir(f, np.zeros((8, 6), np.float32))
    filecheck(text, """
        // CHECK: "mem.alloc"() : () -> memref<8x6xf32>
        // CHECK: "mem.fill"
        // CHECK: "mem.subview"(%img,
        // CHECK-SAME: -> memref<5x5xf32, strided<[6, 1]>>
        // CHECK: "mem.store"
    """)
    assert "arith.select" not in text and "arith.min" not in text


def test_negative_and_dynamic_indices():
    @hybrid(boundscheck=False)  # the checks: test_bounds_asserts_are_on_by_default
    def f(x, i):
        return x[-1, i]

    filecheck(ir(f, F32, 2), """
        // CHECK: %[[NEG:[0-9]+]] = "arith.cmp"(%i, %{{[0-9]+}}) {predicate = "lt"}
        // CHECK: %[[WRAP:[0-9]+]] = "arith.add"(%i,
        // CHECK: %[[IDX:[0-9]+]] = "arith.select"(%[[NEG]], %[[WRAP]], %i)
        // CHECK: %[[LAST:[0-9]+]] = "arith.constant"() {value = 3} : () -> index
        // CHECK: "mem.load"(%x, %[[LAST]], %[[IDX]])
    """)


def test_stores_views_and_masks():
    @hybrid
    def f(x):
        x[1:3, ::2] = 0
        x[x > 1] = 1
        y = x.T
        y[0, 0] = 5
        return x

    filecheck(ir(f, F32), """
        // CHECK: %[[V:[0-9]+]] = "mem.subview"(%x,
        // CHECK-SAME: -> memref<2x3xf32, strided<[6, 2]>>
        // CHECK: "mem.fill"(%{{[0-9]+}}, %[[V]])
        // CHECK: "arith.select"
        // CHECK: "mem.write"
        // CHECK: "mem.transpose"(%x) {perm = [1, 0]} : (memref<4x6xf32>) -> memref<6x4xf32, strided<[1, 6]>>
        // CHECK: "mem.store"
    """)


def test_reductions_and_numpy_dtypes():
    @hybrid
    def f(x):
        return np.sum(x, axis=0), np.mean(x), np.argmax(x, axis=-1)

    text = ir(f, np.zeros((4, 6), np.int8))
    filecheck(text, """
        // CHECK: "arith.cast"(%{{[0-9]+}}) : (tensor<4x6xi8>) -> tensor<4x6xi64>
        // CHECK: "tensor.sum"(%{{[0-9]+}}) {axes = [0], keepdims = false} : (tensor<4x6xi64>) -> tensor<6xi64>
        // CHECK: "tensor.sum"(%{{[0-9]+}}) {axes = [0, 1], keepdims = false} : (tensor<4x6xf64>) -> f64
        // CHECK: "arith.div"
        // CHECK: "tensor.argmax"(%{{[0-9]+}}) {axis = 1, keepdims = false} : (tensor<4x6xi8>) -> tensor<4xindex>
        // CHECK: "arith.cast"(%{{[0-9]+}}) : (tensor<4xindex>) -> tensor<4xi64>
    """)


def test_inlined_callee_keeps_its_own_locations():
    @hybrid
    def callee(v):
        return v * 2

    @hybrid
    def f(x):
        return callee(x) + 1

    text = ir(f, F32)
    assert "func.call" not in text
    line = callee.__wrapped__.__code__.co_firstlineno + 2  # decorator, def, return
    filecheck(text, f"""
        // CHECK: "arith.mul"
        // CHECK-SAME: loc("{__file__}":{line}:16)
    """)


def test_fusion_scope_yields_values_used_after():
    @hybrid
    def f(x):
        with fusion_scope():
            a = x * 2
            tmp = a + 1
            b = tmp * tmp
        return b

    filecheck(ir(f, F32), """
        // CHECK: %[[R:[0-9]+]] = "fusion.scope"() ({
        // CHECK: "arith.mul"
        // CHECK: "fusion.yield"(%{{[0-9]+}}) : (tensor<4x6xf32>) -> ()
        // CHECK: }) : () -> tensor<4x6xf32>
        // CHECK: "func.return"(%[[R]])
    """)


def test_bounds_asserts_are_on_by_default():
    def f(x, i):
        return x[i, 1]

    assert "func.assert" not in ir(hybrid(boundscheck=False)(f), F32, 1)
    # -4 <= i < 4 on the run-time index as written, reporting i and the size; the
    # constant 1 on the static axis of size 6 needs no check
    filecheck(ir(hybrid(f), F32, 1), """
        // CHECK: %[[LO:[0-9]+]] = "arith.cmp"(%i, %{{[0-9]+}}) {predicate = "ge"}
        // CHECK: %[[HI:[0-9]+]] = "arith.cmp"(%i, %{{[0-9]+}}) {predicate = "lt"}
        // CHECK: %[[OK:[0-9]+]] = "arith.and"(%[[LO]], %[[HI]])
        // CHECK: "func.assert"(%[[OK]], %i, %{{[0-9]+}}) {kind = "bounds", message = "index {0} is out of bounds for axis 0 with size {1} (array 'x')"}
        // CHECK-NOT: axis 1
    """)


def test_user_assert_is_a_run_time_check():
    @hybrid
    def f(x, n):
        assert n > 0, "n must be positive"
        return x

    filecheck(ir(f, F32, 1), """
        // CHECK: "func.assert"(%{{[0-9]+}}) {kind = "assert", message = "n must be positive"}
    """)


def test_optimized_ir_is_smaller():
    @hybrid
    def f(x):
        a = x + 0
        b = x + 0
        return a * b

    assert len(ops(ir(f, F32, optimized=True))) <= len(ops(ir(f, F32)))


def test_every_op_has_a_source_location():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "bilateral_filter.py"
    spec = importlib.util.spec_from_file_location("bf_locations", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = module.bilateral_filter
    for program in (fn.specialize(np.zeros((12, 12), np.float32)),):
        func = program.module.get("bilateral_filter")
        unknown = [op.name for op in func.walk() if not op.loc.known]
        assert not unknown
        assert {op.loc.file for op in func.walk()} == {str(path)}
