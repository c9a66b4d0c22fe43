"""Accuracy of the ``expand-math`` expansions, measured over the float32 range.

A one-op function ``f(x: tensor<?xf32>)`` is expanded by the pass and run by the IR
interpreter on whole numpy arrays (every op is elementwise, so a chunk of millions of
inputs costs a few dozen numpy calls).  Inputs: every ``stride``-th float32 bit pattern
(both signs, zeros, denormals, inf and NaNs included) plus :data:`SPECIAL_VALUES`.

The error of a result is measured in ulps of the float32 format against the exact
value, taken as the float64 function (``ulp_error``): ``|y - ref| / ulp(ref)`` with
``ulp(ref)`` the float32 spacing at ``|ref|`` (``2^-149`` for denormals).  NaN must
give NaN and infinities must match exactly.  Also reported: the largest distance in
float32 steps from numpy's own float32 result, and numpy's own error.  ``SPECS`` holds
the stated bounds that ``tests/ir/test_expand_math_accuracy.py`` checks and
``docs/math-accuracy.md`` lists (``benchmarks/math_accuracy.py`` regenerates it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from pyasc.ir.builder import Builder
from pyasc.ir.core import Operation, Value
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import arith, func
from pyasc.ir.ops import math as m
from pyasc.ir.passes.manager import PassContext, get_pass
from pyasc.ir.passes.mathlib.trig import TRIG_MAX
from pyasc.ir.types import DYN, ScalarType, TensorType, element_type, f32

Ref = Callable[[np.ndarray], np.ndarray]


def _erf64(x: np.ndarray) -> np.ndarray:
    out = np.sign(x)  # erf(x) == +-1 in float64 for |x| >= 6; NaN stays NaN
    small = np.abs(x) < 6
    out[small] = np.frompyfunc(math.erf, 1, 1)(x[small]).astype(np.float64)
    return out


def _sigmoid64(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _sigmoid32(x: np.ndarray) -> np.ndarray:
    """numpy's float32 result for the IR's definition ``1/(1+exp(-x))``."""
    return np.float32(1) / (np.float32(1) + np.exp(-x))


@dataclass(frozen=True)
class Spec:
    """One function: float64 reference, numpy's float32 version, stated bound (ulp)."""

    ref: Ref
    np32: Ref
    bound: float
    notes: str = ""
    domain: float = math.inf  # |x| limit of the stated bound


SPECS: dict[str, Spec] = {
    "exp": Spec(np.exp, np.exp, 1.0, "overflow above 88.7228, denormal results below "
                "-87.34, 0 below -103.97"),
    "exp2": Spec(np.exp2, np.exp2, 1.0, "overflow from 128, denormals below -126"),
    "expm1": Spec(np.expm1, np.expm1, 2.0, "-1 below -17.33; expm1(-0) = -0"),
    "log": Spec(np.log, np.log, 1.0, "denormal inputs scaled; log(0) = -inf, log(x<0) = nan"),
    "log2": Spec(np.log2, np.log2, 1.0, "exact for powers of two"),
    "log10": Spec(np.log10, np.log10, 2.0, ""),
    "log1p": Spec(np.log1p, np.log1p, 2.0, "log1p(-1) = -inf; x rounds to itself below 2^-24"),
    "tanh": Spec(np.tanh, np.tanh, 2.0, "+-1 from abs(x) = 9.01"),
    "sigmoid": Spec(_sigmoid64, _sigmoid32, 2.0, "denormal results for x < -87.3 (numpy's "
                    "1/(1+exp(-x)) underflows to 0 there)"),
    "erf": Spec(_erf64, lambda x: _erf64(x.astype(np.float64)).astype(np.float32), 2.0,
                "+-1 from abs(x) = 3.92"),
    "sin": Spec(np.sin, np.sin, 2.0, "abs(x) <= 2^30; beyond: in [-1, 1], inaccurate",
                TRIG_MAX),
    "cos": Spec(np.cos, np.cos, 2.0, "abs(x) <= 2^30; beyond: in [-1, 1], inaccurate",
                TRIG_MAX),
    "atan": Spec(np.arctan, np.arctan, 2.0, "+-pi/2 (rounded) from abs(x) = 6.29e7; "
                 "atan(-0) = -0"),
}

