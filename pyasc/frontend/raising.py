"""Statement rule for ``raise``: a built-in exception raised by compiled code.

``raise ValueError(f"row {i} is negative: {x[i]}")`` becomes a ``func.assert`` that
always fails, of kind ``raise:ValueError|...`` (``pyasc.failures.raise_kind``): every
target reports it as it reports a failed assertion (the CPU kernel's error record, the
device kernel's status word, the IR interpreter), and the caller gets a ``ValueError``
whose text is ``file:line:col: row 3 is negative: -0.5`` followed by the source line.

The message is a constant, a compile-time value or an f-string: its compile-time parts
are formatted when compiling, its run-time scalars (integers, bools and floats of any
dtype but bfloat16) are reported by the kernel and formatted by Python, with their
format spec and conversion, exactly as Python formats them.  An array in the message
is refused (E50010).

After a ``raise`` the function is left, as after ``return`` (the returned flag is set,
so the rest of the block is not compiled and a loop exits); no value is returned on
that path, which the compiled code never reaches.
"""

from __future__ import annotations

import ast
import builtins

from pyasc.errors import UnsupportedSyntaxError
from pyasc.failures import RAISABLE, raise_kind
from pyasc.frontend.lowering import RET, Lowering, stmt_rule
from pyasc.frontend.values import Buffer, Scalar, Tensor, is_runtime
from pyasc.ir.ops import arith, func
from pyasc.ir.ops.func import escape_message
from pyasc.ir.types import f32, i1, i32, i64, index

_CONVERSIONS = {-1: "", ord("r"): "!r", ord("s"): "!s", ord("a"): "!a"}
_PY_CONVERSIONS = {-1: lambda v: v, ord("r"): repr, ord("s"): str, ord("a"): ascii}
_HINT = f"raise one of {', '.join(sorted(RAISABLE))} with a message"


@stmt_rule(ast.Raise)
def lower_raise(lw: Lowering, node: ast.Raise) -> None:
    """``raise E``, ``raise E(message)``: fail at run time with ``E`` where reached."""
    if node.exc is None:
        raise lw.error(UnsupportedSyntaxError, "a bare 'raise' (re-raise) outside an "
                       "except block", node, hint=_HINT)
    if node.cause is not None:
        raise lw.error(UnsupportedSyntaxError, "'raise ... from ...'", node.cause,
                       hint="raise the exception without a cause")
    call = node.exc if isinstance(node.exc, ast.Call) else None
    name = _exception_name(lw, call.func if call else node.exc)
    message = Message()
    if call is not None:
        if call.keywords or len(call.args) > 1:
            raise lw.error(UnsupportedSyntaxError, f"{name}() with more than one "
                           "argument", call, hint="pass one message (an f-string)")
        if call.args:
            message.add_argument(lw, call.args[0])
    false = lw.em.result(arith.ConstantOp.new(False, i1))
    lw.em.op(func.AssertOp([false, *message.values], [],
                           {"message": message.template,
                            "kind": raise_kind(name, message.formats)}))
    lw.scope[RET] = True


def _exception_name(lw: Lowering, node: ast.expr) -> str:
    refused = lw.error(UnsupportedSyntaxError, "compiled code can only raise the "
                       "built-in exceptions listed in the hint", node, hint=_HINT)
    try:
        cls = lw.expr(node)
    except UnsupportedSyntaxError:  # a class of the user's: not a value pyasc reads
        raise refused from None
    name = getattr(cls, "__name__", None)
    if name not in RAISABLE or getattr(builtins, name) is not cls:  # type: ignore[arg-type]
        raise refused
    return name  # type: ignore[return-value]


class Message:
    """A message template with its run-time values (integers) and their formats."""

    def __init__(self) -> None:
        self.template = ""
        self.values: list = []
        self.formats: list[str] = []

    def add_argument(self, lw: Lowering, node: ast.expr) -> None:
        """The exception's argument: an f-string, or any value (its ``str``)."""
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                self._add_part(lw, part)
            return
        self._add_value(lw, lw.expr(node), -1, "", node)

    def _add_part(self, lw: Lowering, part: ast.expr) -> None:
        if isinstance(part, ast.Constant):
            self.template += escape_message(str(part.value))
            return
        assert isinstance(part, ast.FormattedValue)
        spec = ""
        if part.format_spec is not None:
            spec = lw.expr(part.format_spec)  # an f-string itself: compile-time only
        self._add_value(lw, lw.expr(part.value), part.conversion, spec, part.value)

    def _add_value(self, lw: Lowering, value: object, conversion: int, spec: str,
                   node: ast.expr) -> None:
        if not is_runtime(value):
            text = format(_PY_CONVERSIONS[conversion](value), spec)
            self.template += escape_message(text)
            return
        if isinstance(value, Tensor | Buffer) or value.type.name == "bf16":  # type: ignore
            raise lw.error(UnsupportedSyntaxError, "an exception message may format "
                           "run-time scalars (not arrays, not bfloat16) only", node,
                           hint="format a scalar, e.g. an element or a reduction")
        assert isinstance(value, Scalar)
        self.template += "{" + str(len(self.values)) + _CONVERSIONS[conversion] + \
            (":" + spec if spec else "") + "}"
        self.values.append(_bits(lw, value))
        self.formats.append(_format_of(value))


def _format_of(s: Scalar) -> str:
    """How ``pyasc.failures.decode_value`` reads the value back."""
    python = {"index": "int", "f64": "float", "i1": "bool"}
    if s.weak and s.type.name in python:
        return "py:" + python[s.type.name]
    return "np:" + s.type.to_numpy().name


def _bits(lw: Lowering, s: Scalar) -> object:
    """``s`` as an integer the kernel can report: floats as their bits (narrow floats
    widened to float32 first: a device may lack 16-bit bit casts and float64)."""
    t = s.type
    if t.is_float:
        if t.bitwidth < 32:
            s = lw.em.cast_scalar(s, f32)
        wide = i64 if s.type.bitwidth == 64 else i32
        return lw.em.result(arith.BitcastOp.new(s.value, wide))
    if t == i1:
        return lw.em.cast_scalar(s, index).value
    return s.value
