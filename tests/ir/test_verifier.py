"""The verifier accepts valid modules and rejects each broken rule with an
IRVerificationError (E50021) that names the op and points at its location."""

from __future__ import annotations

import pytest
from ir_samples import all_ops_module

from pyasc.errors import IRVerificationError
from pyasc.ir import Builder, Location, parse_module, verify_module
from pyasc.ir.ops import arith, func, loop
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.types import f32, i1, index


def _module(body: str, args: str = "", ftype: str = "() -> ()") -> str:
    """One function ``f`` of type ``ftype``; ``args`` are its entry block arguments."""
    head = f"  ^bb0({args}):\n" if args else ""
    return ('"builtin.module"() ({\n  "func.func"() ({\n' + head + body
            + f'\n  }}) {{function_type = {ftype}, sym_name = "f"}} : () -> ()\n}}) : () -> ()')


RET = '\n    "func.return"() : () -> ()'

INVALID = {
    # terminators
    "missing func.return": (_module('    %a = "arith.constant"() {value = 1.0} : () -> f32'),
                            "must end with 'func.return'"),
    "terminator not last": (_module('    "func.return"() : () -> ()' + RET),
                            "terminator must be the last op"),
    "wrong terminator": (_module('    "loop.if"(%c) ({\n      "func.return"() : () -> ()\n'
                                 '    }, {\n      "loop.yield"() : () -> ()\n'
                                 '    }) : (i1) -> ()' + RET, "%c: i1", "(i1) -> ()"),
                         "must end with 'loop.yield', found 'func.return'"),
    "multi-block region": (_module('    "func.return"() : () -> ()\n  ^bb1:' + RET),
                           "region 0 has 2 blocks"),
    # yields and conditions
    "for yield type": (_module(
        '    %r = "loop.for"(%n, %n, %n, %x) ({\n    ^bb0(%i: index, %a: f32):\n'
        '      "loop.yield"(%i) : (index) -> ()\n'
        '    }) : (index, index, index, f32) -> f32' + RET, "%n: index, %x: f32",
        "(index, f32) -> ()"), "yield types (index) must match inits (f32)"),
    "if yield count": (_module(
        '    %r = "loop.if"(%c) ({\n      "loop.yield"(%x) : (f32) -> ()\n    }, {\n'
        '      "loop.yield"() : () -> ()\n    }) : (i1) -> f32' + RET, "%c: i1, %x: f32",
        "(i1, f32) -> ()"), "yield types () must match results (f32)"),
    "while condition types": (_module(
        '    %r = "loop.while"(%x) ({\n    ^bb0(%a: f32):\n'
        '      "loop.condition"(%c) : (i1) -> ()\n    }, {\n    ^bb0(%b: f32):\n'
        '      "loop.yield"(%b) : (f32) -> ()\n    }) : (f32) -> f32' + RET,
        "%c: i1, %x: f32", "(i1, f32) -> ()"), "condition values must match results"),
    "condition not i1": (_module(
        '    %r = "loop.while"(%x) ({\n    ^bb0(%a: f32):\n'
        '      "loop.condition"(%a, %a) : (f32, f32) -> ()\n    }, {\n    ^bb0(%b: f32):\n'
        '      "loop.yield"(%b) : (f32) -> ()\n    }) : (f32) -> f32' + RET,
        "%x: f32", "(f32) -> ()"), "needs an i1 condition"),
    "return types": (_module('    "func.return"(%x) : (f32) -> ()', "%x: f32",
                             "(f32) -> index"), "returns (f32) but the type says (index)"),
    # per-op types, one per family
    "arith element types": (_module('    %a = "arith.add"(%x, %n) : (f32, index) -> f32' + RET,
                                    "%x: f32, %n: index", "(f32, index) -> ()"),
                            "same element type"),
    "arith broadcast result": (_module(
        '    %a = "arith.add"(%t, %x) : (tensor<4xf32>, f32) -> f32' + RET,
        "%t: tensor<4xf32>, %x: f32", "(tensor<4xf32>, f32) -> ()"),
        "does not match inferred tensor<4xf32>"),
    "arith incompatible shapes": (_module(
        '    %a = "arith.mul"(%t, %u) : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>' + RET,
        "%t: tensor<4xf32>, %u: tensor<3xf32>", "(tensor<4xf32>, tensor<3xf32>) -> ()"),
        "could not be broadcast"),
    "math on integers": (_module('    %a = "math.exp"(%n) : (index) -> index' + RET,
                                 "%n: index", "(index) -> ()"), "not allowed"),
    "tensor reshape count": (_module(
        '    %a = "tensor.reshape"(%t) : (tensor<4xf32>) -> tensor<3xf32>' + RET,
        "%t: tensor<4xf32>", "(tensor<4xf32>) -> ()"), "cannot reshape"),
    "tensor reduction axes": (_module(
        '    %a = "tensor.sum"(%t) {axes = [1, 0], keepdims = false} : '
        '(tensor<2x2xf32>) -> f32' + RET, "%t: tensor<2x2xf32>", "(tensor<2x2xf32>) -> ()"),
        "axes must be sorted"),
    "mem store type": (_module('    "mem.store"(%x, %m, %n) : (f32, memref<4xi32>, index) -> ()'
                               + RET, "%x: f32, %m: memref<4xi32>, %n: index",
                               "(f32, memref<4xi32>, index) -> ()"), "stored f32 into"),
    "mem alloc dims": (_module('    %a = "mem.alloc"() : () -> memref<?xf32>' + RET),
                       "expected 1 dynamic-dim operands"),
    "loop bounds": (_module(
        '    "loop.for"(%x, %x, %x) ({\n    ^bb0(%i: index):\n      "loop.yield"() : () -> ()\n'
        '    }) : (f32, f32, f32) -> ()' + RET, "%x: f32", "(f32) -> ()"),
        "loop bounds must be index"),
    "call unknown callee": (_module('    "func.call"() {callee = "nope"} : () -> ()' + RET),
                            "unknown callee 'nope'"),
    "call argument types": (_module('    "func.call"(%n) {callee = "f"} : (index) -> ()' + RET,
                                    "%x: f32, %n: index", "(f32, index) -> ()"),
                            "call argument types differ"),
    # attributes
    "missing attribute": (_module('    %a = "arith.cmp"(%x, %x) : (f32, f32) -> i1' + RET,
                                  "%x: f32", "(f32) -> ()"), "missing attribute 'predicate'"),
    "unknown attribute": (_module('    %a = "arith.neg"(%x) {fast = true} : (f32) -> f32' + RET,
                                  "%x: f32", "(f32) -> ()"), "unknown attributes ['fast']"),
    "attribute kind": (_module(
        '    %a = "tensor.transpose"(%t) {perm = 3} : (tensor<4xf32>) -> tensor<4xf32>' + RET,
        "%t: tensor<4xf32>", "(tensor<4xf32>) -> ()"), "attribute 'perm' has invalid value"),
    "bad predicate": (_module('    %a = "arith.cmp"(%x, %x) {predicate = "lte"} : (f32, f32)'
                              ' -> i1' + RET, "%x: f32", "(f32) -> ()"), "unknown predicate"),
    "assert kind": (_module('    "func.assert"(%c) {kind = "panic", message = ""} : (i1) -> ()'
                            + RET, "%c: i1", "(i1) -> ()"), "kind must be one of"),
    "assert value type": (_module('    "func.assert"(%c, %x) {kind = "bounds", message = "{0}"} :'
                                  ' (i1, f32) -> ()' + RET, "%c: i1, %x: f32",
                                  "(i1, f32) -> ()"), "reported values must be integers"),
    "assert template": (_module('    "func.assert"(%c, %n) {kind = "bounds", message = "{0} {1}"}'
                                ' : (i1, index) -> ()' + RET, "%c: i1, %n: index",
                                "(i1, index) -> ()"), "message is not a template for 1 values"),
    "constant kind": (_module('    %a = "arith.constant"() {value = 1} : () -> f32' + RET),
                      "f32 constant must be a float"),
    "constant range": (_module('    %a = "arith.constant"() {value = 300} : () -> i8' + RET),
                       "300 is out of range for i8"),
    "dense type": (_module('    %a = "arith.constant"() {value = dense<[1.0, 2.0] : '
                           'tensor<2xf32>>} : () -> tensor<2xf64>' + RET),
                   "does not match result tensor<2xf64>"),
    "module content": ('"builtin.module"() ({\n  %a = "arith.constant"() {value = 1.0} : '
                       '() -> f32\n}) : () -> ()', "module may hold only functions"),
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_module_is_rejected(name: str) -> None:
    text, fragment = INVALID[name]
    with pytest.raises(IRVerificationError) as info:
        parse_module(text)
    assert info.value.code == "E50021"
    assert fragment in info.value.message, info.value.message


def test_error_names_op_and_location() -> None:
    text = _module('    %a = "math.exp"(%n) : (index) -> index loc("k.py":7:12)' + RET,
                   "%n: index", "(index) -> ()")
    with pytest.raises(IRVerificationError) as info:
        parse_module(text)
    err = info.value
    assert "'math.exp'" in err.message
    assert (err.filename, err.lineno, err.col_offset) == ("k.py", 7, 11)


# ---------------------------------------------------------------------------- dominance
# The parser already rejects names used before their definition, so these modules are
# built with the Builder.


def _function(*params):
    mod = ModuleOp.empty()
    fn = FuncOp.empty("f", list(params), [])
    mod.append(fn)
    return mod, fn, Builder.at_end(fn.entry, Location("d.py", 1, 1))


def test_use_before_definition() -> None:
    mod, fn, b = _function(f32)
    x = fn.entry.args[0]
    late = arith.NegOp.new(x)
    b.insert(arith.AddOp.new(x, late.result))
    b.insert(late)
    b.insert(func.ReturnOp([]))
    with pytest.raises(IRVerificationError, match="does not dominate"):
        verify_module(mod)


def test_value_from_inside_a_region_used_outside() -> None:
    mod, fn, b = _function(i1, f32)
    c, x = fn.entry.args
    op = b.insert(loop.IfOp.empty(c))
    with b.at(op.then_region.block):
        inner = b.insert(arith.NegOp.new(x)).result
        b.insert(loop.YieldOp([]))
    with b.at(op.else_region.block):
        b.insert(loop.YieldOp([]))
    b.insert(func.ReturnOp([inner]))
    fn.set_result_types([f32])
    with pytest.raises(IRVerificationError, match="does not dominate"):
        verify_module(mod)


def test_functions_are_isolated() -> None:
    mod, fn, b = _function(f32)
    b.insert(func.ReturnOp([]))
    other = FuncOp.empty("g", [], [f32])
    mod.append(other)
    Builder.at_end(other.entry).insert(func.ReturnOp([fn.entry.args[0]]))
    with pytest.raises(IRVerificationError, match="does not dominate"):
        verify_module(mod)


def test_nested_regions_see_enclosing_values() -> None:
    mod, fn, b = _function(index, f32)
    n, x = fn.entry.args
    zero = b.insert(arith.ConstantOp.new(0, index)).result
    one = b.insert(arith.ConstantOp.new(1, index)).result
    outer = b.insert(loop.ForOp.empty(zero, n, one, [x]))
    with b.at(outer.body.block):
        inner = b.insert(loop.ForOp.empty(zero, outer.induction_var, one,
                                          [outer.iter_args[0]]))
        with b.at(inner.body.block):
            b.insert(loop.YieldOp([b.insert(arith.AddOp.new(inner.iter_args[0], x)).result]))
        b.insert(loop.YieldOp([inner.result]))
    b.insert(func.ReturnOp([outer.result]))
    fn.set_result_types([f32])
    verify_module(mod)


def test_sample_modules_verify() -> None:
    verify_module(all_ops_module())
