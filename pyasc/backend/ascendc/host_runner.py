"""Running a host program: the IR interpreter plus ``ascend.launch``.

:class:`HostRunner` is the interpreter with one extra op: a launch hands its arguments to
a *launcher* (the ascend-sim library, or the AscendCL runtime of ``target="ascend"``),
with the positions of the arguments the kernel writes.  Arguments are
made what a kernel expects: arrays C-contiguous (a non-contiguous array a kernel writes
is copied in and copied back, so numpy in-place semantics hold for views), scalars as
numpy scalars; an empty array is passed as a one-element dummy (its data pointer is not
a valid address).  A ``block_dim`` of 0 (empty data) launches nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from pyasc.backend.ascendc.ops import LaunchOp
from pyasc.backend.ascendc.unsupported import unsupported
from pyasc.callsite import for_user
from pyasc.failures import Site, check_failure
from pyasc.ir.interpreter import Interpreter

Launcher = Callable[[str, int, Sequence[Any], frozenset[int]], dict[str, int]]
"""``launcher(kernel, block_dim, args, writes) -> counters``."""


def _launch(it: HostRunner, op: LaunchOp, env: dict) -> list:
    values = [env[v] for v in op.operand_values]
    block_dim = int(values[0])
    if block_dim == 0:
        return []
    writes = frozenset(op.attributes["writes"])
    args: list[Any] = []
    copy_back: list[tuple[np.ndarray, np.ndarray]] = []
    for pos, v in enumerate(values[1:]):
        if isinstance(v, np.ndarray) and v.size == 0:
            args.append(np.zeros(1, v.dtype))  # an empty array has no valid GM address
        elif isinstance(v, np.ndarray):
            ready = np.ascontiguousarray(v)
            if pos in writes and (ready is not v or not v.flags.writeable):
                ready = np.array(v, order="C", copy=True)
                copy_back.append((v, ready))
            args.append(ready)
        else:
            args.append(v)
    _check_copies(op, values[1:], args, writes)
    it.counters.append(it.launcher(op.attributes["kernel"], block_dim, args, writes))
    it.launches.append((op.attributes["kernel"], block_dim))
    for dest, src in copy_back:
        dest[...] = src
    return []


def _check_copies(op: LaunchOp, values: Sequence[Any], args: Sequence[Any],
                  writes: frozenset[int]) -> None:
    """A copied (non-contiguous) array must not share memory with another array of the
    launch when either is written: the kernel would see two unrelated GM arrays, so
    writes through one would not reach the other (``out[::2] += 1`` and ``out[i] = 0``
    in one kernel).  That is refused at run time rather than computed wrong."""
    arrays = [(k, v) for k, v in enumerate(values) if isinstance(v, np.ndarray) and v.size]
    for k, v in arrays:
        if args[k] is v:
            continue
        for j, w in arrays:
            if j != k and (k in writes or j in writes) and np.shares_memory(v, w):
                raise unsupported("a kernel reaching one array both through a strided view "
                                  "and directly (or through another view)", op.loc)


class HostRunner(Interpreter):
    """Interprets a host program, launching kernels through ``launcher``."""

    extra_handlers: ClassVar[dict] = {LaunchOp: _launch}

    def __init__(self, module: Any, launcher: Launcher) -> None:
        super().__init__(module)
        self.launcher = launcher
        self.counters: list[dict[str, int]] = []
        self.launches: list[tuple[str, int]] = []  # (kernel, block_dim) per launch

    def evaluate(self, op: Any, operands: list) -> list:
        """A host op's results; numpy's shape errors in the host's copies and
        broadcasts (sizes known only at run time) become E50002 at the user's line,
        as the same conflict inside a kernel does."""
        try:
            return super().evaluate(op, operands)
        except ValueError as exc:
            if for_user(exc) or not op.loc.known:  # coded, or a kernel's failed check
                raise
            site = Site.of(op.loc.file, op.loc.line, op.loc.col)
            raise check_failure("shape", str(exc), (), site) from None

    def total_counters(self) -> dict[str, int]:
        """The counters of every launch of the last call, summed (peaks: maximum)."""
        total: dict[str, int] = {}
        for c in self.counters:
            for key, value in c.items():
                if key.endswith("_peak_bytes"):
                    total[key] = max(total.get(key, 0), value)
                else:
                    total[key] = total.get(key, 0) + value
        return total