OPS: dict[str, type[Operation]] = {
    "exp": m.ExpOp, "exp2": m.Exp2Op, "expm1": m.Expm1Op, "log": m.LogOp, "log2": m.Log2Op,
    "log10": m.Log10Op, "log1p": m.Log1pOp, "tanh": m.TanhOp, "sigmoid": m.SigmoidOp,
    "erf": m.ErfOp, "sin": m.SinOp, "cos": m.CosOp, "atan": m.AtanOp,
}

POW_EXPONENTS = (3, 4, 5, 8, 16, -2, -3, -16)
POW_BOUND = 0.5 + 2.0 ** -20
"""``x**n`` is computed in float64 and rounded once: correctly rounded up to the tiny
float64 error (plus double rounding, which this bound covers)."""


def pow_spec(n: int) -> Spec:
    return Spec(lambda x: np.power(x, float(n)), lambda x: np.power(x, np.float32(n)),
                POW_BOUND)


def _f32(*values: float) -> list[float]:
    return [float(np.float32(v)) for v in values]


_EDGES = [0.0, 1.0, 2.0, 0.5, 1e-30, 1e-45, 1.1754942e-38, 1.1754944e-38, 3.4028235e38,
          math.inf, 88.72283, 88.72284, 87.33654, 87.33655, 103.97207, 103.97208, 104.0,
          105.0, 127.99999, 128.0, 149.0, 150.0, 151.0, 9.010913, 9.010914, 3.9192, 3.9375,
          4.0, 0.5625, 0.921875, 0.34657359, 17.32868, 16.63553, 1e-7, 2.0 ** -24,
          2.0 ** -25, 0.9999999, 1.0000001, 0.99999994, 0.70710677, 1.4142135, 3.1415927,
          1.5707964, 0.7853982, 1e5, 1e9, TRIG_MAX, 1.5e9, 3e38]
SPECIAL_VALUES = np.array([math.nan] + _f32(*_EDGES) + _f32(*(-v for v in _EDGES)),
                          dtype=np.float32)
"""Zeros, infinities, NaN, denormal/normal/max limits, and each function's thresholds."""


Make = Callable[[Builder, Value], Value]


def unary(op: type[Operation]) -> Make:
    return lambda b, x: b.insert(op.new(x)).result  # type: ignore[attr-defined]


def power(n: float) -> Make:
    """``x ** n`` with a scalar constant exponent."""
    def make(b: Builder, x: Value) -> Value:
        c = b.insert(arith.ConstantOp.new(float(n), element_type(x.type))).result
        return b.insert(m.PowOp.new(x, c)).result
    return make


