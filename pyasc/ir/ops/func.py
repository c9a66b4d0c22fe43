"""``builtin.module``, ``func`` (functions, calls, returns, run-time checks) and ``fusion``.

* ``func.func {sym_name, function_type}``: one region whose block arguments are the
  parameters; isolated from above; ends in ``func.return``.
* ``func.call {callee}``: calls a function of the same module.
* ``func.assert(cond, values*) {message, kind}``: a run-time check (``kind`` is
  ``"assert"`` for user asserts -> AssertionError, ``"bounds"`` for index checks ->
  ``IndexOutOfBoundsError``, an IndexError, and ``"shape"`` for run-time
  broadcast/reshape size mismatches -> ValueError, like numpy; ``"raise:<Name>|..."``
  for a ``raise`` of a built-in exception, see ``pyasc.failures.raise_kind``).  The optional integer
  ``values`` are reported in the message: with values, ``message`` is a template whose
  ``{0}``, ``{1}``... are their run-time values (``{{``/``}}`` are literal braces), so
  ``"index {0} is out of bounds for axis 0 with size {1}"`` names the offending index.

The ``fusion`` family (``fusion.scope``, ``fusion.group``, ``fusion.yield``) lives in
``ops/fusion.py`` and is re-exported here for convenience.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pyasc.failures import parse_raise_kind
from pyasc.ir.core import Block, Location, Operation, Region, attr
from pyasc.ir.ops.common import require, types_str
from pyasc.ir.types import FunctionType, ScalarType, Type, i1


class ModuleOp(Operation):
    """The top-level container of functions."""

    name = "builtin.module"
    regions = ("body",)
    traits = frozenset({"isolated"})

    @classmethod
    def empty(cls) -> ModuleOp:
        return cls(regions=[Region([Block()])])

    @property
    def functions(self) -> Iterator[FuncOp]:
        for op in self.body.blocks[0].ops:
            if isinstance(op, FuncOp):
                yield op

    def get(self, name: str) -> FuncOp:
        for f in self.functions:
            if f.sym_name == name:
                return f
        raise KeyError(name)

    def append(self, op: Operation) -> Operation:
        return self.body.blocks[0].append(op)

    def verify_op(self) -> None:
        names = [f.sym_name for f in self.functions]
        require(len(names) == len(set(names)), "function names must be unique")
        for op in self.body.blocks[0].ops:
            require(isinstance(op, FuncOp), f"module may hold only functions, not {op.name}")


class FuncOp(Operation):
    """A function: parameters are the entry block's arguments."""

    name = "func.func"
    regions = ("body",)
    attrs = {"sym_name": attr(str), "function_type": attr(FunctionType)}
    terminators = ("func.return",)
    traits = frozenset({"isolated"})

    @classmethod
    def empty(cls, name: str, inputs: Sequence[Type], results: Sequence[Type],
              arg_names: Sequence[str | None] = (), loc: Location | None = None) -> FuncOp:
        block = Block(list(inputs), list(arg_names))
        ftype = FunctionType(tuple(inputs), tuple(results))
        return cls(attributes={"sym_name": name, "function_type": ftype},
                   regions=[Region([block])], loc=loc)

    @property
    def sym_name(self) -> str:
        return self.attributes["sym_name"]

    @property
    def function_type(self) -> FunctionType:
        return self.attributes["function_type"]

    @property
    def entry(self) -> Block:
        return self.body.blocks[0]

    def set_result_types(self, results: Sequence[Type]) -> None:
        ft = self.function_type
        self.attributes["function_type"] = FunctionType(ft.inputs, tuple(results))

    def verify_op(self) -> None:
        ft = self.function_type
        args = tuple(a.type for a in self.entry.args)
        require(args == ft.inputs, f"arguments {types_str(args)} do not match type {ft}")
        term = self.entry.terminator
        if term is not None and term.name == "func.return":
            got = tuple(v.type for v in term.operand_values)
            require(got == ft.results,
                    f"returns {types_str(got)} but the type says {types_str(ft.results)}")


class ReturnOp(Operation):
    name = "func.return"
    operands = ("values*",)
    traits = frozenset({"terminator"})


class CallOp(Operation):
    """Call a function of the enclosing module by name."""

    name = "func.call"
    operands = ("args*",)
    results = ("outputs*",)
    attrs = {"callee": attr(str)}

    def verify_op(self) -> None:
        module = self.parent_op
        while module is not None and not isinstance(module, ModuleOp):
            module = module.parent_op
        if module is None:
            return
        try:
            callee = module.get(self.attributes["callee"])
        except KeyError:
            raise ValueError(f"unknown callee '{self.attributes['callee']}'") from None
        ft = callee.function_type
        require(tuple(v.type for v in self.args) == ft.inputs, "call argument types differ")
        require(tuple(r.type for r in self.outputs) == ft.results, "call result types differ")


ASSERT_KINDS = ("assert", "bounds", "shape")


class AssertOp(Operation):
    """Run-time check: raise (AssertionError, IndexError...) with ``message`` if false;
    ``values`` (integers) fill the message's ``{0}``, ``{1}``... placeholders."""

    name = "func.assert"
    operands = ("cond", "values*")
    attrs = {"message": attr(str), "kind": attr(str)}
    traits = frozenset({"checks"})

    def verify_op(self) -> None:
        require(self.cond.type == i1, "assert condition must be i1")
        kind = self.attributes["kind"]
        raised = parse_raise_kind(kind)
        require(kind in ASSERT_KINDS or raised is not None,
                f"kind must be one of {', '.join(ASSERT_KINDS)} or a raise kind")
        require(raised is None or len(raised[1]) == len(self.values),
                "a raise kind names the format of each reported value")
        for v in self.values:
            require(isinstance(v.type, ScalarType) and v.type.is_int and v.type != i1,
                    f"reported values must be integers, got {v.type}")
        if self.values:
            try:
                format_message(self.attributes["message"], [0] * len(self.values))
            except (IndexError, KeyError, ValueError) as exc:
                raise ValueError(f"message is not a template for {len(self.values)} "
                                 f"values: {exc}") from None


def format_message(template: str, values: Sequence[int]) -> str:
    """A ``func.assert`` message with its run-time ``values`` filled in (a message
    without values is not a template: its braces are kept as they are)."""
    if not values:
        return template
    return template.format(*(int(v) for v in values))


def escape_message(text: str) -> str:
    """``text`` as a literal part of a message template (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def bounds_message(axis: int, array: str | None = None) -> str:
    """The template of a bounds check reporting ``(index, size)``: numpy's message,
    plus the indexed array's name when known."""
    named = f" (array '{escape_message(array)}')" if array else ""
    return f"index {{0}} is out of bounds for axis {axis} with size {{1}}{named}"


from pyasc.ir.ops.fusion import FusionGroupOp, FusionScopeOp, FusionYieldOp  # noqa: E402

__all__ = ["AssertOp", "CallOp", "FuncOp", "FusionGroupOp", "FusionScopeOp",
           "FusionYieldOp", "ModuleOp", "ReturnOp", "bounds_message", "escape_message",
           "format_message"]
