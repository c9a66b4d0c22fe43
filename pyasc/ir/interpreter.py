"""IR interpreter: runs a module's functions on numpy values.

It is the third oracle of the differential tests (next to the Python function run as
plain numpy and the compiled code): a pass is correct if the interpreter gives the same
results before and after it.  Region-free ops use the reference semantics table in
``semantics``; ops with regions (loops, ifs, maps, calls, scopes) are handled here.

    results = Interpreter(module).call("relu", x)

Arguments: numpy arrays for memref parameters (written in place, as compiled code does)
and Python/numpy scalars for scalar parameters.  Results: numpy arrays for tensors and
memrefs, numpy scalars (exact dtype; ``index`` as ``np.int64``) for scalars.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyasc.failures import Site, check_failure
from pyasc.ir.core import Block, Operation, Value
from pyasc.ir.ops import func, loop, tensor
from pyasc.ir.ops.autodiff import CustomVjpOp
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.semantics import as_type, eval_op, np_dtype
from pyasc.ir.types import MemRefType, ScalarType, TensorType


class _Return(Exception):
    """Unwinds the Python stack on ``func.return``."""

    def __init__(self, values: list) -> None:
        self.values = values


class Interpreter:
    """Executes functions of one module.

    ``extra_handlers`` lets a subclass run ops of its own (a backend's host ops) the way
    region ops are run: ``{op class: fn(interpreter, op, env) -> results}``.
    """

    extra_handlers: dict[type[Operation], Callable[[Interpreter, Any, dict], list]] = {}

    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.depth = 0

    def call(self, name: str, *args: Any) -> list:
        """Run function ``name`` with ``args``; returns the list of its results."""
        fn = self.module.get(name)
        if len(args) != len(fn.entry.args):
            raise TypeError(f"{name} takes {len(fn.entry.args)} arguments, got {len(args)}")
        values = [self._convert_arg(a, v.type) for a, v in zip(args, fn.entry.args,
                                                              strict=True)]
        return self.run_function(fn, values)

    def run_function(self, fn: FuncOp, args: list) -> list:
        self.depth += 1
        if self.depth > 200:
            raise RecursionError("interpreter call depth exceeded")
        env: dict[Value, Any] = dict(zip(fn.entry.args, args, strict=True))
        try:
            self.run_block(fn.entry, env)
        except _Return as ret:
            return ret.values
        finally:
            self.depth -= 1
        raise RuntimeError(f"function {fn.sym_name} ended without func.return")

    @staticmethod
    def _convert_arg(a: Any, t: object) -> Any:
        if isinstance(t, MemRefType):
            if not isinstance(a, np.ndarray) or a.dtype != np_dtype(t) or a.ndim != t.rank:
                raise TypeError(f"expected an array for {t}, got {type(a).__name__}")
            return a
        if isinstance(t, TensorType):
            return np.asarray(a, dtype=np_dtype(t))
        assert isinstance(t, ScalarType)
        return np_dtype(t).type(a)

    # -- execution
    def run_block(self, block: Block, env: dict[Value, Any]) -> list:
        """Run a block's ops; returns the operands of its terminator (if any)."""
        for op in block.ops:
            handler = _REGION_OPS.get(type(op)) or self.extra_handlers.get(type(op))
            if handler is not None:
                result = handler(self, op, env)
                if op.has_trait("terminator"):
                    return result
                for r, v in zip(op.result_values, result, strict=True):
                    env[r] = v
                continue
            operands = [env[v] for v in op.operand_values]
            for r, v in zip(op.result_values, self.evaluate(op, operands), strict=True):
                env[r] = v
        return []

    def evaluate(self, op: Operation, operands: list) -> list:
        """The results of a non-region op (a subclass may translate its failures)."""
        return eval_op(op, operands)

    def run_region(self, block: Block, env: dict[Value, Any], args: list) -> list:
        """Run a nested block with its arguments bound; returns the terminator operands.

        The block's values go into ``env`` itself: SSA values are unique objects and a
        nested block's values are not used after it, so no copy is needed (copying the
        environment per loop iteration was a third of the interpreter's time)."""
        env.update(zip(block.args, args, strict=True))
        return self.run_block(block, env)


# ---------------------------------------------------------------------------- region ops

def _operands(op: Operation, env: dict[Value, Any]) -> list:
    return [env[v] for v in op.operand_values]


def _for(it: Interpreter, op: loop.ForOp, env: dict[Value, Any]) -> list:
    lb, ub, step = (int(env[v]) for v in (op.lower, op.upper, op.step))
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    carried = [env[v] for v in op.inits]
    for iv in range(lb, ub, step):
        carried = it.run_region(op.body.blocks[0], env, [np.int64(iv), *carried])
    return carried


def _while(it: Interpreter, op: loop.WhileOp, env: dict[Value, Any]) -> list:
    carried = [env[v] for v in op.inits]
    while True:
        cond, *vals = it.run_region(op.before.blocks[0], env, carried)
        if not bool(cond):
            return vals
        carried = it.run_region(op.after.blocks[0], env, vals)


def _if(it: Interpreter, op: loop.IfOp, env: dict[Value, Any]) -> list:
    region = op.then_region if bool(env[op.cond]) else op.else_region
    return it.run_region(region.blocks[0], env, [])


def _map(it: Interpreter, op: tensor.MapOp, env: dict[Value, Any]) -> list:
    inputs = [np.asarray(env[v]) for v in op.inputs]
    shape = np.broadcast_shapes(*(x.shape for x in inputs))
    bcast = [np.broadcast_to(x, shape) for x in inputs]
    outs = [np.empty(shape, dtype=np_dtype(r.type)) for r in op.outputs]
    block = op.body.blocks[0]
    for idx in np.ndindex(*shape):
        args = [x[idx] for x in bcast]
        args = [as_type(a, t.type) for a, t in zip(args, block.args, strict=True)]
        for out, v in zip(outs, it.run_region(block, env, args), strict=True):
            out[idx] = v
    return [o if isinstance(r.type, TensorType) else as_type(o, r.type)
            for o, r in zip(outs, op.outputs, strict=True)]


def _call(it: Interpreter, op: func.CallOp, env: dict[Value, Any]) -> list:
    return it.run_function(it.module.get(op.attributes["callee"]), _operands(op, env))


def _assert(it: Interpreter, op: func.AssertOp, env: dict[Value, Any]) -> list:
    if not bool(env[op.cond]):
        loc = op.loc
        site = Site.of(loc.file, loc.line, loc.col) if loc.known else Site()
        raise check_failure(op.attributes["kind"], op.attributes["message"],
                            [int(env[v]) for v in op.values], site)
    return []


def _return(it: Interpreter, op: func.ReturnOp, env: dict[Value, Any]) -> list:
    raise _Return(_operands(op, env))


def _scope(it: Interpreter, op: func.FusionScopeOp, env: dict[Value, Any]) -> list:
    return it.run_region(op.body.blocks[0], env, [])


def _group(it: Interpreter, op: func.FusionGroupOp, env: dict[Value, Any]) -> list:
    # Isolated region: only the block arguments are visible inside.
    return it.run_region(op.body.blocks[0], {}, _operands(op, env))


def _terminator(it: Interpreter, op: Operation, env: dict[Value, Any]) -> list:
    return _operands(op, env)


def _custom_vjp(it: Interpreter, op: Any, env: dict) -> list:
    """A call kept whole for automatic differentiation computes its forward region."""
    return it.run_region(op.forward.blocks[0], env, [])


_REGION_OPS: dict[type[Operation], Callable[[Interpreter, Any, dict], list]] = {
    CustomVjpOp: _custom_vjp,
    loop.ForOp: _for,
    loop.WhileOp: _while,
    loop.IfOp: _if,
    loop.YieldOp: _terminator,
    loop.ConditionOp: _terminator,
    tensor.MapOp: _map,
    tensor.YieldOp: _terminator,
    func.CallOp: _call,
    func.AssertOp: _assert,
    func.ReturnOp: _return,
    func.FusionScopeOp: _scope,
    func.FusionGroupOp: _group,
    func.FusionYieldOp: _terminator,
}


def interpret(module: ModuleOp, name: str, *args: Any) -> list:
    """Shorthand for ``Interpreter(module).call(name, *args)``."""
    return Interpreter(module).call(name, *args)
