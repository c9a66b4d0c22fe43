"""What a ``@hybrid`` call accepts as an argument, and what pyasc converts at the boundary.

A compiled kernel computes with plain ndarray semantics on native-byte-order data.  An
argument that has exactly that meaning is passed as it is; one whose meaning survives a
conversion is converted; anything else is refused with an :class:`ArgumentError`
(E50040) that names the argument and says what to pass instead, never silently
reinterpreted.  Each argument, and each item of a tuple or list argument, is taken by
the first rule that applies:

========================================  ==============================================
argument                                  taken as
========================================  ==============================================
``np.ndarray``, ``np.memmap``             itself (a memmap is an ndarray on a file)
  ... with non-native byte order          a native copy, read-only (the data is read)
  ... with a structured / record dtype    refused: pass one field, ``x['name']``
``np.ma.MaskedArray``                     refused: the mask would be dropped
``np.matrix``                             refused: ``*`` is a matrix product there
other ``ndarray`` subclasses              refused: their own meaning (units...) is lost
bool, int, float, numpy scalars, None,    themselves (run-time scalars or compile-time
  str, dtypes                               values, see ``specialize``)
tuple, list                               item by item (a list stays a list)
bytes, bytearray                          refused: byte strings, not arrays
``pyasc.device_array``                    itself on ``target="ascend"`` (its kernels
                                            take device memory); refused elsewhere:
                                            pass ``d.numpy()``
torch tensor on the CPU                   an ndarray over its own memory (no copy;
                                            writes reach the tensor), results as
                                            tensors: ``jit.tensors`` (before these rules)
torch tensor on an NPU (``torch_npu``)    a device array over its own memory on
                                            ``target="ascend"`` (no copy; writes reach
                                            the tensor); refused elsewhere
buffer protocol, ``__array_interface__``, ``np.asarray(x)``, read-only
  ``__array__`` (memoryview, array.array,
  ctypes arrays...)
========================================  ==============================================

A converted argument is read-only: the kernel reads a copy or a view pyasc made, so a
write into it could be lost.  An operator that writes into such an argument is refused
before it runs (the frontend knows which arguments a specialization writes, see
``Entry.writes``); pass a writable native ndarray instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from pyasc.callsite import at_caller
from pyasc.errors import ArgumentError
from pyasc.runtime.acl.device_array import DeviceArray, from_npu_tensor, is_npu_tensor

Path = tuple[Any, ...]
_PLAIN = (np.ndarray, np.memmap)
_VALUES = (bool, int, float, str, type(None), np.generic, np.dtype, type)


class Converted:
    """The paths of the arguments of one call that :func:`prepare` converted, with why."""

    def __init__(self) -> None:
        self.reasons: dict[Path, str] = {}

    def __bool__(self) -> bool:
        return bool(self.reasons)


def describe(path: Path) -> str:
    """``'x'``, ``'pairs'[1][0]``: an argument and an item in it, as users wrote them."""
    return "'" + str(path[0]) + "'" + "".join(f"[{i}]" for i in path[1:])


def prepare(value: object, path: Path, converted: Converted | None = None,
            devices: bool = False) -> object:
    """The value a kernel is called with for ``value`` (itself or a converted array);
    raises :class:`ArgumentError` for the kinds pyasc refuses (device arrays unless
    ``devices``: the target runs kernels on the device).  Conversions are recorded in
    ``converted``."""
    t = type(value)
    if t in _PLAIN:
        return _array(value, path, converted)  # type: ignore[arg-type]
    if isinstance(value, _VALUES):
        return value
    if t is tuple or t is list:
        items = [prepare(v, (*path, i), converted, devices)
                 for i, v in enumerate(value)]  # type: ignore[attr-defined]
        return items if t is list else tuple(items)
    if devices and t is DeviceArray:
        return value
    if is_npu_tensor(value):
        return _npu_tensor(value, path, devices)
    for kind, refusal in _REFUSED:
        if isinstance(value, kind):
            raise refusal(value, path)
    return _array_like(value, path, converted)


def _npu_tensor(value: Any, path: Path, devices: bool) -> DeviceArray:
    """A torch NPU tensor: its own device memory on ``target="ascend"`` (no copy)."""
    if not devices:
        raise _npu_on_host(path)
    try:
        return from_npu_tensor(value)
    except ValueError as exc:
        raise ArgumentError(f"argument {describe(path)}: {exc}") from None


def prepare_call(signature: inspect.Signature, args: tuple, kwargs: dict[str, Any],
                 devices: bool = False) -> tuple[tuple, dict[str, Any], Converted]:
    """:func:`prepare` every argument of a call, keeping positions and keywords (an
    error is located at the user's call); ``devices``: device arrays are taken."""
    names = [p.name for p in signature.parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    converted = Converted()
    try:
        out = tuple(prepare(v, (names[i] if i < len(names) else f"*{i}",), converted, devices)
                    for i, v in enumerate(args))
        kw = {k: prepare(v, (k,), converted, devices) for k, v in kwargs.items()}
    except ArgumentError as exc:
        raise at_caller(exc) from None
    return out, kw, converted


def prepare_bound(arguments: dict[str, Any], devices: bool = False) -> dict[str, Any]:
    """:func:`prepare` each bound argument (an error is located at the user's call);
    ``devices``: device arrays are taken."""
    try:
        return {name: prepare(v, (name,), None, devices) for name, v in arguments.items()}
    except ArgumentError as exc:
        raise at_caller(exc) from None


def _array(a: np.ndarray, path: Path, converted: Converted | None) -> np.ndarray:
    if a.dtype.fields is not None or (a.dtype.kind == "V" and not _bfloat16(a.dtype)):
        raise _structured(a, path)
    if a.dtype.isnative:
        return a
    native = a.astype(a.dtype.newbyteorder("="))
    native.flags.writeable = False
    _record(converted, path, f"has non-native byte order ({a.dtype.str})",
            f"x.astype('{native.dtype.str.replace('<', '=')}')")
    return native


def _array_like(value: object, path: Path, converted: Converted | None) -> np.ndarray:
    """``np.asarray(value)`` for buffers and objects numpy converts, read-only."""
    kind = type(value).__name__
    if not _converts(value):
        raise ArgumentError(f"argument {describe(path)} of type {kind} is not supported",
                            hint="pass numpy arrays, numbers, tuples or lists of them, "
                            "None, strings or dtypes")
    try:
        a = np.asarray(value)
    except Exception as exc:  # any failure of the object's own conversion
        raise ArgumentError(f"argument {describe(path)}: np.asarray() of a {kind} failed: "
                            f"{exc}", hint="pass a numpy array") from None
    if a.dtype.hasobject or a.dtype.kind in "USV":
        raise ArgumentError(f"argument {describe(path)}: a {kind} converts to an array of "
                            f"dtype {a.dtype}, which pyasc cannot compute with",
                            hint="pass a numeric numpy array")
    a = _array(a, path, None)
    if a.flags.writeable:
        a = a.view()  # (the flag of this view only, never the owner's)
        a.flags.writeable = False
    _record(converted, path, f"is a {kind}, converted with np.asarray()", "np.asarray(x)")
    return a


def _converts(value: object) -> bool:
    if hasattr(value, "__array__") or hasattr(value, "__array_interface__"):
        return True
    try:
        memoryview(value)  # type: ignore[arg-type]
    except TypeError:
        return False
    return True


def _record(converted: Converted | None, path: Path, reason: str, fix: str) -> None:
    if converted is not None:
        converted.reasons[path] = f"{reason}; pass a writable native ndarray ({fix})"


def _bfloat16(dt: np.dtype) -> bool:
    """ml_dtypes' ``bfloat16`` (numpy has none): a kind "V" dtype that is a number."""
    return dt.name == "bfloat16" and dt.type.__module__.split(".")[0] == "ml_dtypes"


def _structured(a: np.ndarray, path: Path) -> ArgumentError:
    names = list(a.dtype.names or ())
    field = f"x[{names[0]!r}]" if names else "a numeric array"
    return ArgumentError(f"argument {describe(path)} has the structured dtype {a.dtype}: "
                         "pyasc computes with numeric arrays",
                         hint=f"pass one field at a time, e.g. {field}")


def _masked(a: Any, path: Path) -> ArgumentError:
    return ArgumentError(f"argument {describe(path)} is a masked array: pyasc would drop "
                         "its mask and compute with the hidden values too",
                         hint="pass x.filled(value) to replace the masked values, or "
                         "np.ma.getdata(x) to ignore the mask knowingly")


def _matrix(a: Any, path: Path) -> ArgumentError:
    return ArgumentError(f"argument {describe(path)} is an np.matrix: pyasc computes with "
                         "ndarray semantics (* elementwise, results of any rank)",
                         hint="pass np.asarray(x) and use @ for matrix products")


def _recarray(a: Any, path: Path) -> ArgumentError:
    return _structured(a, path)


def _subclass(a: Any, path: Path) -> ArgumentError:
    return ArgumentError(f"argument {describe(path)} is a {type(a).__name__} (an ndarray "
                         "subclass): pyasc computes with plain ndarrays and would lose what "
                         "the subclass adds", hint="pass np.asarray(x) if plain ndarray "
                         "semantics are what you mean")


def _device(d: Any, path: Path) -> ArgumentError:
    return ArgumentError(f"argument {describe(path)} is a pyasc device_array: only "
                         "target='ascend' runs kernels on the device that holds it",
                         hint="pass d.numpy() (a host copy) on this target, or call with "
                         "target='ascend'")


def refuse_device_arrays(signature: inspect.Signature, args: tuple,
                         kwargs: dict[str, Any]) -> None:
    """Raise the :func:`_device` error (at the user's call) for a device array or a
    torch NPU tensor among ``args``/``kwargs``: a call on a target that computes on the
    host."""
    names = [p.name for p in signature.parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    items = [((names[i] if i < len(names) else f"*{i}",), v) for i, v in enumerate(args)]
    items += [((k,), v) for k, v in kwargs.items()]
    while items:
        path, v = items.pop(0)
        if type(v) is tuple or type(v) is list:
            items += [((*path, i), x) for i, x in enumerate(v)]  # type: ignore[attr-defined]
        elif type(v) is DeviceArray:
            raise at_caller(_device(v, path))
        elif is_npu_tensor(v):
            raise at_caller(_npu_on_host(path))


def _npu_on_host(path: Path) -> ArgumentError:
    return ArgumentError(f"argument {describe(path)} is a torch tensor on an NPU; this "
                         "target runs on the host",
                         hint="use target='ascend', or pass tensor.cpu().numpy()")


def _bytes(b: Any, path: Path) -> ArgumentError:
    return ArgumentError(f"argument {describe(path)} is {type(b).__name__}: a byte string, "
                         "not an array", hint="pass np.frombuffer(b, dtype=...)")


_REFUSED: tuple[tuple[type, Callable[[Any, Path], ArgumentError]], ...] = (
    (np.ma.MaskedArray, _masked), (np.matrix, _matrix), (np.recarray, _recarray),
    (np.ndarray, _subclass), (bytes | bytearray, _bytes), (DeviceArray, _device),
)
"""Kinds refused, in order (the first match explains): ``np.memmap`` and plain arrays
never get here."""
