"""Scalar math for scalar kernels: C++ helpers emitted once per source file when used.

AscendC has no scalar ``exp``/``log``/``sqrt`` and device code must not call libm.
``expand-math`` turns ``f32``/``f16`` transcendentals into arithmetic before lowering;
what reaches scalar code here (``f64`` functions, ``sqrt``, rounding, ``pow``...) is
computed by helpers: below ``f64`` by the ``float`` ones of ``scalar_math_f32`` (no
``double`` in float code), for ``f64`` by these, in plain ``double`` arithmetic:

* ``exp``: ``x = k*ln2 + r`` (Cody-Waite), Taylor series of ``exp(r)`` to degree 13
  (|r| <= ln2/2: truncation below 1e-17), scaled by ``2^k`` built from the exponent bits;
* ``log``: ``x = m * 2^e`` from the bits, ``m`` in [sqrt(1/2), sqrt(2)),
  ``log(m) = 2 atanh((m-1)/(m+1))`` to degree 21;
* ``sqrt``: correctly rounded (as numpy's), by the digit-by-digit integer square root
  of the mantissa;
* ``tanh sigmoid erf`` (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7) from ``exp``;
  ``sin/cos/tan`` by quadrant reduction and Taylor series; ``floor/ceil/trunc/rint``
  through integer conversion; ``pow`` by repeated squaring for integral exponents, else
  ``exp(y * log x)``.
"""

from __future__ import annotations

from collections.abc import Callable

from pyasc.backend.ascendc import scalar_math_f32 as f32
from pyasc.backend.ascendc.tiles import ctype
from pyasc.backend.ascendc.unsupported import unsupported
from pyasc.ir.core import Operation
from pyasc.ir.ops import math as m
from pyasc.ir.types import ScalarType, element_type

_BITS = """\
// Double <-> bits, and x * 2^e for any e (two steps keep subnormal results exact).
__aicore__ inline int64_t PyascBitsD(double x) {
  union { double d; int64_t i; } u;
  u.d = x;
  return u.i;
}
__aicore__ inline double PyascFromBitsD(int64_t i) {
  union { double d; int64_t i; } u;
  u.i = i;
  return u.d;
}
__aicore__ inline double PyascLdexp(double x, int64_t e) {
  while (e > 1023) { x *= PyascFromBitsD(int64_t(2046) << 52); e -= 1023; }
  while (e < -1022) { x *= PyascFromBitsD(int64_t(1) << 52); e += 1022; }
  return x * PyascFromBitsD((e + 1023) << 52);
}
"""

_ROUNDING = """\
// Rounding without libm: |x| >= 2^52 is already integral (and NaN/inf pass through).
__aicore__ inline double PyascTrunc(double x) {
  if (!(x - x == 0) || x >= 4503599627370496.0 || x <= -4503599627370496.0) return x;
  const double t = static_cast<double>(static_cast<int64_t>(x));
  return t == 0 ? x * 0 : t;  // keeps the sign of -0.5 -> -0.0
}
__aicore__ inline double PyascFloor(double x) {
  const double t = PyascTrunc(x);
  return t > x ? t - 1 : t;
}
__aicore__ inline double PyascCeil(double x) {
  const double t = PyascTrunc(x);
  return t < x ? t + 1 : t;
}
__aicore__ inline double PyascRint(double x) {  // round half to even, like np.round
  const double f = PyascFloor(x), d = x - f;
  if (d > 0.5 || (d == 0.5 && PyascTrunc(f * 0.5) * 2 != f)) return f + 1 == 0 ? 0 * x : f + 1;
  return f == 0 ? 0 * x : f;
}
"""

