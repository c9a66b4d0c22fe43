"""How a call of a specialization maps to its kernel, as plain JSON data (``call_data``).

The frontend records, for each specialization, what the call path needs besides the
kernel: the *result template* (how the flat results rebuild the Python return value:
tuples and lists, compile-time constants, Python vs numpy scalars, parameters returned
as the caller's own object) and, when the call can be done natively, a *native request*
for the backend.  The disk cache stores this data next to the object code, so a kernel
loaded in a fresh process is called without parsing, lowering or even importing the
frontend's compiler.

Template leaves (the shape of ``ResultTemplate``): ``["result", j, conv]`` with
``conv`` ``"array"``, ``"py:int|float|bool"`` or ``"np:<dtype>"``; ``["const", value]``
with ``value`` encoded by :func:`encode_const`; ``["tuple"|"list", [items]]``.

Native request: ``{"nmin": m, "kinds": [...], "result": tree}``: the Python call passes
the flat parameters positionally (``nmin`` of them at least, the rest defaulted), each of
the given kind (``"array:C|inner|strided"``, ``"py:float|int|bool"``, ``"np:<dtype>"``),
and the result tree uses only results and ``None``/bool/int/float constants.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np

CONVERSIONS = {"int": int, "float": float, "bool": bool}
"""Python scalar conversions of weak results (``"py:<name>"``)."""


class CallTemplate:
    """A result template rebuilt from ``call_data`` (same semantics as the frontend's)."""

    __slots__ = ("params", "shape")

    def __init__(self, shape: Any, params: tuple[int | None, ...] = ()) -> None:
        self.shape = shape
        self.params = params

    def rebuild(self, results: Sequence[Any], flat_args: Sequence[Any]) -> Any:
        """The Python return value from the kernel's flat results."""
        return rebuild(self.shape, results, flat_args, self.params)


def rebuild(shape: Any, results: Sequence[Any], args: Sequence[Any],
            params: tuple[int | None, ...]) -> Any:
    """The Python value of template ``shape`` (shared with the frontend's
    ``ResultTemplate``): results converted, returned parameters handed back as is."""
    kind = shape[0]
    if kind in ("tuple", "list"):
        items = [rebuild(s, results, args, params) for s in shape[1]]
        return tuple(items) if kind == "tuple" else items
    if kind == "const":
        return shape[1]
    j, conv = shape[1], shape[2]
    if params and params[j] is not None:
        return args[params[j]]
    return convert(conv)(results[j])


def convert(conv: str) -> Any:
    """The function turning a flat result into the Python value for ``conv``."""
    if conv == "array":
        return np.asarray
    kind, name = conv.split(":")
    return CONVERSIONS[name] if kind == "py" else np.dtype(name).type


# -- JSON encoding

def template_to_json(shape: Any, params: Sequence[int | None]) -> dict[str, Any]:
    """Plain JSON data of a frontend ``ResultTemplate``'s ``shape`` and ``params``."""
    return {"shape": _shape_to_json(shape), "params": list(params)}


def template_from_json(data: dict[str, Any]) -> CallTemplate:
    """Inverse of :func:`template_to_json`; raises ``ValueError``/``KeyError``/
    ``TypeError``/``IndexError`` on malformed data."""
    params = tuple(None if p is None else int(p) for p in data["params"])
    return CallTemplate(_shape_from_json(data["shape"]), params)


def _shape_to_json(shape: Any) -> list:
    kind = shape[0]
    if kind in ("tuple", "list"):
        return [kind, [_shape_to_json(s) for s in shape[1]]]
    if kind == "const":
        return ["const", encode_const(shape[1])]
    return ["result", int(shape[1]), str(shape[2])]


def _shape_from_json(data: list) -> Any:
    kind = data[0]
    if kind in ("tuple", "list"):
        return (kind, [_shape_from_json(s) for s in data[1]])
    if kind == "const":
        return ("const", decode_const(data[1]))
    if kind != "result":
        raise ValueError(f"bad template node {kind!r}")
    return ("result", int(data[1]), str(data[2]))


def encode_const(value: object) -> list:
    """A compile-time result value as JSON: ``[kind, payload]``."""
    if value is None or type(value) in (bool, int, float, str):
        return [type(value).__name__, value]
    if isinstance(value, np.generic):
        return ["np", value.dtype.str, value.tobytes().hex()]
    if isinstance(value, np.dtype):
        return ["dtype", value.str]
    raise TypeError(f"cannot encode a {type(value).__name__} result")


def decode_const(data: list) -> object:
    """Inverse of :func:`encode_const`."""
    kind = data[0]
    if kind == "np":
        return np.frombuffer(bytes.fromhex(data[2]), np.dtype(data[1]))[0]
    if kind == "dtype":
        return np.dtype(data[1])
    decoders = {"NoneType": lambda v: None, "bool": bool, "int": int, "float": float,
                "str": str}
    return decoders[kind](data[1])


# -- the native request

_NATIVE_CONSTS = (type(None), bool, int, float)


def native_request(signature: inspect.Signature, specs: dict[str, tuple],
                   shape: Any) -> dict[str, Any] | None:
    """The native entry request of a specialization, or ``None`` if its calls cannot map
    positional arguments one-to-one onto the flat parameters."""
    kinds = []
    nmin = 0
    for name, p in signature.parameters.items():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            return None
        kind = _leaf_kind(specs[name])
        if kind is None:
            return None
        kinds.append(kind)
        nmin += p.default is inspect.Parameter.empty
    result = _native_result(shape)
    if result is None:
        return None
    return {"nmin": nmin, "kinds": kinds, "result": result}


def _leaf_kind(spec: tuple) -> str | None:
    kind = spec[0]
    if kind == "array":
        return "array:" + spec[3]
    if kind == "scalar":
        return "py:" + spec[1]
    if kind == "npscalar":
        return "np:" + spec[1]
    return None  # tuples and compile-time values


def _native_result(shape: Any) -> list | None:
    kind = shape[0]
    if kind in ("tuple", "list"):
        items = [_native_result(s) for s in shape[1]]
        return None if any(i is None for i in items) else [kind, items]
    if kind == "const":
        value = shape[1]
        if type(value) not in _NATIVE_CONSTS or type(value) is int and \
                not -(2 ** 63) <= value < 2 ** 63:
            return None
        return ["const", value]
    return ["result", int(shape[1]), str(shape[2])]
