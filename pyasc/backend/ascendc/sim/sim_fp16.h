// ascend-sim: `half` (IEEE binary16) and `bfloat16_t` as real 16-bit types, plus the
// directed-rounding conversions Cast needs.
//
// Arithmetic on these types is done the way the vector unit does it in the model: widen to
// float, compute, round the result back to 16 bits (round-to-nearest-even) per operation.
#pragma once

#include <cmath>

#include "sim_base.h"

namespace pyasc_sim {

using AscendC::RoundMode;

inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// float -> binary16, round to nearest even, denormals, inf and NaN (F. Giesen's method; it
// relies on the FPU's default round-to-nearest for the denormal case).
inline uint16_t f32_to_f16_rne(float value) {
  uint32_t f = f32_bits(value);
  const uint32_t sign = f & 0x80000000u;
  f ^= sign;
  uint16_t out;
  if (f >= (127u + 16u) << 23) {  // >= 65536, inf or NaN
    out = f > 0x7f800000u ? 0x7e00 : 0x7c00;
  } else if (f < (113u << 23)) {  // result is a binary16 denormal or zero
    const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    out = static_cast<uint16_t>(f32_bits(bits_f32(f) + bits_f32(magic)) - magic);
  } else {
    const uint32_t mant_odd = (f >> 13) & 1u;
    f += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mant_odd;
    out = static_cast<uint16_t>(f >> 13);
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {  // zero or denormal: mant * 2^-24 is exact in float
    const float mag = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -mag : mag;
  }
  if (exp == 31) return bits_f32(sign | 0x7f800000u | (mant << 13));
  return bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t f32_to_bf16_rne(float value) {
  uint32_t f = f32_bits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((f >> 16) | 0x40u);
  f += 0x7fffu + ((f >> 16) & 1u);
  return static_cast<uint16_t>(f >> 16);
}

inline float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

// Round a non-negative integral-or-not magnitude `s` to an integer under `mode`; `neg` is the
// sign of the original value (FLOOR/CEIL depend on it). NONE means RINT (CAST_NONE rounds
// like RINT when the conversion loses precision).
inline long double round_magnitude(long double s, RoundMode mode, bool neg) {
  const long double fl = std::floor(s), frac = s - fl;
  const bool odd = std::fmod(fl, 2.0L) != 0;
  switch (mode) {
    case RoundMode::CAST_NONE:
    case RoundMode::CAST_RINT:
      return frac > 0.5L || (frac == 0.5L && odd) ? fl + 1 : fl;
    case RoundMode::CAST_ROUND: return frac >= 0.5L ? fl + 1 : fl;
    case RoundMode::CAST_TRUNC: return fl;
    case RoundMode::CAST_FLOOR: return neg && frac > 0 ? fl + 1 : fl;
    case RoundMode::CAST_CEIL: return !neg && frac > 0 ? fl + 1 : fl;
    case RoundMode::CAST_ODD: return frac == 0 || odd ? fl : fl + 1;
  }
  return fl;
}

// Round `v` to the binary format with EXP exponent and MAN mantissa bits under `mode`;
// returns the bit pattern (sign at bit EXP+MAN). Exact: `v` is scaled by powers of two only.
template <int EXP, int MAN>
uint64_t round_bits(long double v, RoundMode mode) {
  constexpr int bias = (1 << (EXP - 1)) - 1;
  constexpr uint64_t sign_bit = uint64_t{1} << (EXP + MAN), inf = uint64_t((1 << EXP) - 1) << MAN;
  const bool neg = std::signbit(v);
  const uint64_t sgn = neg ? sign_bit : 0;
  if (std::isnan(v)) return sgn | inf | (uint64_t{1} << (MAN - 1));
  const long double a = std::fabs(v);
  if (std::isinf(a)) return sgn | inf;
  if (a == 0) return sgn;
  int e = 0;
  std::frexp(a, &e);
  const int expo = e - 1 < 1 - bias ? 1 - bias : e - 1;     // denormals share emin
  const long double quantum = std::ldexp(1.0L, expo - MAN);
  const long double r = round_magnitude(a / quantum, mode, neg) * quantum;
  const long double max_finite = std::ldexp(2.0L - std::ldexp(1.0L, -MAN), bias);
  if (r > max_finite) {  // overflow: saturate in the directions that round toward zero
    const bool to_inf = mode == RoundMode::CAST_NONE || mode == RoundMode::CAST_RINT ||
                        mode == RoundMode::CAST_ROUND || (mode == RoundMode::CAST_FLOOR && neg) ||
                        (mode == RoundMode::CAST_CEIL && !neg);
    return sgn | (to_inf ? inf : inf - 1);
  }
  if (r < std::ldexp(1.0L, 1 - bias)) {  // denormal (or zero after rounding)
    return sgn | static_cast<uint64_t>(r / std::ldexp(1.0L, 1 - bias - MAN));
  }
  int e2 = 0;
  std::frexp(r, &e2);
  const uint64_t mant = static_cast<uint64_t>(r / std::ldexp(1.0L, e2 - 1 - MAN)) - (uint64_t{1} << MAN);
  return sgn | (static_cast<uint64_t>(e2 - 1 + bias) << MAN) | mant;
}

// A 16-bit float with EXP exponent bits and MAN mantissa bits, stored as its bit pattern.
template <int EXP, int MAN>
struct Fp16 {
  static_assert(EXP + MAN == 15, "16-bit formats only");
  uint16_t bits;

  Fp16() = default;  // trivial, like the builtin type: UB and GM hold raw bits
  template <class U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>
  Fp16(U v) : bits(from(v)) {}  // NOLINT: implicit like bisheng's half
  operator float() const {      // NOLINT
    if constexpr (EXP == 5) return f16_to_f32(bits);
    else return bf16_to_f32(bits);
  }
  static Fp16 from_bits(uint16_t b) { Fp16 h; h.bits = b; return h; }
  Fp16 operator-() const { return from_bits(static_cast<uint16_t>(bits ^ 0x8000u)); }
  Fp16 operator+() const { return *this; }

 private:
  template <class U>
  static uint16_t from(U v) {
    if constexpr (std::is_same_v<U, float>) {
      if constexpr (EXP == 5) return f32_to_f16_rne(v);
      else return f32_to_bf16_rne(v);
    } else {  // double and integers: one exact rounding, no double rounding via float
      return static_cast<uint16_t>(round_bits<EXP, MAN>(static_cast<long double>(v),
                                                        RoundMode::CAST_RINT));
    }
  }
};

template <class T>
inline constexpr bool is_fp16 = false;
template <int E, int M>
inline constexpr bool is_fp16<Fp16<E, M>> = true;

template <class U>
using if_arith = std::enable_if_t<std::is_arithmetic_v<U>, int>;

// (fp16 op fp16) -> fp16 rounded once; mixed with a builtin type -> the builtin arithmetic.
#define PYASC_SIM_FP16_BINOP(op)                                                      \
  template <int E, int M>                                                             \
  inline Fp16<E, M> operator op(Fp16<E, M> a, Fp16<E, M> b) {                         \
    return Fp16<E, M>(static_cast<float>(a) op static_cast<float>(b));                \
  }                                                                                   \
  template <int E, int M, class U, if_arith<U> = 0>                                   \
  inline auto operator op(Fp16<E, M> a, U b) { return static_cast<float>(a) op b; }   \
  template <int E, int M, class U, if_arith<U> = 0>                                   \
  inline auto operator op(U a, Fp16<E, M> b) { return a op static_cast<float>(b); }   \
  template <int E, int M>                                                             \
  inline Fp16<E, M>& operator op##=(Fp16<E, M>& a, Fp16<E, M> b) { return a = a op b; } \
  template <int E, int M, class U, if_arith<U> = 0>                                   \
  inline Fp16<E, M>& operator op##=(Fp16<E, M>& a, U b) {                             \
    return a = Fp16<E, M>(static_cast<float>(a) op b);                                \
  }
PYASC_SIM_FP16_BINOP(+)
PYASC_SIM_FP16_BINOP(-)
PYASC_SIM_FP16_BINOP(*)
PYASC_SIM_FP16_BINOP(/)
#undef PYASC_SIM_FP16_BINOP

#define PYASC_SIM_FP16_CMP(op)                                                               \
  template <int E, int M>                                                                    \
  inline bool operator op(Fp16<E, M> a, Fp16<E, M> b) {                                      \
    return static_cast<float>(a) op static_cast<float>(b);                                   \
  }                                                                                          \
  template <int E, int M, class U, if_arith<U> = 0>                                          \
  inline bool operator op(Fp16<E, M> a, U b) { return static_cast<float>(a) op b; }          \
  template <int E, int M, class U, if_arith<U> = 0>                                          \
  inline bool operator op(U a, Fp16<E, M> b) { return a op static_cast<float>(b); }
PYASC_SIM_FP16_CMP(==)
PYASC_SIM_FP16_CMP(!=)
PYASC_SIM_FP16_CMP(<)
PYASC_SIM_FP16_CMP(<=)
PYASC_SIM_FP16_CMP(>)
PYASC_SIM_FP16_CMP(>=)
#undef PYASC_SIM_FP16_CMP

}  // namespace pyasc_sim

using half = pyasc_sim::Fp16<5, 10>;
using bfloat16_t = pyasc_sim::Fp16<8, 7>;

namespace pyasc_sim {

// Spelling of an element type in messages and in the launcher's signature strings.
template <class T>
constexpr const char* type_name() {
  if constexpr (std::is_same_v<T, half>) return "half";
  else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16_t";
  else if constexpr (std::is_same_v<T, float>) return "float";
  else if constexpr (std::is_same_v<T, double>) return "double";
  else if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    constexpr const char* names[] = {"int8_t", "int16_t", "?", "int32_t", "?", "?", "?", "int64_t"};
    return names[sizeof(T) - 1];
  } else if constexpr (std::is_integral_v<T>) {
    constexpr const char* names[] = {"uint8_t", "uint16_t", "?", "uint32_t", "?", "?", "?", "uint64_t"};
    return names[sizeof(T) - 1];
  } else {
    return "?";
  }
}

// Arithmetic type of one element inside the vector unit: fp16 formats widen to float.
template <class T>
using calc_t = std::conditional_t<is_fp16<T>, float, T>;

}  // namespace pyasc_sim
