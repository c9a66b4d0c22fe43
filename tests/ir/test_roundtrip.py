"""Text format: ``str(parse_module(str(m))) == str(m)`` for a module using every op,
for random modules, and for types; malformed text gives located IRParseErrors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir_samples import all_ops_module
from irgen import modules

import pyasc.ir.ops  # noqa: F401  - registers every op
from pyasc.errors import IRParseError
from pyasc.ir import OP_REGISTRY, parse_module, parse_type, verify_module
from pyasc.ir.types import DYN, SCALAR_TYPES, MemRefType, TensorType


def assert_round_trips(module) -> str:
    text = str(module)
    again = str(parse_module(text))
    assert again == text
    return text


def test_all_ops_module_round_trips() -> None:
    module = all_ops_module()
    verify_module(module)
    text = assert_round_trips(module)
    assert 'loc("\\u00fcn\\u00efc\\u00f6d\\u00e9 \\u2713.py":7:80)' in text
    assert "nan" in text and "-inf" in text and "-0.0" in text


def test_every_registered_op_has_round_trip_coverage() -> None:
    used = {op.name for op in all_ops_module().walk()}
    # Ops of backends (e.g. ``ascend.*``, registered when a backend is imported) are
    # covered by that backend's tests.
    core = {name for name, cls in OP_REGISTRY.items() if cls.__module__.startswith("pyasc.ir.")}
    missing = sorted(core - used)
    assert not missing, f"add these ops to tests/ir/ir_samples.py: {missing}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen=modules(executable=False))
def test_random_modules_round_trip(gen) -> None:
    verify_module(gen.module)
    assert_round_trips(gen.module)


@st.composite
def types(draw):
    elem = draw(st.sampled_from(sorted(SCALAR_TYPES.values(), key=str)))
    shape = tuple(draw(st.lists(st.integers(0, 9) | st.just(DYN), max_size=3)))
    kind = draw(st.sampled_from(["scalar", "tensor", "memref"]))
    if kind == "scalar":
        return elem
    if kind == "tensor":
        return TensorType(shape, elem)
    strides = draw(st.none() | st.tuples(*(st.integers(-4, 64) | st.just(DYN)
                                           for _ in shape)))
    return MemRefType(shape, elem, strides)


@given(t=types())
def test_types_round_trip(t) -> None:
    assert parse_type(str(t)) == t


def _fn(body: str, args: str = "") -> str:
    """A module text with one function whose body starts on line 4."""
    head = f"  ^bb0({args}):\n" if args else "\n"
    return ('"builtin.module"() ({\n  "func.func"() ({\n' + head + body
            + '\n  }) {function_type = () -> (), sym_name = "f"} : () -> ()\n}) : () -> ()')


PARSE_ERRORS = [
    # (text, line, column (0-based), message fragment)
    (_fn('    "arith.bogus"() : () -> ()'), 4, 4, "unknown op 'arith.bogus'"),
    (_fn('    "func.return"(%nope) : (f32) -> ()'), 4, 18, "undefined value %nope"),
    (_fn('    %a = "arith.constant"() {value = 1.0 : () -> f32'), 4, 41, "unexpected input"),
    (_fn('    %a = "arith.constant"() {value = 1.0} : () -> f32\n'
         '    %a = "arith.constant"() {value = 2.0} : () -> f32'), 5, 4, "redefinition of %a"),
    (_fn('    "func.return"(%x) : (f64) -> ()', "%x: f32"), 4, 18,
     "use of %x with type f64, but it was defined as f32"),
    (_fn('    %a = "arith.constant"() {value = 1} : () -> tensor<4xq32>'), 4, 48,
     "unexpected input"),
    (_fn('    %a = "arith.constant"() {value = dense<[1.0, 2.0] : tensor<3xf32>>} : '
         '() -> tensor<3xf32>'), 4, 44, "does not fit tensor<3xf32>"),
    (_fn('    %a = "arith.add"(%x) : (f32, f32) -> f32', "%x: f32"), 4, 9,
     "has 1 operands but its type lists 2"),
    (_fn('    %a = "arith.constant"() {value = 1.0, value = 2.0} : () -> f32'), 4, 42,
     "duplicate attribute 'value'"),
    (_fn('    %a, %b = "arith.constant"() {value = 1.0} : () -> f32'), 4, 13,
     "defines 2 names for 1 results"),
    (_fn('    "loop.if"(%c) ({\n      %a = "arith.constant"() {value = 1.0} : () -> f32\n'
         '      "loop.yield"() : () -> ()\n    }, {\n      "loop.yield"() : () -> ()\n'
         '    }) : (i1) -> ()\n    "func.return"(%a) : (f32) -> ()', "%c: i1"), 10, 18,
     "undefined value %a"),
    (_fn('    "func.return"() {msg = "abc} : () -> ()'), 4, 27, "unexpected input"),
]


@pytest.mark.parametrize("text,line,col,fragment", PARSE_ERRORS)
def test_parse_errors_are_located(text: str, line: int, col: int, fragment: str) -> None:
    with pytest.raises(IRParseError) as info:
        parse_module(text)
    err = info.value
    assert err.code == "E50020"
    assert (err.lineno, err.col_offset) == (line, col), err.message
    assert fragment in err.message
    assert f"<ir>:{line}:{col + 1}" in str(err)


def test_parse_error_for_non_module() -> None:
    with pytest.raises(IRParseError, match="expected a builtin.module"):
        parse_module('"func.func"() ({\n}) {function_type = () -> (), sym_name = "f"} '
                     ': () -> ()')


def test_comments_are_ignored() -> None:
    text = _fn('    // a comment "with quotes"\n    "func.return"() : () -> () // trailing')
    assert "comment" not in str(parse_module(text))


_FRESH_PRINT = """
import sys
from pyasc.ir.ops.arith import ConstantOp
from pyasc.ir.types import SCALAR_TYPES
print(str(ConstantOp([], [SCALAR_TYPES["f32"]], {"value": 1.5})))
"""

_FRESH_UNINSTALLED = """
from pyasc.errors import InternalCompilerError
from pyasc.ir.core import Operation
class Probe(Operation):
    name = "probe.op"
try:
    str(Probe())
except InternalCompilerError as e:
    print("E50050" if e.code == "E50050" and "pyasc.ir.ops" in str(e) else "wrong", e)
"""


def test_str_prints_in_a_process_that_imported_one_op_family() -> None:
    """``core`` does not import the printer: importing any op family installs it."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _FRESH_PRINT], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == '%0 = "arith.constant"() {value = 1.5} : () -> f32 loc(unknown)'


def test_str_without_a_printer_is_an_internal_error() -> None:
    """An op class defined on ``core`` alone, printed before any op family was imported,
    says what to import (it never prints something else)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _FRESH_UNINSTALLED], capture_output=True,
                         text=True, check=True).stdout
    assert out.startswith("E50050"), out
