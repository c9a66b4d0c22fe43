"""float64 and scalar kernels: fold what the host can compute, demote the rest on request.

No SoC in the table computes float64 on its AI Core (``SoC.float64``, ``soc.py``), so no
``double`` may reach a kernel; ``fit.check_fit`` refuses one (E50041, at the user's
line).  Two things keep float64 out of kernels where numpy allows it:

* :func:`fold_host_scalars`: scalar values the kernel computes from its scalar
  parameters and constants alone (``2 * sigma ** 2`` from a Python float, ``eps``
  cast to a float32 array's type) are computed by the host (numpy arithmetic, as the
  reference does) and passed as parameters of their final type: a float64 chain ending
  in a cast to float32 becomes one ``float`` parameter.  Only chains that touch float64
  move; anything else stays in the kernel.
* :func:`demote`, the ``device_float64="demote"`` option: a region with float64 values
  is computed in float32 (its float64 inputs converted on the host before the launch,
  its float64 results converted back), with a :class:`DeviceFloat64Warning`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from pyasc.errors import DeviceFloat64Warning
from pyasc.ir.core import DenseArray, Location, Operation, Value
from pyasc.ir.ops import func
from pyasc.ir.ops.func import FuncOp
from pyasc.ir.passes import PassContext, PassManager
from pyasc.ir.types import FunctionType, MemRefType, ScalarType, TensorType, Type, f32, f64

DEMOTE_OPTION = "device_float64"


@dataclass
class HostScalars:
    """Kernel parameters the host computes: ``fn`` maps the kernel's original entry
    arguments to the values of parameters ``first``, ``first + 1``, ..."""

    fn: FuncOp
    first: int


@dataclass
class Demoted:
    """Which inputs and results of a region :func:`demote` turned from float64 into
    float32 (the host converts them)."""

    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


# ------------------------------------------------------------------ folding


def _has_f64(op: Operation) -> bool:
    return any(_elem(v.type) == f64 for v in (*op.operand_values, *op.result_values))


def _elem(t: Type) -> ScalarType | None:
    if isinstance(t, ScalarType):
        return t
    return t.element if isinstance(t, TensorType | MemRefType) else None


def _invariant_ops(fn: FuncOp) -> list[Operation]:
    """Scalar ``arith``/``math`` ops computed from ``fn``'s scalar arguments and
    constants alone, in walk (definition) order."""
    known: set[Value] = {a for a in fn.entry.args if isinstance(a.type, ScalarType)}
    out = []
    for op in fn.walk():
        if type(op).__module__ not in ("pyasc.ir.ops.arith", "pyasc.ir.ops.math") or \
                op.region_list or not op.result_values or \
                not all(isinstance(r.type, ScalarType) for r in op.result_values):
            continue
        if all(v in known for v in op.operand_values):
            known.update(op.result_values)
            out.append(op)
    return out


def fold_host_scalars(fn: FuncOp) -> HostScalars | None:
    """Move the float64 chains of kernel-invariant scalar values to the host (see the
    module docstring); ``None`` when there is none.  New scalar entry arguments of
    ``fn`` replace the values used by the rest of the kernel."""
    inv = _invariant_ops(fn)
    members = set(inv)
    cone: dict[Value, bool] = {}  # value -> its chain touches float64
    for op in inv:
        f = _has_f64(op) or any(cone.get(v, False) for v in op.operand_values)
        cone.update(dict.fromkeys(op.result_values, f))
    frontier = [r for op in inv if op.name != "arith.constant" for r in op.result_values
                if cone[r] and any(u not in members for u, _ in r.uses)]
    if not frontier:
        return None
    n = len(fn.entry.args)
    host = FuncOp.empty("host_scalars", [a.type for a in fn.entry.args],
                        [v.type for v in frontier], [a.name_hint for a in fn.entry.args])
    env: dict[Value, Value] = dict(zip(fn.entry.args, host.entry.args, strict=True))
    for op in inv:
        host.entry.append(op.clone(env))
    host.entry.append(func.ReturnOp([env[v] for v in frontier]))
    for v in frontier:
        arg = fn.entry.add_arg(v.type, v.name_hint or "host")
        for user, i in list(v.uses):
            if user not in members:
                user.set_operand(i, arg)
    ft = fn.function_type
    fn.attributes["function_type"] = FunctionType(
        tuple(a.type for a in fn.entry.args), ft.results)
    module = fn.parent_op
    if module is not None:
        PassManager(["dce"]).run(module, PassContext())  # type: ignore[arg-type]
    return HostScalars(host, n)


# ------------------------------------------------------------------ demotion


def _narrow(t: Type) -> Type:
    if t == f64:
        return f32
    if isinstance(t, TensorType) and t.element == f64:
        return t.with_element(f32)
    if isinstance(t, MemRefType) and t.element == f64:
        return MemRefType(t.shape, f32, t.strides)
    return t


def _values(fn: FuncOp) -> list[Value]:
    out: list[Value] = list(fn.entry.args)
    for op in fn.walk():
        out.extend(op.result_values)
        for region in op.region_list:
            for block in region.blocks:
                out.extend(block.args)
    return out


def has_float64(fn: FuncOp) -> bool:
    """Whether any value of ``fn`` (at any depth) holds float64 elements."""
    return any(_elem(v.type) == f64 for v in _values(fn))


def demote(fn: FuncOp, loc: Location) -> Demoted:
    """Compute ``fn`` in float32 wherever it computes float64 (types, constants and the
    signature); warns once at ``loc``.  Returns which arguments and results changed."""
    ft = fn.function_type
    done = Demoted([i for i, t in enumerate(ft.inputs) if _narrow(t) != t],
                   [j for j, t in enumerate(ft.results) if _narrow(t) != t])
    for v in _values(fn):
        v.type = _narrow(v.type)
    for op in fn.walk():
        value = op.attributes.get("value")
        if isinstance(value, DenseArray) and _narrow(value.type) != value.type:
            op.attributes["value"] = DenseArray(value.array.astype(np.float32),
                                                _narrow(value.type))
    fn.attributes["function_type"] = FunctionType(tuple(_narrow(t) for t in ft.inputs),
                                                  tuple(_narrow(t) for t in ft.results))
    warnings.warn_explicit(DeviceFloat64Warning(
        "float64 device code is computed in float32 on the AI Core (device_float64="
        "'demote'): results differ from numpy's by float32 rounding"),
        DeviceFloat64Warning, loc.file or "<unknown>", loc.line or 0)
    return done


__all__ = ["DEMOTE_OPTION", "Demoted", "HostScalars",
           "demote", "fold_host_scalars", "has_float64"]
