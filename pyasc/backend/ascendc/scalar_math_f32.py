"""Scalar math in ``float`` for scalar kernels: no ``double`` in float32 (or narrower) code.

No SoC documents float64 on the AI Core (``soc.py``), so the helpers that compute the
math ``expand-math`` leaves to scalar code (``sqrt``, rounding, ``tan``, ``pow`` with a
run-time exponent...) come in a ``float`` version for every non-``f64`` type (``f16``
and ``bf16`` go through ``float`` and round back once):

* ``floor/ceil/trunc/rint`` through ``int32`` conversion (``|x| >= 2^23`` is integral);
* ``sqrt``: correctly rounded (as numpy's) by the digit-by-digit integer root of the
  24-bit mantissa; ``rsqrt`` is ``1 / sqrt``;
* ``exp``: Cody-Waite with the ``float`` split of ln 2 (``expand-math``'s), Taylor to
  degree 8; ``log``: ``2 atanh((m-1)/(m+1))`` to degree 11; both within a few ulp;
* ``sin/cos/tan``: reduction by pi/2 in three ``float`` parts (exact for ``|k| < 2^12``),
  Taylor to degree 11;
* ``pow``: integral exponents by repeated squaring, else ``exp(y * log x)`` (relative
  error about ``|y log x|`` ulp: numpy's ``powf`` is within 1 ulp).
"""

from __future__ import annotations

import math

_BITS_F = """\
// float <-> bits, and x * 2^e for any e.
__aicore__ inline int32_t PyascBitsF(float x) {
  union { float f; int32_t i; } u;
  u.f = x;
  return u.i;
}
__aicore__ inline float PyascFromBitsF(int32_t i) {
  union { float f; int32_t i; } u;
  u.i = i;
  return u.f;
}
__aicore__ inline float PyascLdexpF(float x, int32_t e) {
  while (e > 127) { x *= PyascFromBitsF(254 << 23); e -= 127; }
  while (e < -126) { x *= PyascFromBitsF(1 << 23); e += 126; }
  return x * PyascFromBitsF((e + 127) << 23);
}
"""

_ROUNDING_F = """\
// Rounding in float: |x| >= 2^23 is already integral (and NaN/inf pass through).
__aicore__ inline float PyascTruncF(float x) {
  if (!(x - x == 0) || x >= 8388608.0f || x <= -8388608.0f) return x;
  const float t = static_cast<float>(static_cast<int32_t>(x));
  return t == 0 ? x * 0 : t;  // keeps the sign of -0.5 -> -0.0
}
__aicore__ inline float PyascFloorF(float x) {
  const float t = PyascTruncF(x);
  return t > x ? t - 1 : t;
}
__aicore__ inline float PyascCeilF(float x) {
  const float t = PyascTruncF(x);
  return t < x ? t + 1 : t;
}
__aicore__ inline float PyascRintF(float x) {  // round half to even, like np.round
  const float f = PyascFloorF(x), d = x - f;
  if (d > 0.5f || (d == 0.5f && PyascTruncF(f * 0.5f) * 2 != f)) return f + 1 == 0 ? 0 * x : f + 1;
  return f == 0 ? 0 * x : f;
}
"""

_SQRT_F = """\
// Correctly rounded float sqrt: x = m * 2^e with e odd and m < 2^25; the integer root
// q = floor(sqrt(m * 2^25)) has 25 bits, the last one the rounding bit (never an exact half).
__aicore__ inline float PyascSqrtF(float x) {
  if (x < 0) return (x - x) / (x - x);  // NaN
  if (!(x > 0) || x - x != 0) return x;  // 0, -0, NaN, +inf
  if (x < 1.17549435e-38f) return PyascSqrtF(x * 16777216.0f) * 2.44140625e-4f;  // subnormal
  const int32_t bits = PyascBitsF(x);
  int32_t e = ((bits >> 23) & 0xff) - 150;
  uint64_t m = (uint64_t(uint32_t(bits)) & 0x7fffff) | 0x800000;
  if (!(e & 1)) { m <<= 1; e -= 1; }
  const uint64_t n = m << 25;
  uint64_t q = 0, r = 0;
  for (int p = 24; p >= 0; --p) {  // two bits of n per step, from the top
    r = (r << 2) | ((n >> (2 * p)) & 3);
    const uint64_t t = (q << 2) | 1;
    q <<= 1;
    if (r >= t) { r -= t; q |= 1; }
  }
  return PyascLdexpF(static_cast<float>((q >> 1) + (q & 1)), (e - 25) / 2 + 1);
}
"""