def expanded(make: Make, fastmath: bool = False, element: ScalarType = f32,
             fma: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    """``make``'s op on a 1-D tensor, expanded by ``expand-math`` (with ``math.fma`` in the
    polynomials if ``fma``, as the CPU backend on an FMA host), run by the interpreter."""
    t = TensorType((DYN,), element)
    fn = func.FuncOp.empty("f", [t], [t], ["x"])
    b = Builder.at_end(fn.entry)
    b.insert(func.ReturnOp([make(b, fn.entry.args[0])]))
    module = func.ModuleOp.empty()
    module.append(fn)
    get_pass("expand-math").run(module, PassContext(options={"fastmath": fastmath,
                                                             "fma": fma}))
    interp = Interpreter(module)

    def run(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return interp.call("f", x)[0]
    return run


def ulp_error(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Error of float32 results ``y`` against exact (float64) ``ref``, in float32 ulps."""
    y64 = y.astype(np.float64)
    with np.errstate(all="ignore"):
        ref32 = ref.astype(np.float32)
        _, e = np.frexp(np.abs(ref))
        ulp = np.ldexp(1.0, np.clip(e - 24, -149, 104))
        err = np.abs(y64 - ref) / ulp
    nan_ok = np.isnan(y) & np.isnan(ref)
    inf_ok = np.isinf(ref32) & (y64 == ref32)
    err = np.where(np.isnan(y) != np.isnan(ref), np.inf, err)
    err = np.where(np.isinf(y) & ~inf_ok, np.inf, err)
    return np.where(nan_ok | inf_ok, 0.0, err)


def float32_steps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance between float32 arrays in representable steps (NaN vs NaN is 0)."""
    def ordered(v: np.ndarray) -> np.ndarray:
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    d = np.abs(ordered(a) - ordered(b))
    both_nan = np.isnan(a) & np.isnan(b)
    return np.where(both_nan, 0, np.where(np.isnan(a) | np.isnan(b), 1 << 32, d))


def sweep(stride: int, chunk: int = 1 << 21) -> Iterator[np.ndarray]:
    """Every ``stride``-th float32 bit pattern, in chunks, then the special values."""
    for start in range(0, 1 << 32, chunk * stride):
        stop = min(1 << 32, start + chunk * stride)
        yield np.arange(start, stop, stride, dtype=np.uint64).astype(np.uint32).view(
            np.float32)
    yield SPECIAL_VALUES


@dataclass
class Stats:
    """Measured accuracy of one function."""

    name: str
    count: int = 0
    max_ulp: float = 0.0
    worst_input: float = math.nan
    max_steps_vs_numpy: int = 0
    numpy_max_ulp: float = 0.0  # numpy's own float32 error, same inputs and reference
    beyond_domain_max_abs: float = 0.0  # largest |y - ref| outside the stated domain

    def add(self, x: np.ndarray, y: np.ndarray, ref: np.ndarray, np32: np.ndarray,
            domain: float) -> None:
        err = ulp_error(y, ref)
        inside = ~(np.abs(x) > domain)
        self.count += int(x.size)
        if inside.any():
            i = int(np.argmax(np.where(inside, err, -1.0)))
            if err[i] > self.max_ulp:
                self.max_ulp, self.worst_input = float(err[i]), float(x[i])
            steps = float32_steps(y[inside], np32[inside])
            self.max_steps_vs_numpy = max(self.max_steps_vs_numpy, int(steps.max()))
            np_err = ulp_error(np32[inside].astype(np.float32), ref[inside])
            self.numpy_max_ulp = max(self.numpy_max_ulp, float(np_err.max()))
        out = ~inside & np.isfinite(x)
        if out.any():
            gap = np.abs(y[out].astype(np.float64) - ref[out])
            self.beyond_domain_max_abs = max(self.beyond_domain_max_abs, float(gap.max()))


def measure(name: str, stride: int, fastmath: bool = False, fma: bool = False) -> Stats:
    """Sweep function ``name`` of :data:`SPECS` (or ``pow<n>``) over every
    ``stride``-th float32 bit pattern (see module doc)."""
    if name.startswith("pow"):
        n = int(name[3:])
        spec, make = pow_spec(n), power(n)
    else:
        spec, make = SPECS[name], unary(OPS[name])
    run = expanded(make, fastmath, fma=fma)
    stats = Stats(name)
    for x in sweep(stride):
        with np.errstate(all="ignore"):
            ref = spec.ref(x.astype(np.float64))
        if fastmath:  # only finite, normal inputs with a finite result are promised
            keep = np.isfinite(x) & (np.abs(x) >= 2.0 ** -126) & np.isfinite(ref)
            x, ref = x[keep], ref[keep]
        y = run(x)
        with np.errstate(all="ignore"):
            np32 = spec.np32(x)
        stats.add(x, y, ref, np32, spec.domain)
    return stats
