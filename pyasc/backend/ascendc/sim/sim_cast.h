// ascend-sim: Cast(dst, src, RoundMode, count) with the dav-c220 rules.
//
// The legal (dst, src) pairs are CheckCastDatatype's list (dav_c220 vconv_impl.h); pairs
// outside it fail to compile. The legal modes per pair are the switch cases of each
// CastIntrinsicsImpl; an illegal mode is a runtime violation (RoundMode is a runtime value).
// CAST_NONE rounds like CAST_RINT where the conversion is lossy. Float-to-integer results
// saturate and NaN becomes 0 (not documented; chosen to match common hardware behaviour).
#pragma once

#include <vector>

#include "sim_vec.h"

namespace pyasc_sim {

// Bit i allows RoundMode i (NONE=0, RINT, FLOOR, CEIL, ROUND, TRUNC, ODD=6).
inline constexpr uint8_t kNone = 0x01, kRfcaz = 0x3E, kAllModes = 0x7F;

template <class D, class S>
constexpr uint8_t cast_modes() {
  using f16 = half;
  using bf16 = bfloat16_t;
  if constexpr (std::is_same_v<S, f16>) {
    if constexpr (std::is_same_v<D, float>) return kNone;
    else if constexpr (one_of<D, int32_t, int16_t>) return kRfcaz;
    else if constexpr (one_of<D, int8_t, uint8_t>) return kNone | kRfcaz;
    else return 0;
  } else if constexpr (std::is_same_v<S, float>) {
    if constexpr (std::is_same_v<D, f16>) return kAllModes;
    else if constexpr (one_of<D, float, int32_t, bf16, int64_t, int16_t>) return kRfcaz;
    else return 0;
  } else if constexpr (std::is_same_v<S, bf16>) {
    if constexpr (std::is_same_v<D, float>) return kNone;
    else if constexpr (std::is_same_v<D, int32_t>) return kRfcaz;
    else return 0;
  } else if constexpr (std::is_same_v<S, int32_t>) {
    if constexpr (std::is_same_v<D, float>) return kNone | kRfcaz;
    else if constexpr (one_of<D, int16_t, int64_t>) return kNone;
    else return 0;
  } else if constexpr (std::is_same_v<S, int16_t>) {
    if constexpr (std::is_same_v<D, f16>) return kNone | kRfcaz;
    else if constexpr (std::is_same_v<D, float>) return kNone;
    else return 0;
  } else if constexpr (one_of<S, int8_t, uint8_t>) {
    return std::is_same_v<D, f16> ? kNone : 0;
  } else if constexpr (std::is_same_v<S, int64_t>) {
    if constexpr (std::is_same_v<D, float>) return kRfcaz;
    else if constexpr (std::is_same_v<D, int32_t>) return kNone;
    else return 0;
  } else {
    return 0;
  }
}

inline const char* mode_name(RoundMode m) {
  constexpr const char* names[] = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL",
                                   "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
  const auto i = static_cast<unsigned>(m);
  return i < 7 ? names[i] : "invalid RoundMode";
}

template <class S>
inline long double widen(S v) {
  if constexpr (is_fp16<S>) return static_cast<float>(v);
  else return static_cast<long double>(v);
}

// One element: floats round to the target format, integers round to an integer under the
// mode and saturate; float->float with a mode rounds to an integral value (vconv_f322f32*).
template <class D, class S>
D cast_one(S v, RoundMode mode) {
  const long double x = widen(v);
  if constexpr (std::is_same_v<D, S>) {  // float -> float: rint/floor/ceil/round/trunc
    if (std::isnan(x) || std::isinf(x)) return v;
    return static_cast<D>(std::copysign(round_magnitude(std::fabs(x), mode, std::signbit(x)), x));
  } else if constexpr (std::is_same_v<D, half> || std::is_same_v<D, bfloat16_t>) {
    if constexpr (std::is_same_v<S, float>) {
      if (mode == RoundMode::CAST_NONE || mode == RoundMode::CAST_RINT) return D(v);  // fast RNE path
    }
    constexpr int exp = std::is_same_v<D, half> ? 5 : 8;
    return D::from_bits(static_cast<uint16_t>(round_bits<exp, 15 - exp>(x, mode)));
  } else if constexpr (std::is_same_v<D, float>) {
    if constexpr (is_fp16<S> || one_of<S, int8_t, uint8_t, int16_t>) return static_cast<float>(v);  // exact
    if constexpr (std::is_same_v<S, int32_t>) {
      if (mode == RoundMode::CAST_NONE || mode == RoundMode::CAST_RINT) return static_cast<float>(v);
    }
    return bits_f32(static_cast<uint32_t>(round_bits<8, 23>(x, mode)));
  } else {  // integer destination
    if (std::isnan(x)) return D(0);
    const long double r = std::copysign(round_magnitude(std::fabs(x), mode, std::signbit(x)), x);
    if (r <= static_cast<long double>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
    if (r >= static_cast<long double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(r);
  }
}

}  // namespace pyasc_sim

namespace AscendC {

template <typename T, typename U>
__aicore__ inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& round_mode,
                            const uint32_t count, SrcLoc loc = {}) {
  static_assert(!(std::is_same_v<T, half> && std::is_same_v<U, int32_t>),
                "Cast: int32_t -> half on dav-c220 is a dequantisation (vconv_deq) that ignores RoundMode "
                "and needs SetDeqScale; ascend-sim does not model it: cast int32_t -> float -> half");
  constexpr uint8_t modes = pyasc_sim::cast_modes<T, U>();
  static_assert(modes != 0 || (std::is_same_v<T, half> && std::is_same_v<U, int32_t>),
                "Cast: this (dst, src) element-type pair is not supported on dav-c220 (Ascend910B); "
                "see CheckCastDatatype in dav_c220/kernel_operator_vec_vconv_impl.h");
  const char* api = "Cast";
  const auto mode_bit = static_cast<unsigned>(round_mode);
  if (mode_bit > 6 || !(modes & (1u << mode_bit))) {
    pyasc_sim::fail(api, loc, pyasc_sim::fmt("%s from %s to %s is not supported on dav-c220",
                                             pyasc_sim::mode_name(round_mode), pyasc_sim::type_name<U>(),
                                             pyasc_sim::type_name<T>()));
  }
  uint8_t* d = pyasc_sim::ub_operand(dst.ref_, uint64_t{count} * sizeof(T), pyasc_sim::kBlock, api, "dst", loc);
  const uint8_t* s = pyasc_sim::ub_operand(src.ref_, uint64_t{count} * sizeof(U), pyasc_sim::kBlock, api, "src", loc);
  // Read everything first: dst may alias src when the types have equal size.
  std::vector<T> out(count);
  for (uint32_t i = 0; i < count; ++i) out[i] = pyasc_sim::cast_one<T, U>(pyasc_sim::load<U>(s + i * sizeof(U)), round_mode);
  if (count != 0) std::memcpy(d, out.data(), uint64_t{count} * sizeof(T));
  pyasc_sim::note_vec(pyasc_sim::Ctr::Cast_calls, count);
}

}  // namespace AscendC