_EXP_LOG_F = """\
__aicore__ inline float PyascExpF(float x) {
  if (x != x) return x;
  if (x > 88.72283935546875f) return PyascFromBitsF(0xff << 23);  // +inf
  if (x < -103.97208f) return 0.0f;
  const float k = PyascRintF(x * 1.44269502162933349609f);
  const float r = (x - k * 0.693145751953125f) - k * 1.428606765330187e-06f;
  float p = 1.0f / 40320.0f;  // 1/8!, then Horner down to 1
  const float inv[8] = {1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f,
                        1.0f / 6.0f, 0.5f, 1.0f, 1.0f};
  for (int i = 0; i < 8; ++i) p = p * r + inv[i];
  return PyascLdexpF(p, static_cast<int32_t>(k));
}
__aicore__ inline float PyascLogF(float x) {
  if (x != x || x < 0) return (x - x) / (x - x) + (x != x ? x : 0);  // NaN
  if (x == 0) return -PyascFromBitsF(0xff << 23);                     // -inf
  if (x - x != 0) return x;                                           // +inf
  int32_t e = 0;
  if (x < 1.17549435e-38f) { x *= 33554432.0f; e = -25; }             // subnormal
  const int32_t bits = PyascBitsF(x);
  e += ((bits >> 23) & 0xff) - 127;
  float mant = PyascFromBitsF((bits & 0x7fffff) | (127 << 23));
  if (mant > 1.41421353816986083984f) { mant *= 0.5f; e += 1; }
  const float s = (mant - 1) / (mant + 1), s2 = s * s;
  float t = 1.0f / 11;
  for (int n = 9; n >= 1; n -= 2) t = t * s2 + 1.0f / n;
  return 2 * s * t + e * 0.693145751953125f + e * 1.428606765330187e-06f;
}
"""

_TRIG_F = """\
// sin/cos by reduction to [-pi/4, pi/4] (x = k*pi/2 + r) and Taylor series to degree 11.
__aicore__ inline float PyascSinCosF(float x, bool cosine) {
  if (!(x - x == 0)) return (x - x) / (x - x);  // NaN for NaN and inf
  const float k = PyascRintF(x * 0.636619772367581343f);
  const float r = ((x - k * 1.5703125f) - k * 4.837512969970703125e-4f)
                  - k * 7.54978995489188216e-8f;
  int32_t q = static_cast<int32_t>(k) + (cosine ? 1 : 0);
  q = ((q % 4) + 4) % 4;
  const float r2 = r * r;
  float v;
  if (q % 2 == 0) {
    float s = 1.0f / 39916800.0f;  // 1/11!
    s = 1.0f / 362880.0f - r2 * s;
    s = 1.0f / 5040.0f - r2 * s;
    s = 1.0f / 120.0f - r2 * s;
    s = 1.0f / 6.0f - r2 * s;
    v = r - r * r2 * s;
  } else {
    float c = 1.0f / 3628800.0f;  // 1/10!
    c = 1.0f / 40320.0f - r2 * c;
    c = 1.0f / 720.0f - r2 * c;
    c = 1.0f / 24.0f - r2 * c;
    c = 0.5f - r2 * c;
    v = 1.0f - r2 * c;
  }
  return q >= 2 ? -v : v;
}
"""

_POW_F = """\
// numpy power on float with C99 powf's special values: integral exponents by repeated
// squaring of |x|, else exp(y * log|x|); the sign of an odd integral power of x < 0.
__aicore__ inline float PyascPowFF(float x, float y) {
  if (y == 0 || x == 1) return 1.0f;
  if (x != x || y != y) return x + y;  // NaN
  const float ax = x < 0 ? -x : x;  // -0 stays -0: only compared, never divided by
  const float ay = y < 0 ? -y : y;
  if (y - y != 0) {  // y = +-inf
    if (ax == 1) return 1.0f;
    return (ax > 1) == (y > 0) ? ay : 0.0f;
  }
  const bool integral = PyascTruncF(y) == y;
  const bool odd = integral && ay < 16777216.0f && (static_cast<int64_t>(ay) & 1) != 0;
  const bool negative = x < 0 || (x == 0 && 1.0f / x < 0);  // -0 included
  float mag;
  if (ax - ax != 0) {  // x = +-inf
    mag = y > 0 ? ax : 0.0f;
  } else if (ax == 0) {
    mag = y > 0 ? 0.0f : PyascFromBitsF(0xff << 23);  // +0 or +inf
  } else if (x < 0 && !integral) {
    return (x - x) / (x - x);  // NaN: a negative finite base, a non-integral power
  } else if (integral && ay < 1e9f) {
    int64_t n = static_cast<int64_t>(ay);
    float base = ax;
    mag = 1.0f;
    while (n > 0) {
      if (n & 1) mag *= base;
      base *= base;
      n >>= 1;
    }
    if (y < 0) mag = 1.0f / mag;
  } else {
    mag = PyascExpF(y * PyascLogF(ax));
  }
  return negative && odd ? -mag : mag;
}
"""