_EXP_LOG = """\
__aicore__ inline double PyascExpD(double x) {
  if (x != x) return x;
  if (x > 709.782712893384) return PyascFromBitsD(int64_t(0x7ff) << 52);  // +inf
  if (x < -745.1332191019412) return 0.0;
  const double k = PyascRint(x * 1.4426950408889634074);
  const double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
  double p = 1.0 / 6227020800.0;  // 1/13!, then Horner down to 1
  const double inv[13] = {1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                          1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0,
                          1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0};
  for (int i = 0; i < 13; ++i) p = p * r + inv[i];
  return PyascLdexp(p, static_cast<int64_t>(k));
}
__aicore__ inline double PyascLogD(double x) {
  if (x != x || x < 0) return (x - x) / (x - x) + (x != x ? x : 0);  // NaN
  if (x == 0) return -PyascFromBitsD(int64_t(0x7ff) << 52);          // -inf
  if (x - x != 0) return x;                                           // +inf
  int64_t e = 0;
  if (x < PyascFromBitsD(int64_t(1) << 52)) { x *= 18014398509481984.0; e = -54; }  // subnormal
  const int64_t bits = PyascBitsD(x);
  e += ((bits >> 52) & 0x7ff) - 1023;
  double mant = PyascFromBitsD((bits & ((int64_t(1) << 52) - 1)) | (int64_t(1023) << 52));
  if (mant > 1.4142135623730951) { mant *= 0.5; e += 1; }
  const double s = (mant - 1) / (mant + 1), s2 = s * s;
  double t = 1.0 / 21;
  for (int n = 19; n >= 1; n -= 2) t = t * s2 + 1.0 / n;
  return 2 * s * t + e * 6.93147180369123816490e-01 + e * 1.90821492927058770002e-10;
}
__aicore__ inline double PyascSqrtD(double x) {
  if (x < 0) return (x - x) / (x - x);  // NaN
  if (!(x > 0) || x - x != 0) return x;  // 0, -0, NaN, +inf
  if (x < 2.2250738585072014e-308) {  // subnormal: scale by 2^54, unscale by 2^-27
    return PyascSqrtD(x * 18014398509481984.0) * 7.450580596923828125e-9;
  }
  // Correctly rounded, as IEEE sqrt (numpy): x = m * 2^e with e even and m < 2^54; the
  // digit-by-digit integer root q = floor(sqrt(m * 2^54)) has 54 bits, the last one the
  // rounding bit (never an exact half: q odd and q * q = m * 2^54 even cannot both hold).
  const int64_t bits = PyascBitsD(x);
  int64_t e = ((bits >> 52) & 0x7ff) - 1075;
  uint64_t m = (uint64_t(bits) & ((uint64_t(1) << 52) - 1)) | (uint64_t(1) << 52);
  if (e & 1) { m <<= 1; e -= 1; }
  uint64_t q = 0, r = 0;
  for (int p = 53; p >= 0; --p) {  // two bits of m * 2^54 per step, from the top
    r = (r << 2) | (p >= 27 ? (m >> (2 * p - 54)) & 3 : 0);
    const uint64_t t = (q << 2) | 1;
    q <<= 1;
    if (r >= t) { r -= t; q |= 1; }
  }
  return PyascLdexp(static_cast<double>((q >> 1) + (q & 1)), e / 2 - 26);
}
"""

_TANH = """\
__aicore__ inline double PyascTanh(double x) {
  if (x != x) return x;
  if (x > 20) return 1.0;
  if (x < -20) return -1.0;
  if (x < 1e-4 && x > -1e-4) return x - x * x * x / 3;
  return 1.0 - 2.0 / (PyascExpD(2 * x) + 1.0);
}
"""

_ERF = """\
__aicore__ inline double PyascErf(double x) {
  if (x != x) return x;
  const double a = x < 0 ? -x : x;
  const double t = 1.0 / (1.0 + 0.3275911 * a);
  const double p = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
                    + 0.254829592) * t;
  const double y = 1.0 - p * PyascExpD(-a * a);
  return x < 0 ? -y : y;
}
"""

_TRIG = """\
// sin/cos by reduction to [-pi/4, pi/4] (x = k*pi/2 + r) and Taylor series.
__aicore__ inline double PyascSinPoly(double r) {  // Taylor to r^17: error < 1e-19
  const double r2 = r * r;
  double s = 1.0 / 355687428096000.0;  // 1/17!
  s = 1.0 / 1307674368000.0 - r2 * s;
  s = 1.0 / 6227020800.0 - r2 * s;
  s = 1.0 / 39916800.0 - r2 * s;
  s = 1.0 / 362880.0 - r2 * s;
  s = 1.0 / 5040.0 - r2 * s;
  s = 1.0 / 120.0 - r2 * s;
  s = 1.0 / 6.0 - r2 * s;
  return r - r * r2 * s;
}
__aicore__ inline double PyascCosPoly(double r) {  // Taylor to r^16
  const double r2 = r * r;
  double c = 1.0 / 20922789888000.0;  // 1/16!
  c = 1.0 / 87178291200.0 - r2 * c;
  c = 1.0 / 479001600.0 - r2 * c;
  c = 1.0 / 3628800.0 - r2 * c;
  c = 1.0 / 40320.0 - r2 * c;
  c = 1.0 / 720.0 - r2 * c;
  c = 1.0 / 24.0 - r2 * c;
  c = 0.5 - r2 * c;
  return 1.0 - r2 * c;
}
__aicore__ inline double PyascSinCos(double x, bool cosine) {
  if (!(x - x == 0)) return (x - x) / (x - x);  // NaN for NaN and inf
  const double k = PyascRint(x * 0.63661977236758134308);
  // pi/2 in three parts with trailing zero bits (fdlibm): k * part is exact for |k| < 2^20
  const double r = ((x - k * 1.57079632673412561417) - k * 6.07710050630396597660e-11)
                   - k * 2.02226624879595063154e-21;
  int64_t q = static_cast<int64_t>(k) + (cosine ? 1 : 0);
  q = ((q % 4) + 4) % 4;
  const double v = (q % 2 == 0) ? PyascSinPoly(r) : PyascCosPoly(r);
  return q >= 2 ? -v : v;
}
"""

