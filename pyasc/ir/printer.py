"""Generic printer: every op prints in MLIR's generic form from its data alone.

    %y = "arith.max"(%x, %0) : (tensor<4xf32>, f32) -> tensor<4xf32> loc("k.py":3:12)

Values print under their name hint (``%img``, uniqued as ``%img_1``...) or a number.
The printer and ``parser.parse_module`` are exact inverses on printed text.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

from pyasc.ir.core import Block, DenseArray, Operation, Region, Value
from pyasc.ir.types import Type
from pyasc.ir.unique import UniqueNames

_HINT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Namer:
    """Gives each value a unique printed name, preferring its hint."""

    def __init__(self) -> None:
        self.names: dict[Value, str] = {}
        self.unique = UniqueNames()
        self.counter = 0

    def define(self, v: Value) -> str:
        hint = v.name_hint
        if hint and _HINT_RE.fullmatch(hint):
            name = self.unique.fresh(hint)
        else:
            while not self.unique.is_free(str(self.counter)):
                self.counter += 1
            name = self.unique.fresh(str(self.counter))
            self.counter += 1
        self.names[v] = name
        return "%" + name

    def use(self, v: Value) -> str:
        name = self.names.get(v)
        return "%" + name if name is not None else f"%<<undefined {v.type}>>"


def format_float(x: float) -> str:
    """Float text that parses back to the same value (``inf``, ``-inf``, ``nan`` too)."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(float(x))
    return text


def format_attr(value: object) -> str:
    """Attribute value text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return format_float(float(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Type):
        return str(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, DenseArray):
        flat = value.array.reshape(-1).tolist()
        return f"dense<{format_attr(tuple(flat))} : {value.type}>"
    raise TypeError(f"cannot print attribute value {value!r}")


def _types(ts: list[Type]) -> str:
    return ", ".join(str(t) for t in ts)


class Printer:
    """Prints ops, blocks and regions with indentation, naming values as it goes."""

    def __init__(self, indent: str = "  ") -> None:
        self.namer = _Namer()
        self.lines: list[str] = []
        self.indent = indent

    def op(self, op: Operation, depth: int = 0) -> None:
        pad = self.indent * depth
        results = ", ".join(self.namer.define(r) for r in op.result_values)
        head = f"{pad}{results} = " if results else pad
        operands = ", ".join(self.namer.use(v) for v in op.operand_values)
        text = f'{head}"{op.name}"({operands})'
        if op.region_list:
            self.lines.append(text + " ({")
            for i, region in enumerate(op.region_list):
                if i:
                    self.lines.append(pad + "}, {")
                self.region(region, depth)
            text = pad + "})"
        if op.attributes:
            entries = ", ".join(f"{k} = {format_attr(op.attributes[k])}"
                                for k in sorted(op.attributes))
            text += " {" + entries + "}"
        res_t = [r.type for r in op.result_values]
        res = str(res_t[0]) if len(res_t) == 1 else f"({_types(res_t)})"
        text += f" : ({_types([v.type for v in op.operand_values])}) -> {res}"
        text += f" {op.loc}"
        self.lines.append(text)

    def region(self, region: Region, depth: int) -> None:
        for i, block in enumerate(region.blocks):
            self.block(block, depth, label=i > 0 or bool(block.args))

    def block(self, block: Block, depth: int, label: bool) -> None:
        if label:
            args = ", ".join(f"{self.namer.define(a)}: {a.type}" for a in block.args)
            idx = block.parent.blocks.index(block) if block.parent else 0
            self.lines.append(self.indent * depth + f"^bb{idx}({args}):")
        for op in block.ops:
            self.op(op, depth + 1)


def print_op(op: Operation) -> str:
    """The generic text of ``op`` (and everything nested in it)."""
    p = Printer()
    p.op(op)
    return "\n".join(p.lines)


def value_names(op: Operation) -> dict[Value, str]:
    """The printed name (``%x``, ``%3``) of every value defined in ``op``, exactly as
    ``print_op(op)`` names them (tools that show IR refer to values by these)."""
    p = Printer()
    p.op(op)
    return {v: "%" + name for v, name in p.namer.names.items()}
