"""Ops that only the IR read by automatic differentiation holds: ``autodiff.custom_vjp``
(a call of a function with a registered gradient, kept whole) and
``autodiff.stop_gradient`` (``pyasc.ops.stop_gradient``: its operand, without gradient).

``custom_vjp(inputs*) {callee, wrt}`` has two regions.  ``forward`` (no arguments) is
the callee's body as inlined at the call, reading the caller's values, ending in
``loop.yield`` of the result; ``backward`` (one argument: the adjoint of the result)
is the callee's registered gradient inlined with the same inputs, ending in
``loop.yield`` of one gradient per input listed in ``wrt`` (indices into ``inputs``;
a tensor for a buffer input).

The frontend emits it only when building the IR that automatic differentiation reads
(``pyasc.ir.autodiff``); that transform replaces it by its forward region in the
recomputed forward and by its backward region in the sweep, so no pass, interpreter or
backend ever sees it.
"""

from __future__ import annotations

from pyasc.ir.core import Operation, attr
from pyasc.ir.ops.common import require
from pyasc.ir.types import MemRefType, Type


def _value_type(t: Type) -> Type:
    """A buffer input's gradient is a tensor of its shape."""
    return t.tensor_type() if isinstance(t, MemRefType) else t


class CustomVjpOp(Operation):
    """A call whose gradient is the registered one (see the module docstring)."""

    name = "autodiff.custom_vjp"
    operands = ("inputs*",)
    results = ("outputs*",)
    regions = ("forward", "backward")
    attrs = {"callee": attr(str), "wrt": attr(tuple)}
    terminators = ("loop.yield", "loop.yield")

    def verify_op(self) -> None:
        wrt = self.attributes["wrt"]
        require(all(isinstance(i, int) and 0 <= i < len(self.inputs) for i in wrt),
                "wrt must index the inputs")
        require(len(self.outputs) == 1, "custom_vjp has one result")
        fwd, bwd = self.forward.blocks[0], self.backward.blocks[0]
        require(not fwd.args, "the forward region takes no arguments")
        require([a.type for a in bwd.args] == [self.outputs[0].type],
                "the backward region takes the result's adjoint")
        for block, want in ((fwd, [self.outputs[0].type]),
                            (bwd, [_value_type(self.inputs[i].type) for i in wrt])):
            term = block.terminator
            if term is not None and term.name == "loop.yield":
                got = [v.type for v in term.operand_values]
                require(got == want, f"yields {got}, expected {want}")


class StopGradientOp(Operation):
    """``stop_gradient(x) = x`` with a zero gradient (``pyasc.ops.stop_gradient``).

    Emitted, like ``custom_vjp``, only into the IR automatic differentiation reads; the
    transform replaces its result by its operand in the recomputed forward and gives it
    no adjoint, so no pass, interpreter or backend sees it (a forward compiled to run
    has no op at all there)."""

    name = "autodiff.stop_gradient"
    operands = ("x",)
    results = ("result",)

    def verify_op(self) -> None:
        require(self.result.type == self.x.type, "the result has the operand's type")