_POW = """\
// numpy power on floats: integral exponents by repeated squaring, else exp(y * log x).
__aicore__ inline double PyascPowF(double x, double y) {
  if (y == 0) return 1.0;
  if (y - y == 0 && PyascTrunc(y) == y && y < 1e9 && y > -1e9) {
    int64_t n = static_cast<int64_t>(y < 0 ? -y : y);
    double base = x, acc = 1.0;
    while (n > 0) {
      if (n & 1) acc *= base;
      base *= base;
      n >>= 1;
    }
    return y < 0 ? 1.0 / acc : acc;
  }
  if (x < 0) return (x - x) / (x - x) + 0 * y;  // NaN
  if (x == 0) return y > 0 ? 0.0 : 1.0 / x;
  return PyascExpD(y * PyascLogD(x));
}
"""

_POW_I = """\
// numpy power on integers: wraps like numpy; a negative exponent gives 0 except for +-1.
template <typename T, typename U>
__aicore__ inline T PyascPowI(T x, T y) {
  if (y < 0) return x == 1 ? T(1) : (x == -1 ? T(y % 2 == 0 ? 1 : -1) : T(0));
  U base = static_cast<U>(x), acc = 1;
  while (y > 0) {
    if (y & 1) acc *= base;
    base *= base;
    y >>= 1;
  }
  return static_cast<T>(acc);
}
"""

_LINES = """\
// A loop split across blocks: each block's chunk starts at a row that begins a 64-byte
// GM line of every array the loop writes (data caches write back whole lines).
__aicore__ inline bool PyascLineStart(int64_t bytes) { return bytes % 64 == 0; }
// max(grain, rows between two line starts when a row step is `bytes`: 64 / gcd(bytes, 64))
__aicore__ inline int64_t PyascLineGrain(int64_t grain, int64_t bytes) {
  int64_t g = 1;
  while (g < 64 && bytes % (2 * g) == 0) g *= 2;
  return 64 / g > grain ? 64 / g : grain;
}
// the first line-start iteration at or after k (first, first + grain, ...), within [0, trip]
__aicore__ inline int64_t PyascLineAlign(int64_t k, int64_t first, int64_t grain, int64_t trip) {
  if (k <= 0) return 0;
  if (k >= trip || first >= trip) return trip;
  if (k <= first) return first;
  const int64_t up = first + (k - first + grain - 1) / grain * grain;
  return up < trip ? up : trip;
}
"""

_TEXTS: dict[str, str] = {"bits": _BITS, "rounding": _ROUNDING, "explog": _EXP_LOG,
                          "tanh": _TANH, "erf": _ERF, "trig": _TRIG, "pow": _POW,
                          "pow_i": _POW_I, "lines": _LINES}
_ORDER = ("bits", "rounding", "explog", "tanh", "erf", "trig", "pow", "pow_i", "lines")
_DEPENDS = {"explog": ("bits", "rounding"), "tanh": ("explog",), "erf": ("explog",),
            "trig": ("rounding",), "pow": ("explog",), "rounding": (), "bits": (),
            "pow_i": (), "lines": ()}

_LN2, _LN10 = "0.69314718055994530942", "2.30258509299404568402"
# op class -> (C++ expression over x (a double), helper groups it needs).
UNARY: dict[type, tuple[str, tuple[str, ...]]] = {
    m.ExpOp: ("PyascExpD({x})", ("explog",)),
    m.Exp2Op: (f"PyascExpD({{x}} * {_LN2})", ("explog",)),
    m.Expm1Op: ("(({x}) < 1e-5 && ({x}) > -1e-5 ? ({x}) + 0.5 * ({x}) * ({x}) "
                ": PyascExpD({x}) - 1.0)", ("explog",)),
    m.LogOp: ("PyascLogD({x})", ("explog",)),
    m.Log2Op: (f"PyascLogD({{x}}) / {_LN2}", ("explog",)),
    m.Log10Op: (f"PyascLogD({{x}}) / {_LN10}", ("explog",)),
    m.Log1pOp: ("(({x}) < 1e-4 && ({x}) > -1e-4 ? ({x}) * (1.0 - ({x}) * (0.5 - ({x}) / 3.0)) "
                ": PyascLogD(1.0 + ({x})))", ("explog",)),
    m.SqrtOp: ("PyascSqrtD({x})", ("explog",)),
    m.RsqrtOp: ("(1.0 / PyascSqrtD({x}))", ("explog",)),
    m.TanhOp: ("PyascTanh({x})", ("tanh",)),
    m.SigmoidOp: ("(1.0 / (1.0 + PyascExpD(-({x}))))", ("explog",)),
    m.ErfOp: ("PyascErf({x})", ("erf",)),
    m.SinOp: ("PyascSinCos({x}, false)", ("trig",)),
    m.CosOp: ("PyascSinCos({x}, true)", ("trig",)),
    m.TanOp: ("(PyascSinCos({x}, false) / PyascSinCos({x}, true))", ("trig",)),
    m.FloorOp: ("PyascFloor({x})", ("rounding",)),
    m.CeilOp: ("PyascCeil({x})", ("rounding",)),
    m.TruncOp: ("PyascTrunc({x})", ("rounding",)),
    m.RoundOp: ("PyascRint({x})", ("rounding",)),
}


