"""Small loop-level kernels for the CPU runtime tests."""

from __future__ import annotations

from pyasc.backend.base import Program
from pyasc.ir import parse_module


def relu_text(shape: str = "?", dtype: str = "f32", layout: str = "") -> str:
    """``relu(x: memref<shape x dtype>) -> fresh buffer`` (1-d)."""
    ty = f"memref<{shape}x{dtype}{layout}>"
    out = f"memref<{shape}x{dtype}>"
    dyn = shape == "?"
    return f'''
"builtin.module"() ({{
  "func.func"() ({{
  ^bb0(%x: {ty}):
    %c0 = "arith.constant"() {{value = 0}} : () -> index
    %c1 = "arith.constant"() {{value = 1}} : () -> index
    %n = "mem.dim"(%x) {{axis = 0}} : ({ty}) -> index
    %out = "mem.alloc"({"%n" if dyn else ""}) : ({"index" if dyn else ""}) -> {out}
    %z = "arith.constant"() {{value = 0.0}} : () -> {dtype}
    "loop.for"(%c0, %n, %c1) ({{
    ^bb0(%i: index):
      %v = "mem.load"(%x, %i) : ({ty}, index) -> {dtype}
      %r = "arith.max"(%v, %z) : ({dtype}, {dtype}) -> {dtype}
      "mem.store"(%r, %out, %i) : ({dtype}, {out}, index) -> ()
      "loop.yield"() : () -> ()
    }}) : (index, index, index) -> ()
    "func.return"(%out) : ({out}) -> ()
  }}) {{function_type = ({ty}) -> {out}, sym_name = "relu"}} : () -> ()
}}) : () -> ()
'''


SCALE_INPLACE = '''
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<4x3xf64, strided<[?, 1]>>, %k: index, %s: f64, %flag: i1):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c3 = "arith.constant"() {value = 3} : () -> index
    %kf = "arith.cast"(%k) : (index) -> f64
    %w = "arith.mul"(%kf, %s) : (f64, f64) -> f64
    "loop.for"(%c0, %c3, %c1) ({
    ^bb0(%j: index):
      %v = "mem.load"(%x, %c0, %j) : (memref<4x3xf64, strided<[?, 1]>>, index, index) -> f64
      %r = "arith.mul"(%v, %w) : (f64, f64) -> f64
      "mem.store"(%r, %x, %c0, %j) : (f64, memref<4x3xf64, strided<[?, 1]>>, index, index)
        -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    %nf = "arith.not"(%flag) : (i1) -> i1
    "func.return"(%w, %nf, %x) : (f64, i1, memref<4x3xf64, strided<[?, 1]>>) -> ()
  }) {function_type = (memref<4x3xf64, strided<[?, 1]>>, index, f64, i1) ->
      (f64, i1, memref<4x3xf64, strided<[?, 1]>>), sym_name = "scale"} : () -> ()
}) : () -> ()
'''
"""``scale(x, k, s, flag)``: multiplies row 0 of a row-strided ``x`` in place by
``k * s`` and returns ``(k * s, not flag, x)``."""


def program(text: str, entry: str, key: str, **options: object) -> Program:
    """A Program for loop-level IR text (``cache`` defaults to on, as for users)."""
    return Program(parse_module(text), entry, key, dict(options))


REPEAT2 = '''
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<?xf32>):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c2 = "arith.constant"() {value = 2} : () -> index
    %n = "mem.dim"(%x) {axis = 0} : (memref<?xf32>) -> index
    %m = "arith.mul"(%n, %c2) : (index, index) -> index
    %out = "mem.alloc"(%m) : (index) -> memref<?xf32>
    "loop.for"(%c0, %m, %c1) ({
    ^bb0(%i: index):
      %h = "arith.floordiv"(%i, %c2) : (index, index) -> index
      %v = "mem.load"(%x, %h) : (memref<?xf32>, index) -> f32
      "mem.store"(%v, %out, %i) : (f32, memref<?xf32>, index) -> ()
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "func.return"(%out) : (memref<?xf32>) -> ()
  }) {function_type = (memref<?xf32>) -> memref<?xf32>, sym_name = "repeat2"} : () -> ()
}) : () -> ()
'''
"""``np.repeat(x, 2)``: the result's size is computed, so the kernel allocates it."""
