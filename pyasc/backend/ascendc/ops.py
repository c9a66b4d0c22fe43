"""``ascend``: the ops of the host program the AscendC backend builds.

The host program is the user's function with every kernel region replaced by a launch;
host-level scalar math (shapes, tiling parameters), buffer allocation and data movement
stay ordinary IR.  The ops:

* ``ascend.launch(block_dim, args*) {kernel, writes}``: run ``kernel`` on ``block_dim``
  blocks.  Arguments are buffers (memrefs or tensors: the kernel's ``GM_ADDR``
  parameters) and scalars (its by-value parameters), in the kernel's parameter order;
  ``writes`` lists the argument positions the kernel writes (destination passing: outputs
  are buffers the host allocated).  A ``block_dim`` of 0 launches nothing.
* ``ascend.ub_check(need) {budget, what}``: raise ``OutOfMemoryError`` (E50003) at the
  op's location if ``need`` bytes exceed ``budget`` (a run-time tiling check for dynamic
  shapes, e.g. one row of a row-wise kernel).
* ``ascend.check_status(status) {messages, kinds, values?, sites?, stride?}``: after a
  scalar kernel with run-time checks, ``status[b * stride]`` is 0 or ``k + 1`` for the
  failed check ``k`` of block ``b``, followed by the ``values[k]`` values that check
  reports (its message is then a template, see ``func.assert``); raise the matching
  Python exception (``kinds``: the ``func.assert`` kinds, ``raise:...`` ones included,
  or ``oom`` for a kernel workspace overflow, E50003) located at ``sites[k]``
  (``(file, line, col)``) through ``pyasc.failures``.

``ascend.launch`` is executed by the host runner of the target (see ``host_runner``);
its registered evaluator only says so.  The other two have plain reference semantics.
"""

from __future__ import annotations

import numpy as np

from pyasc.errors import OutOfMemoryError
from pyasc.failures import ERROR_KINDS, Site, check_failure, parse_raise_kind
from pyasc.ir.core import Operation, attr
from pyasc.ir.ops.common import require
from pyasc.ir.semantics import register_evaluator
from pyasc.ir.types import MemRefType, ScalarType, TensorType, index

ASSERT_ERRORS = ERROR_KINDS


class LaunchOp(Operation):
    """Run one AscendC kernel (see the module docstring)."""

    name = "ascend.launch"
    operands = ("block_dim", "args*")
    attrs = {"kernel": attr(str), "writes": attr(tuple)}
    traits = frozenset({"reads", "writes"})

    def verify_op(self) -> None:
        require(self.block_dim.type == index, "block_dim must be an index")
        for v in self.args:
            require(isinstance(v.type, MemRefType | TensorType | ScalarType),
                    f"kernel arguments are buffers or scalars, got {v.type}")
        for pos in self.attributes["writes"]:
            require(isinstance(pos, int) and 0 <= pos < len(self.args),
                    f"written argument {pos} out of range")
            require(isinstance(self.args[pos].type, MemRefType),
                    "a kernel writes only memref arguments")


class UBCheckOp(Operation):
    """Fail with E50003 when a run-time UB requirement exceeds the budget."""

    name = "ascend.ub_check"
    operands = ("need",)
    attrs = {"budget": attr(int), "what": attr(str), "soc": attr(str, optional=True)}
    traits = frozenset({"checks"})

    def verify_op(self) -> None:
        require(self.need.type == index, "need must be an index")


class CheckStatusOp(Operation):
    """Raise the exception of the run-time check a scalar kernel reported."""

    name = "ascend.check_status"
    operands = ("status",)
    attrs = {"messages": attr(tuple), "kinds": attr(tuple), "values": attr(tuple,
             optional=True), "sites": attr(tuple, optional=True),
             "stride": attr(int, optional=True)}
    traits = frozenset({"reads", "checks"})

    def verify_op(self) -> None:
        t = self.status.type
        require(isinstance(t, MemRefType) and t.rank == 1 and t.element.name in ("i32",
                                                                                 "i64"),
                "status must be a 1-D i32 or i64 memref")
        n = len(self.attributes["messages"])
        require(len(self.attributes["kinds"]) == n, "one kind per message")
        for key in ("values", "sites"):
            require(len(self.attributes.get(key, (0,) * n)) == n, f"one {key} entry per "
                    "message")
        stride = self.attributes.get("stride", 1)
        require(stride >= 1 + max(self.attributes.get("values", ()), default=0),
                "stride too small for the values reported")
        for kind in self.attributes["kinds"]:
            require(kind in ASSERT_ERRORS or parse_raise_kind(kind) is not None,
                    f"unknown check kind {kind!r}")


def _ub_check(op: Operation, need: object) -> None:
    budget = op.attributes["budget"]
    if int(need) > budget:  # type: ignore[call-overload]
        loc = op.loc
        raise OutOfMemoryError(
            f"{op.attributes['what']} needs {int(need)} bytes of Unified Buffer "  # type: ignore
            f"but the InitBuffer budget of {op.attributes.get('soc', 'the SoC')} is "
            f"{budget} bytes",
            filename=loc.file, lineno=loc.line or None, col_offset=max(loc.col - 1, 0),
            hint="reduce the row length, or split the reduction axis")


def _check_status(op: Operation, status: np.ndarray) -> None:
    stride = op.attributes.get("stride", 1)
    words = np.asarray(status).reshape(-1)
    failed = [b for b in range(0, len(words), stride) if int(words[b]) != 0]
    if not failed:
        return
    b = failed[0]  # the lowest block: the first failing iteration of a split loop
    k = int(words[b]) - 1
    n = op.attributes.get("values", (0,) * len(op.attributes["kinds"]))[k]
    file, line, col = op.attributes.get("sites", ((None, 0, 0),) * (k + 1))[k]
    raise check_failure(op.attributes["kinds"][k], op.attributes["messages"][k],
                        [int(v) for v in words[b + 1:b + 1 + n]],
                        Site.of(file or None, line, col))


def _launch_needs_a_launcher(op: Operation, *args: object) -> None:
    raise RuntimeError("ascend.launch runs only in a host runner that can launch kernels "
                       "(pyasc.backend.ascendc.host_runner.HostRunner)")


register_evaluator(LaunchOp, _launch_needs_a_launcher)
register_evaluator(UBCheckOp, _ub_check)
register_evaluator(CheckStatusOp, _check_status)
