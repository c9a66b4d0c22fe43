"""Dtypes of generated programs: inputs, input values, casts and mixed-dtype hazards.

Inputs mix the narrow dtypes (``int8``, ``int16``, ``uint8``, ``float16``, ``bool``) with
``int32``/``int64``/``float32``/``float64``; numpy itself decides every result dtype
(NEP 50 promotion, probed on sample values by ``progen_expr.Scope``), so nothing here
predicts a promotion.  What this module does decide is what must *not* be generated
because numpy's answer depends on a run-time value in a way pyasc documents as
different (docs/numpy-support.md, "Overflow and casts"):

* a run-time Python int meeting a narrower integer array: numpy 2 raises
  ``OverflowError`` when the value does not fit (``uint8_array + s`` with ``s = -3``),
  and so does pyasc (a program that stops there tests little).  Run-time ints here are ``s``, ``cnt`` and the scan counters; ``s`` is
  drawn non-negative when an input is unsigned, and ``cnt`` (unbounded) never meets an
  8-bit array;
* a float cast to an unsigned or 8/16-bit integer: out-of-range values are undefined
  (C semantics, differs by host), so floats are cast only to int32/int64 (and only from
  the finite inputs) and narrow integer casts take integers.
"""

from __future__ import annotations

import re

import numpy as np

INPUT_DTYPES = ("int32", "int64", "float32", "float64",
                "int8", "int16", "uint8", "float16", "bool")
"""Dtypes of the array inputs ``a`` and ``b`` (the first four twice as likely)."""
WEIGHTED_INPUTS = INPUT_DTYPES[:4] * 2 + INPUT_DTYPES[4:]

CASTS = ("np.float32", "np.float64", "np.int32", "np.int64",
         "np.float16", "np.int8", "np.int16", "np.uint8", "np.bool")
"""Scalar types a value may be cast to (``x.astype(T)`` or ``T(x)``)."""
FLOAT_TO_INT_CASTS = ("np.int32", "np.int64")
"""Integer types a float may be cast to: the others overflow on some inputs."""

NARROW_INTS = ("int8", "uint8", "int16", "uint16")
UNBOUNDED_WEAK = re.compile(r"\bcnt\b|\bj\d+\b")
"""Run-time Python ints that can grow past an 8-bit range (loop-carried counters)."""

ACC_TYPES = ("np.float64", "np.float32", "np.int64", "np.int32", "np.float16", "np.int16")
"""Types of the loop-carried scalar ``acc`` and row ``row``."""
OUT_TYPES = ("a.dtype", "a.dtype", "np.float64", "b.dtype", "np.float32", "np.int32")
"""Dtypes of the result buffer ``out`` (``np.zeros_like(a, dtype=...)``)."""


def values(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Input data: small integers, multiples of 1/4 for floats, random bools."""
    rng = np.random.default_rng(seed)
    if dtype.startswith("float"):  # quarters: exact in every dtype, zeros included
        return (rng.integers(-12, 13, shape) / 4).astype(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    low = 0 if dtype.startswith("uint") else -9
    return rng.integers(low, 10, shape).astype(dtype)


def scalar_range(dtypes: dict[str, str]) -> tuple[int, int]:
    """The range of the int argument ``s``: non-negative when an input is unsigned."""
    return (0, 5) if any(d.startswith("uint") for d in dtypes.values()) else (-3, 5)


def weak_conflict(x_text: str, x_sig: tuple, y_sig: tuple) -> bool:
    """True when the run-time Python int ``x`` may overflow the narrow integer ``y``
    (numpy raises there, as pyasc does: a program that stops at once tests little)."""
    return (bool(x_sig) and x_sig[0] == "py-int" and len(y_sig) > 1
            and y_sig[1] in NARROW_INTS and UNBOUNDED_WEAK.search(x_text) is not None)


def cast_allowed(to: str, x_dtype: str, from_input: bool, fuzzy: bool,
                 runtime_int: bool = False) -> bool:
    """Whether ``x`` of ``x_dtype`` may be cast to ``to``: no undefined values, no fuzzy
    value through a discontinuity (truncation to an integer, truth to a bool), and no
    run-time Python int (``s``, ``cnt``) into a type it may not fit (numpy 2 raises
    ``OverflowError`` for ``np.uint8(s)`` with ``s < 0``, as pyasc does)."""
    if fuzzy and ("int" in to or "bool" in to):
        return False
    if runtime_int and to not in ("np.int32", "np.int64", "np.bool") and "float" not in to:
        return False
    if "float" in x_dtype:
        return "int" not in to or (to in FLOAT_TO_INT_CASTS and from_input)
    return True


def lowest_float(dtypes: dict[str, str], source: str, work: set[str]) -> str | None:
    """The least precise float dtype a program computes in (its error budget's unit):
    of its inputs, its casts and its fuzzy computations (``work``: numpy computes
    ``np.exp`` of int8 in float16 and of int16 in float32)."""
    for low in ("float16", "float32"):
        if low in dtypes.values() or low in source or low in work:
            return low
    return None