_ERF_F = """\
__aicore__ inline float PyascErfF(float x) {  // Abramowitz & Stegun 7.1.26
  if (x != x) return x;
  const float a = x < 0 ? -x : x;
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float p = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t
                   + 0.254829592f) * t;
  const float y = 1.0f - p * PyascExpF(-a * a);
  return x < 0 ? -y : y;
}
"""

TEXTS: dict[str, str] = {"bits_f": _BITS_F, "rounding_f": _ROUNDING_F, "sqrt_f": _SQRT_F,
                         "explog_f": _EXP_LOG_F, "erf_f": _ERF_F, "trig_f": _TRIG_F,
                         "pow_f": _POW_F}
ORDER = ("bits_f", "rounding_f", "sqrt_f", "explog_f", "erf_f", "trig_f", "pow_f")
DEPENDS: dict[str, tuple[str, ...]] = {
    "bits_f": (), "rounding_f": (), "sqrt_f": ("bits_f",), "explog_f": ("bits_f", "rounding_f"),
    "erf_f": ("explog_f",), "trig_f": ("rounding_f",),
    "pow_f": ("bits_f", "rounding_f", "explog_f")}

_LN2 = f"{math.log(2):.9g}f"
_LN10 = f"{math.log(10):.9g}f"
UNARY_F: dict[str, tuple[str, tuple[str, ...]]] = {
    "exp": ("PyascExpF({x})", ("explog_f",)),
    "exp2": (f"PyascExpF({{x}} * {_LN2})", ("explog_f",)),
    "expm1": ("(({x}) < 1e-4f && ({x}) > -1e-4f ? ({x}) + 0.5f * ({x}) * ({x}) "
              ": PyascExpF({x}) - 1.0f)", ("explog_f",)),
    "log": ("PyascLogF({x})", ("explog_f",)),
    "log2": (f"PyascLogF({{x}}) / {_LN2}", ("explog_f",)),
    "log10": (f"PyascLogF({{x}}) / {_LN10}", ("explog_f",)),
    "log1p": ("(({x}) < 1e-3f && ({x}) > -1e-3f ? ({x}) * (1.0f - ({x}) * (0.5f - ({x}) / 3.0f))"
              " : PyascLogF(1.0f + ({x})))", ("explog_f",)),
    "sqrt": ("PyascSqrtF({x})", ("sqrt_f",)),
    "rsqrt": ("(1.0f / PyascSqrtF({x}))", ("sqrt_f",)),
    "tanh": ("(({x}) > 9.0f ? 1.0f : ({x}) < -9.0f ? -1.0f : ({x}) < 1e-3f && ({x}) > -1e-3f ?"
             " ({x}) - ({x}) * ({x}) * ({x}) / 3 : 1.0f - 2.0f / (PyascExpF(2 * ({x})) + 1.0f))",
             ("explog_f",)),
    "sigmoid": ("(1.0f / (1.0f + PyascExpF(-({x}))))", ("explog_f",)),
    "erf": ("PyascErfF({x})", ("erf_f",)),
    "sin": ("PyascSinCosF({x}, false)", ("trig_f",)),
    "cos": ("PyascSinCosF({x}, true)", ("trig_f",)),
    "tan": ("(PyascSinCosF({x}, false) / PyascSinCosF({x}, true))", ("trig_f",)),
    "floor": ("PyascFloorF({x})", ("rounding_f",)),
    "ceil": ("PyascCeilF({x})", ("rounding_f",)),
    "trunc": ("PyascTruncF({x})", ("rounding_f",)),
    "round": ("PyascRintF({x})", ("rounding_f",)),
}
"""``{math op name: (C++ over x (a float), helper groups)}``."""

__all__ = ["DEPENDS", "ORDER", "TEXTS", "UNARY_F"]
