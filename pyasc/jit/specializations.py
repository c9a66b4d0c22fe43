"""``fn.specializations``: a read-only view of a function's compiled specializations.

A specialization is one call signature compiled (its key: the argument specs of
``specialize``); it has IR once built in this process and a kernel per target compiled
or loaded from the disk cache (then without IR).  The view maps each key to a
:class:`SpecializationInfo`: the argument types the key stands for (``"float32[?, ?]"``
under ``dynamic_shape=True``, ``"float32[3, 4]"`` otherwise; ``"float"`` for a Python
float, ``"const 0.5"`` for an argument specialized by value...) and the targets with a
kernel.  Under ``dynamic_shape=True`` every shape of one rank, dtype and layout is one
key, so ``len(fn.specializations) == 1`` after calls with many shapes of that kind
(but for dimensions specialized by value, such as a window loop's size:
``"float32[?, 3, 3]"``).

:class:`Specialization` is what the function keeps per key once its IR is built (the
program, the unoptimized text, the result template).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pyasc.backend.base import Program
from pyasc.frontend.signature import Param, Spec

if TYPE_CHECKING:  # pragma: no cover - the compiler is imported when something compiles
    from pyasc.frontend.compiler import ResultTemplate


@dataclass
class Specialization:
    """One compiled-to-IR call signature of a hybrid function."""

    key: tuple
    specs: dict[str, Spec]
    params: list[Param]
    program: Program
    unoptimized: str
    template: ResultTemplate


@dataclass(frozen=True)
class SpecializationInfo:
    """One compiled specialization: its key, argument types and targets."""

    key: tuple
    types: dict[str, str]
    targets: tuple[str, ...]
    has_ir: bool

    def __repr__(self) -> str:
        args = ", ".join(f"{k}: {v}" for k, v in self.types.items())
        return f"<specialization ({args}) targets={list(self.targets)}>"


class SpecializationsView(Mapping):
    """``fn.specializations``: key -> :class:`SpecializationInfo`, read-only, live
    (it shows specializations compiled after it was taken)."""

    def __init__(self, hf: Any) -> None:
        self._hf = hf

    def _keys(self) -> dict[tuple, list[str]]:
        keys: dict[tuple, list[str]] = {k: [] for k in list(self._hf._specs)}
        for key, target in list(self._hf._kernels):
            keys.setdefault(key, []).append(target)
        return keys

    def __getitem__(self, key: tuple) -> SpecializationInfo:
        targets = self._keys()[key]  # KeyError for an unknown key, as a Mapping must
        types = {name: describe_spec(spec) for name, spec in key}
        return SpecializationInfo(key, types, tuple(targets), key in self._hf._specs)

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(self[k]) for k in self) + "}"


def describe_spec(spec: tuple) -> str:
    """A readable type for one argument spec (``specialize``'s forms)."""
    kind = spec[0]
    if kind == "array":
        _, dtype, ndim, layout, shape = spec
        dims = ", ".join("?" * ndim) if shape is None else \
            ", ".join("?" if d is None else str(d) for d in shape)
        return f"{dtype}[{dims}]" + ("" if layout == "C" else f" {layout}")
    if kind in ("tuple", "list"):
        items = ", ".join(describe_spec(s) for s in spec[1:])
        return f"({items})" if kind == "tuple" else f"[{items}]"
    if kind == "scalar":
        return spec[1]
    if kind == "npscalar":
        return f"np.{spec[1]}"
    return f"const {spec[2]!r}"


def signature_text(key: tuple) -> str:
    """A specialization key as readable argument types, ``"float32[4, 8]; float"`` (the
    name of its ``PYASC_DUMP_PATH`` folder)."""
    return "; ".join(describe_spec(spec) for _, spec in key)


def describe_arguments(args: tuple, kwargs: dict[str, Any]) -> str:
    """A call's arguments as readable types, ``"float32[4, 8]; float"`` (the profiler's
    grouping: arrays by dtype and shape, anything else by its type)."""
    def one(v: object) -> str:
        shape, dtype = getattr(v, "shape", None), getattr(v, "dtype", None)
        if isinstance(shape, tuple) and dtype is not None:
            return f"{np.dtype(dtype).name}[{', '.join(map(str, shape))}]"
        return type(v).__name__
    return "; ".join([one(v) for v in args] + [f"{k}={one(v)}" for k, v in kwargs.items()])
