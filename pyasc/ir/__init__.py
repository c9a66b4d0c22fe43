"""pyasc's typed SSA IR: types, ops, text format, verifier, passes and interpreter.

The package imports its parts lazily, so ``pyasc.ir.types`` (which the runtime needs to
call a cached kernel) costs no more than that module.  Any name read from ``pyasc.ir``
itself first imports :mod:`pyasc.ir.ops`, which registers every op class in
``OP_REGISTRY`` (the parser and the round-trip tests rely on a full registry); the
parser, and with it ``lark``, is imported only for ``parse_module``/``parse_op``/
``parse_type``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - names for type checkers only
    from pyasc.ir import ops
    from pyasc.ir.builder import Builder
    from pyasc.ir.core import (
        OP_REGISTRY,
        UNKNOWN_LOC,
        Block,
        BlockArgument,
        DenseArray,
        Location,
        Operation,
        OpResult,
        Region,
        Value,
    )
    from pyasc.ir.ops.func import FuncOp, ModuleOp
    from pyasc.ir.parser import parse_module, parse_op, parse_type
    from pyasc.ir.printer import print_op
    from pyasc.ir.verifier import verify_module

    Module = ModuleOp

_HOMES = {
    "OP_REGISTRY": "core", "UNKNOWN_LOC": "core", "Block": "core", "BlockArgument": "core",
    "DenseArray": "core", "Location": "core", "Operation": "core", "OpResult": "core",
    "Region": "core", "Value": "core", "Builder": "builder", "FuncOp": "ops.func",
    "ModuleOp": "ops.func", "Module": "ops.func", "parse_module": "parser",
    "parse_op": "parser", "parse_type": "parser", "print_op": "printer",
    "verify_module": "verifier",
}
"""Where each public name lives (``Module`` is ``ModuleOp``)."""

__all__ = [
    "OP_REGISTRY", "UNKNOWN_LOC", "Block", "BlockArgument", "Builder", "DenseArray",
    "FuncOp", "Location", "Module", "ModuleOp", "OpResult", "Operation", "Region", "Value",
    "ops", "parse_module", "parse_op", "parse_type", "print_op", "verify_module",
]


def __getattr__(name: str) -> Any:
    """Import the module defining ``name`` (after registering every op)."""
    home = _HOMES.get(name)
    if home is None and name != "ops":
        raise AttributeError(f"module 'pyasc.ir' has no attribute {name!r}")
    ops_package = importlib.import_module("pyasc.ir.ops")
    if name == "ops":
        return ops_package
    value = getattr(importlib.import_module(f"pyasc.ir.{home}"),
                    "ModuleOp" if name == "Module" else name)
    globals()[name] = value  # later reads skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
