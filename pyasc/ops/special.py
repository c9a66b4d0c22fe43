"""Elementwise special functions numpy lacks, usable in plain Python and compiled code.

``stop_gradient(x)`` is ``x``, through which automatic differentiation passes no
gradient (JAX's ``lax.stop_gradient``): softmax's row maximum, a numerical shift whose
exact gradient is zero, is not differentiated (``docs/autodiff.md``).

``erf`` is an ordinary function (numpy-ufunc dtype rules, computed with ``math.erf``
element by element) when Python runs it, and the IR's vectorized ``math.erf`` when a
``@hybrid`` function calls it: the ``__pyasc_intrinsic__`` attribute names the compiler's
entry for it, so one spelling works on ``interpret``, ``cpu`` and the device.
"""

from __future__ import annotations

import math

import numpy as np

_ERF_ELEMENTS = np.frompyfunc(math.erf, 1, 1)


def erf(x: object, /, out: np.ndarray | None = None, *, dtype: object = None
        ) -> np.ndarray | np.generic:
    """The error function of each element of ``x`` with numpy's ufunc rules (as
    ``np.tanh``: float16/float32/float64 keep their dtype, bool and integers give a
    float; ``dtype=`` computes in that dtype, ``out=`` receives the result under
    ``same_kind`` casting); a scalar gives a numpy scalar.  Complex input raises
    ``TypeError``."""
    a = np.asarray(x) if dtype is None else np.asarray(x).astype(dtype)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"erf: unsupported dtype {a.dtype}")
    kind = np.tanh(np.zeros((), a.dtype)).dtype
    # math.erf is correctly rounded to within 1 ulp in float64; rounding that to a
    # narrower dtype gives the nearest value or its neighbour
    result = np.array(_ERF_ELEMENTS(a.astype(np.float64)), dtype=np.float64).astype(kind)
    if out is not None:
        np.copyto(out, result, casting="same_kind")
        return out
    return result[()] if result.ndim == 0 else result


erf.__pyasc_intrinsic__ = "pyasc.ops.erf"  # type: ignore[attr-defined]


def stop_gradient(x: object, /) -> object:
    """``x`` itself; ``pyasc.grad``/``fn.vjp`` pass no gradient through it (JAX's
    ``lax.stop_gradient``).  Use it where a value only steers the computation (a shift
    for numerical range, a detached target) and its exact gradient is zero or unwanted."""
    return x


stop_gradient.__pyasc_intrinsic__ = "pyasc.ops.stop_gradient"  # type: ignore[attr-defined]