def helper_texts(used: set[str]) -> list[str]:
    """Definitions of the helper groups in ``used`` and their dependencies, in order."""
    need: set[str] = set()
    todo = list(used)
    depends = {**_DEPENDS, **f32.DEPENDS}
    while todo:
        name = todo.pop()
        if name not in need:
            need.add(name)
            todo.extend(depends.get(name, ()))
    texts = {**_TEXTS, **f32.TEXTS}
    return [texts[name] for name in (*_ORDER, *f32.ORDER) if name in need]


def _lit(t: ScalarType, v: int) -> str:
    """``v`` in a conditional with a ``t`` operand (half and bfloat16 need their type)."""
    return f"static_cast<{ctype(t)}>({v})" if t.is_float and t.itemsize <= 2 else str(v)


def _abs(t: ScalarType, src: ScalarType, x: str) -> str:
    if src.is_float:  # 0 - x turns -0.0 into +0.0, like np.abs
        neg = f"0 - {x}" if src.itemsize > 2 else f"static_cast<{ctype(src)}>(0 - {x})"
        return f"static_cast<{ctype(t)}>({x} <= 0 ? {neg} : {x})"  # half - int is float
    u = ctype(src) if src.is_unsigned else "u" + ctype(src)
    return f"static_cast<{ctype(t)}>({x} < 0 ? -{u}({x}) : {u}({x}))"


PURE: dict[type, Callable[[ScalarType, ScalarType, str], str]] = {
    m.AbsOp: _abs,
    m.SignOp: lambda t, s, x: (f"static_cast<{ctype(t)}>({x} > 0 ? {_lit(s, 1)} : "
                               f"({x} < 0 ? {_lit(s, -1)} : {x}))"),
    m.IsNanOp: lambda t, s, x: f"({x} != {x})",
    m.IsInfOp: lambda t, s, x: f"({x} == {x} && {x} - {x} != {x} - {x})",
    m.IsFiniteOp: lambda t, s, x: f"({x} - {x} == {x} - {x})",
}
"""``{op class: fn(result type, operand type, x)}``: math that is plain C++ arithmetic."""


def math_expr(op: Operation, args: list[str], helpers: set[str]) -> str:
    """The C++ expression of a scalar ``math`` op; adds the helper groups it calls."""
    t = element_type(op.result.type)
    cls = type(op)
    wide = t.name == "f64" or any(element_type(v.type).name == "f64" for v in op.operand_values)
    if cls in UNARY and not wide:  # float code never computes in double (soc.float64)
        template, needed = f32.UNARY_F[op.name.split(".")[-1]]
        helpers.update(needed)
        return f"static_cast<{ctype(t)}>({template.format(x=f'static_cast<float>({args[0]})')})"
    if cls in UNARY:
        template, needed = UNARY[cls]
        helpers.update(needed)
        return f"static_cast<{ctype(t)}>({template.format(x=f'static_cast<double>({args[0]})')})"
    if cls in PURE:
        return PURE[cls](t, element_type(op.operand_values[0].type), args[0])
    if cls is m.PowOp and t.is_float and not wide:
        helpers.add("pow_f")
        return (f"static_cast<{ctype(t)}>(PyascPowFF(static_cast<float>({args[0]}), "
                f"static_cast<float>({args[1]})))")
    helpers.add("pow" if t.is_float else "pow_i")
    if cls is m.PowOp and t.is_float:
        return (f"static_cast<{ctype(t)}>(PyascPowF(static_cast<double>({args[0]}), "
                f"static_cast<double>({args[1]})))")
    if cls is m.PowOp:
        u = ctype(t) if t.is_unsigned else "u" + ctype(t)
        return f"PyascPowI<{ctype(t)}, {u}>({args[0]}, {args[1]})"
    raise unsupported(f"'{op.name}' in scalar device code", op.loc)
