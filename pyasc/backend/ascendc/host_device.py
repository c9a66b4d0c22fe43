"""Device arrays in a host program: which ``pyasc.device_array`` arguments a call can
hand to its kernels as they are, and the runner that does it (``target="ascend"``).

:func:`plan_device_args` reads the host function once.  A device-array argument is
*passed through* (no copy either way) when everything the host program does with it
happens on the device:

* ``ascend.launch`` takes it (a kernel reads it, or writes it in place);
* ``mem.to_tensor`` of it feeds only launches, all before anything writes it (the
  snapshot a tensor is must not see a later write);
* ``mem.dim`` reads its shape;
* ``mem.write`` into it of a kernel's result: that result's ``mem.alloc`` (same static
  shape, used only by launches and that write) is made in device memory, and the write
  is a device-to-device copy.

Any other use (a host op reading it, a view, a use inside a loop or branch) makes the
argument *staged*: its elements are copied to the host before the call and, when the
function may write it, back afterwards, with a :class:`PyascPerformanceWarning` naming
the argument and the op.  Results are numpy arrays: to keep a result on the device,
write it into a device array argument (``out[...] = expr``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from pyasc.backend.ascendc.codegen import PyascPerformanceWarning
from pyasc.backend.ascendc.host_runner import HostRunner, Launcher
from pyasc.backend.ascendc.ops import LaunchOp
from pyasc.ir.core import BlockArgument, Operation, OpResult, Value
from pyasc.ir.ops import mem
from pyasc.ir.ops.func import FuncOp, ModuleOp
from pyasc.ir.passes.effects import written_arguments
from pyasc.ir.semantics import eval_op, np_dtype
from pyasc.ir.types import DYN, MemRefType
from pyasc.runtime.acl.device_array import DeviceArray, empty


@dataclass
class DevicePlan:
    """For each memref parameter: ``None`` (passed through) or why it is staged; the
    allocations made in device memory when the parameter their result is written into
    is a device array; the parameters the function may write."""

    reasons: dict[int, str | None]
    device_allocs: dict[Operation, int] = field(default_factory=dict)  # -> the parameter
    written: frozenset[int] = frozenset()


def _writers(fn: FuncOp, arg: Value) -> list[Operation]:
    """Top-level ops that write ``arg``: launches writing it, ``mem.write`` into it."""
    out = []
    for op in fn.entry.ops:
        if isinstance(op, LaunchOp):
            if any(op.args[p] is arg for p in op.attributes["writes"]):
                out.append(op)
        elif op.has_trait("writes") and getattr(op, "dest", None) is arg:
            out.append(op)
    return out


def _device_result(write: Operation, arg: Value) -> Operation | None:
    """The ``mem.alloc`` whose kernel result ``write`` (a ``mem.write`` into ``arg``)
    copies, when it can live in device memory; else ``None``."""
    value = write.operand_values[0]
    if not (isinstance(value, OpResult) and isinstance(value.op, mem.ToTensorOp)):
        return None
    src = value.op.operand_values[0]
    if not (isinstance(src, OpResult) and isinstance(src.op, mem.AllocOp)):
        return None
    if src.type != arg.type or DYN in src.type.shape:  # type: ignore[attr-defined]
        return None
    if [u for u, _ in value.uses] != [write]:
        return None
    others = [u for u, _ in src.uses if u is not value.op]
    return src.op if all(isinstance(u, LaunchOp) for u in others) else None


def _reason(fn: FuncOp, arg: BlockArgument, allocs: dict[Operation, int]) -> str | None:
    """Why ``arg`` must be staged through the host, or ``None``."""
    order = {op: i for i, op in enumerate(fn.entry.ops)}
    writes = sorted(order[w] for w in _writers(fn, arg))
    found: dict[Operation, int] = {}
    for user, _ in arg.uses:
        if user not in order:
            return f"'{user.name}' uses it inside a loop or branch"
        if isinstance(user, LaunchOp | mem.DimOp):
            continue
        if isinstance(user, mem.ToTensorOp):
            # the snapshot is the device memory itself until the next write of it
            until = next((w for w in writes if w > order[user]), len(order))
            for reader, _ in user.result.uses:
                if not isinstance(reader, LaunchOp):
                    return f"'{reader.name}' reads it on the host"
                if reader not in order or order[reader] > until:
                    return "a kernel reads it after it is written"
            continue
        if isinstance(user, mem.WriteOp) and user.dest is arg:
            alloc = _device_result(user, arg)
            if alloc is None:
                return "'mem.write' writes a value computed on the host into it"
            found[alloc] = arg.index
            continue
        return f"'{user.name}' uses it on the host"
    allocs.update(found)
    return None


def plan_device_args(module: ModuleOp, entry: str) -> DevicePlan:
    """The :class:`DevicePlan` of host function ``entry`` (see the module docstring)."""
    fn = module.get(entry)
    plan = DevicePlan({}, written=written_arguments(fn))
    for arg in fn.entry.args:
        if isinstance(arg.type, MemRefType):
            plan.reasons[arg.index] = _reason(fn, arg, plan.device_allocs)
    return plan


def _to_tensor(it: Any, op: mem.ToTensorOp, env: dict) -> list:
    src = env[op.operand_values[0]]
    return [src] if isinstance(src, DeviceArray) else eval_op(op, [src])


def _dim(it: Any, op: mem.DimOp, env: dict) -> list:
    src = env[op.operand_values[0]]
    if isinstance(src, DeviceArray):
        return [np.int64(src.shape[op.attributes["axis"]])]
    return eval_op(op, [src])


def _write(it: Any, op: mem.WriteOp, env: dict) -> list:
    value, dest = (env[v] for v in op.operand_values)
    if isinstance(dest, DeviceArray) and isinstance(value, DeviceArray):
        dest.copy_device(value)
        return []
    assert not isinstance(dest, DeviceArray), "a staged argument reached the host runner"
    return eval_op(op, [value, dest])


def _alloc(it: Any, op: mem.AllocOp, env: dict) -> list:
    if it.plan.device_allocs.get(op, -1) in it.device_args:
        t = op.result.type
        return [empty(tuple(t.shape), np_dtype(t))]
    return eval_op(op, [env[v] for v in op.operand_values])


class DeviceHostRunner(HostRunner):
    """A :class:`HostRunner` whose values may be device arrays (see the module
    docstring); ``plan`` is :func:`plan_device_args` of the host function."""

    extra_handlers: ClassVar[dict] = {**HostRunner.extra_handlers, mem.ToTensorOp: _to_tensor,
                                      mem.DimOp: _dim, mem.WriteOp: _write,
                                      mem.AllocOp: _alloc}

    def __init__(self, module: Any, launcher: Launcher, plan: DevicePlan) -> None:
        super().__init__(module, launcher)
        self.plan = plan
        self.device_args: set[int] = set()  # parameters passed through as device arrays

    @staticmethod
    def _convert_arg(a: Any, t: object) -> Any:
        if isinstance(a, DeviceArray):
            return a
        return HostRunner._convert_arg(a, t)

    def call_staged(self, entry: str, args: Sequence[Any]) -> list:
        """Run ``entry``: device arrays the plan passes through stay on the device, the
        others are staged through host copies (written back when the function may write
        them)."""
        staged: list[tuple[DeviceArray, np.ndarray]] = []
        flat = list(args)
        for i, a in enumerate(flat):
            reason = self.plan.reasons.get(i)
            if isinstance(a, DeviceArray) and reason is not None:
                name = self.module.get(entry).entry.args[i].name_hint or f"#{i}"
                warnings.warn(f"pyasc: device array argument '{name}' is copied to the host "
                              f"and back: {reason}", PyascPerformanceWarning, stacklevel=2)
                flat[i] = a.numpy()
                if i in self.plan.written:
                    staged.append((a, flat[i]))
            elif isinstance(a, DeviceArray):
                self.device_args.add(i)
        out = self.call(entry, *flat)
        for device, host in staged:
            device.copy_from(host)
        return out


def has_device_arrays(args: Sequence[Any]) -> bool:
    """Whether a flat argument list holds a device array."""
    return any(isinstance(a, DeviceArray) for a in args)


__all__ = ["DeviceHostRunner", "DevicePlan", "has_device_arrays", "plan_device_args"]
