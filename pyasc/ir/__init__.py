"""pyasc's typed SSA IR: types, ops, text format, verifier, passes and interpreter."""

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

__all__ = [
    "OP_REGISTRY", "UNKNOWN_LOC", "Block", "BlockArgument", "Builder", "DenseArray",
    "FuncOp", "Location", "Module", "ModuleOp", "OpResult", "Operation", "Region", "Value",
    "ops", "parse_module", "parse_op", "parse_type", "print_op", "verify_module",
]
