"""C++ expressions for scalar ``arith`` ops with numpy semantics (kernel scalar code).

Used by the vector kernels (scalar operands computed in the kernel) and by the scalar
fallback.  Integer arithmetic of the fixed-width types wraps like numpy (computed in an unsigned
type at least as wide as ``int``: signed overflow is undefined in C++, and narrower
operands would be promoted to ``int``); ``index`` arithmetic is plain
``int64_t``.  Operations C++ does not express directly (numpy ``floor_divide`` and
``remainder``, NaN-propagating ``maximum``/``minimum``, numpy shifts) call small inline
helpers from :data:`HELPERS`, emitted once per source file when used.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from pyasc.backend.ascendc.tiles import CTYPES
from pyasc.ir.core import Operation
from pyasc.ir.ops import arith
from pyasc.ir.types import ScalarType, element_type

Expr = str


def literal(value: object, t: ScalarType) -> Expr:
    """A C++ literal of type ``t``."""
    if t.is_bool:
        return "true" if value else "false"
    if t.is_float:
        return _float_literal(float(value), t)  # type: ignore[arg-type]
    v = int(value)  # type: ignore[call-overload]
    if t.is_index:
        return str(v) if -2**31 < v < 2**31 else f"int64_t({v}LL)"
    suffix = "u" if t.is_unsigned else ""
    if t.bitwidth == 64:
        suffix += "LL"
    if v == -2**63:
        return f"{CTYPES[t.name]}(-9223372036854775807LL - 1)"
    return f"{CTYPES[t.name]}({v}{suffix})"


def _float_literal(x: float, t: ScalarType) -> Expr:
    if math.isnan(x):
        body = "__builtin_nanf(\"\")" if t.name != "f64" else "__builtin_nan(\"\")"
    elif math.isinf(x):
        inf = "__builtin_inff()" if t.name != "f64" else "__builtin_inf()"
        body = inf if x > 0 else "-" + inf
    else:
        text = repr(x)
        if "e" not in text and "." not in text:
            text += ".0"
        body = text if t.name == "f64" else text + "f"
    if t.name in ("f16", "bf16"):
        return f"{CTYPES[t.name]}({body})"
    return body


def _wrapping(t: ScalarType) -> bool:
    return t.is_int and not t.is_index


def _wide(t: ScalarType) -> str:
    """The unsigned type fixed-width integer arithmetic is computed in: C++ promotes
    (u)int8/(u)int16 operands to ``int``, where ``-uint8_t(8)`` is -8 (numpy: 248) and
    ``uint16_t * uint16_t`` can overflow (undefined); unsigned arithmetic at least as wide
    as ``int`` wraps, and converting back to ``t`` keeps the low bits, as numpy does."""
    return "uint64_t" if t.bitwidth == 64 else "uint32_t"


def _arith(sym: str) -> Callable[[ScalarType, Expr, Expr], Expr]:
    def fn(t: ScalarType, a: Expr, b: Expr) -> Expr:
        if _wrapping(t):
            u = _wide(t)
            return f"{CTYPES[t.name]}({u}({a}) {sym} {u}({b}))"
        if t.is_bool:
            return f"bool({a} {sym} {b})"
        return f"({a} {sym} {b})"
    return fn


def _helper(name: str) -> Callable[[ScalarType, Expr, Expr], Expr]:
    # Float variants carry an "F" suffix: the helpers avoid <type_traits> in device code.
    def fn(t: ScalarType, a: Expr, b: Expr) -> Expr:
        suffix = "F" if t.is_float else ""
        return f"{name}{suffix}<{CTYPES[t.name]}>({a}, {b})"
    return fn


def _maxmin(is_max: bool) -> Callable[[ScalarType, Expr, Expr], Expr]:
    def fn(t: ScalarType, a: Expr, b: Expr) -> Expr:
        if t.is_float:
            first = "true" if arith.first_wins_ties(t) else "false"
            name = "PyascFMax" if is_max else "PyascFMin"
            return f"{name}<{first}, {CTYPES[t.name]}>({a}, {b})"
        return f"({a} < {b} ? {b} : {a})" if is_max else f"({b} < {a} ? {b} : {a})"
    return fn


def _bitwise(sym: str) -> Callable[[ScalarType, Expr, Expr], Expr]:
    def fn(t: ScalarType, a: Expr, b: Expr) -> Expr:
        if t.is_bool:
            return f"bool({a} {sym} {b})"
        return f"{CTYPES[t.name]}({a} {sym} {b})"
    return fn


BINARY: dict[type[Operation], Callable[[ScalarType, Expr, Expr], Expr]] = {
    arith.AddOp: _arith("+"),
    arith.SubOp: _arith("-"),
    arith.MulOp: _arith("*"),
    arith.DivOp: lambda t, a, b: f"({a} / {b})",
    arith.FloorDivOp: _helper("PyascFloorDiv"),
    arith.RemOp: _helper("PyascRem"),
    arith.MaxOp: _maxmin(True),
    arith.MinOp: _maxmin(False),
    arith.AndOp: _bitwise("&"),
    arith.OrOp: _bitwise("|"),
    arith.XorOp: _bitwise("^"),
    arith.ShlOp: _helper("PyascShl"),
    arith.ShrOp: _helper("PyascShr"),
}

CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def neg(t: ScalarType, a: Expr) -> Expr:
    if _wrapping(t):
        return f"{CTYPES[t.name]}(-{_wide(t)}({a}))"
    return f"(-({a}))"  # `-` before a negative literal must not read as `--`


def cast(src: ScalarType, dst: ScalarType, a: Expr) -> Expr:
    """numpy ``astype`` of one value (float -> int truncates; any -> bool is ``!= 0``)."""
    if src == dst:
        return a
    if dst.is_bool:
        return f"({a} != 0)"
    if src.name in ("f16", "bf16") and dst.is_int:
        a = f"float({a})"
    return f"static_cast<{CTYPES[dst.name]}>({a})"


def scalar_expr(op: Operation, args: list[Expr]) -> Expr | None:
    """The C++ expression of a scalar ``arith`` op, or ``None`` if it is not one."""
    cls = type(op)
    if cls in BINARY:
        return BINARY[cls](element_type(op.operand_values[0].type), *args)
    if cls is arith.NegOp:
        return neg(element_type(op.result.type), args[0])
    if cls is arith.NotOp:
        t = element_type(op.result.type)
        return f"(!{args[0]})" if t.is_bool else f"{CTYPES[t.name]}(~{args[0]})"
    if cls is arith.CmpOp:
        return f"({args[0]} {CMP[op.attributes['predicate']]} {args[1]})"
    if cls is arith.SelectOp:
        return f"({args[0]} ? {args[1]} : {args[2]})"
    if cls is arith.BitcastOp:
        src, dst = element_type(op.operand.type), element_type(op.result.type)
        return f"PyascBitcast<{CTYPES[dst.name]}, {CTYPES[src.name]}>({args[0]})"
    if cls is arith.CastOp:
        return cast(element_type(op.operand.type), element_type(op.result.type), args[0])
    if cls is arith.ConstantOp:
        return literal(op.attributes["value"], element_type(op.result.type))
    return None


HELPERS: dict[str, str] = {
    "PyascFloorDiv": """\
// numpy floor_divide on integers: rounds toward -inf; x // 0 is 0.
template <typename T>
__aicore__ inline T PyascFloorDiv(T a, T b) {
  if (b == 0) return 0;
  const T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
""",
    "PyascRem": """\
// numpy remainder on integers: the result takes the divisor's sign; x % 0 is 0.
template <typename T>
__aicore__ inline T PyascRem(T a, T b) {
  if (b == 0) return 0;
  const T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
""",
    "PyascFloorDivF": """\
// numpy floor_divide on floats, computed as numpy does (npy_divmod in T's precision, half
// in float), for quotients of any size: m = fmod(a, b) (exact); d = (a - m) / b, one less
// when m's sign differs from b's; then the floor of d, snapped up when d lies more than
// 0.5 above it; a zero quotient keeps the sign of a / b; x // 0 is a / b.
template <typename T>
__aicore__ inline T PyascFloorDivF(T a, T b) {
  using C = typename PyascDivT<T>::type;
  const C x = static_cast<C>(a), y = static_cast<C>(b);
  if (y == 0) return static_cast<T>(x / y);
  const C m = PyascFMod(x, y);
  C d = (x - m) / y;
  if (m != 0 && (y < 0) != (m < 0)) d -= static_cast<C>(1);  // NaN m: as numpy, too
  if (d == 0) return static_cast<T>(x / y * static_cast<C>(0));  // |x / y| < 1: finite
  C f = d;  // the floor: |d| >= 2^52 (and inf, NaN) is integral already
  if (d - d == 0 && d < static_cast<C>(4503599627370496.0f) &&
      d > -static_cast<C>(4503599627370496.0f)) {
    f = static_cast<C>(static_cast<int64_t>(d));
    if (f > d) f -= static_cast<C>(1);
  }
  if (d - f > static_cast<C>(0.5)) f += static_cast<C>(1);
  return static_cast<T>(f);
}
""",
    "PyascFModD": """\
// C's fmod on doubles, exact (no libm on the device): the long division of the integer
// mantissas (musl's fmod).  The result has x's sign and |result| < |y|; fmod(x, +-inf) is
// x; an infinite x, a NaN or a zero y give NaN.
__aicore__ inline double PyascFModD(double x, double y) {
  union { double d; uint64_t i; } ux = {x}, uy = {y};
  int64_t ex = static_cast<int64_t>(ux.i >> 52 & 0x7ff);
  int64_t ey = static_cast<int64_t>(uy.i >> 52 & 0x7ff);
  const uint64_t sx = ux.i >> 63;
  if (uy.i << 1 == 0 || y != y || ex == 0x7ff) return (x * y) / (x * y);
  if (ux.i << 1 <= uy.i << 1) return ux.i << 1 == uy.i << 1 ? x * 0.0 : x;
  uint64_t mx = ux.i, my = uy.i;
  if (ex == 0) {  // subnormal: normalize the mantissa
    for (uint64_t i = mx << 12; i >> 63 == 0; ex--, i <<= 1) {}
    mx <<= -ex + 1;
  } else {
    mx = (mx & (~0ULL >> 12)) | 1ULL << 52;
  }
  if (ey == 0) {
    for (uint64_t i = my << 12; i >> 63 == 0; ey--, i <<= 1) {}
    my <<= -ey + 1;
  } else {
    my = (my & (~0ULL >> 12)) | 1ULL << 52;
  }
  for (; ex > ey; ex--) {  // one quotient bit per step: mx = (2 * mx) mod my
    const uint64_t i = mx - my;
    if (i >> 63 == 0) {
      if (i == 0) return x * 0.0;
      mx = i;
    }
    mx <<= 1;
  }
  const uint64_t i = mx - my;
  if (i >> 63 == 0) {
    if (i == 0) return x * 0.0;
    mx = i;
  }
  for (; mx >> 52 == 0; mx <<= 1, ex--) {}
  if (ex > 0) {
    mx = (mx - (1ULL << 52)) | static_cast<uint64_t>(ex) << 52;
  } else {
    mx >>= -ex + 1;
  }
  ux.i = mx | sx << 63;
  return ux.d;
}
__aicore__ inline double PyascFMod(double x, double y) { return PyascFModD(x, y); }
""",
    "PyascFModF": """\
// C's fmod on floats, exact: PyascFModD's long division on 32-bit words (musl's fmodf).
__aicore__ inline float PyascFModF(float x, float y) {
  union { float f; uint32_t i; } ux = {x}, uy = {y};
  int32_t ex = static_cast<int32_t>(ux.i >> 23 & 0xff);
  int32_t ey = static_cast<int32_t>(uy.i >> 23 & 0xff);
  const uint32_t sx = ux.i >> 31;
  if (uy.i << 1 == 0 || y != y || ex == 0xff) return (x * y) / (x * y);
  if (ux.i << 1 <= uy.i << 1) return ux.i << 1 == uy.i << 1 ? x * 0.0f : x;
  uint32_t mx = ux.i, my = uy.i;
  if (ex == 0) {  // subnormal: normalize the mantissa
    for (uint32_t i = mx << 9; i >> 31 == 0; ex--, i <<= 1) {}
    mx <<= -ex + 1;
  } else {
    mx = (mx & (~0U >> 9)) | 1U << 23;
  }
  if (ey == 0) {
    for (uint32_t i = my << 9; i >> 31 == 0; ey--, i <<= 1) {}
    my <<= -ey + 1;
  } else {
    my = (my & (~0U >> 9)) | 1U << 23;
  }
  for (; ex > ey; ex--) {  // one quotient bit per step: mx = (2 * mx) mod my
    const uint32_t i = mx - my;
    if (i >> 31 == 0) {
      if (i == 0) return x * 0.0f;
      mx = i;
    }
    mx <<= 1;
  }
  const uint32_t i = mx - my;
  if (i >> 31 == 0) {
    if (i == 0) return x * 0.0f;
    mx = i;
  }
  for (; mx >> 23 == 0; mx <<= 1, ex--) {}
  if (ex > 0) {
    mx = (mx - (1U << 23)) | static_cast<uint32_t>(ex) << 23;
  } else {
    mx >>= -ex + 1;
  }
  ux.i = mx | sx << 31;
  return ux.f;
}
__aicore__ inline float PyascFMod(float x, float y) { return PyascFModF(x, y); }
""",
    "PyascDivT": """\
// The type float division and remainder compute in: float for half, bfloat16 and float
// (numpy's half loops compute in float); a float64 T keeps its own type.
template <typename T> struct PyascDivT { using type = decltype(T() + 0.0f); };
""",
    "PyascRemF": """\
// numpy remainder on floats (npy_divmod): m = fmod(a, b), exact; a non-zero m whose
// sign differs from b's becomes m + b, rounded once (for half and bfloat16 in float and
// again to T: innocuous, float has more than 2p + 2 bits); a zero m is a zero of b's
// sign (0.0 % -0.5 is -0.0).  NaN stays NaN.
template <typename T>
__aicore__ inline T PyascRemF(T a, T b) {
  using C = typename PyascDivT<T>::type;
  const C x = static_cast<C>(a), y = static_cast<C>(b);
  C m = PyascFMod(x, y);
  if (m == 0) return y < 0 ? -static_cast<T>(0) : static_cast<T>(0);
  if ((y < 0) != (m < 0) && m == m) m += y;
  return static_cast<T>(m);
}
""",
    "PyascFMax": """\
// numpy maximum/minimum: NaN propagates; between equal values (-0.0 and 0.0) the first
// operand wins for half (numpy's generic loop), the second for float and float64 (its
// SIMD loops): First says which.
template <bool First, typename T>
__aicore__ inline T PyascFMax(T a, T b) {
  return a != a ? a : (b != b ? b : (First ? (a < b ? b : a) : (b < a ? a : b)));
}
template <bool First, typename T>
__aicore__ inline T PyascFMin(T a, T b) {
  return a != a ? a : (b != b ? b : (First ? (b < a ? b : a) : (a < b ? a : b)));
}
""",
    "PyascBitcast": """\
// numpy view between same-width types: reinterpret the bits.
template <typename To, typename From>
__aicore__ inline To PyascBitcast(From x) {
  union { From from; To to; } u;
  u.from = x;
  return u.to;
}
""",
    "PyascRows": """\
// DataCopyPad parameters for `rows` rows of `cols` elements that are contiguous in GM
// and `pitch` elements apart in UB (each UB row padded to whole 32-byte blocks).
template <typename T>
__aicore__ inline DataCopyExtParams PyascRows(int32_t rows, int64_t cols, int64_t pitch,
                                              bool toGm) {
  const uint32_t bytes = static_cast<uint32_t>(cols * sizeof(T));
  const uint32_t gap = static_cast<uint32_t>((pitch * sizeof(T) - (bytes + 31) / 32 * 32) / 32);
  return toGm ? DataCopyExtParams(static_cast<uint16_t>(rows), bytes, gap, 0, 0)
              : DataCopyExtParams(static_cast<uint16_t>(rows), bytes, 0, gap, 0);
}
""",
    "PyascRowsAt": """\
// DataCopyPad parameters for `rows` rows of `cols` elements that are `gmPitch` elements
// apart in GM and `pitch` elements apart in UB (a block of a larger matrix: MIX kernels).
template <typename T>
__aicore__ inline DataCopyExtParams PyascRowsAt(int32_t rows, int64_t cols, int64_t pitch,
                                                int64_t gmPitch, bool toGm) {
  const uint32_t bytes = static_cast<uint32_t>(cols * sizeof(T));
  const uint32_t gap = static_cast<uint32_t>((pitch * sizeof(T) - (bytes + 31) / 32 * 32) / 32);
  const uint32_t gmGap = static_cast<uint32_t>((gmPitch - cols) * sizeof(T));
  return toGm ? DataCopyExtParams(static_cast<uint16_t>(rows), bytes, gap, gmGap, 0)
              : DataCopyExtParams(static_cast<uint16_t>(rows), bytes, gmGap, gap, 0);
}
""",
    "PyascShl": """\
// numpy shifts: counts outside [0, bit width) give 0 (or -1 for a negative >>).
template <typename T>
__aicore__ inline T PyascShl(T a, T b) {
  return (b < 0 || b >= T(8 * sizeof(T))) ? T(0) : T(a << b);
}
template <typename T>
__aicore__ inline T PyascShr(T a, T b) {
  if (b < 0 || b >= T(8 * sizeof(T))) return a < 0 ? T(-1) : T(0);
  return T(a >> b);
}
""",
}
_SAME_TEXT = {"PyascFMin": "PyascFMax", "PyascShr": "PyascShl"}
_FMOD = ("PyascDivT", "PyascFModF")
_NEEDS = {"PyascRemF": _FMOD, "PyascFloorDivF": _FMOD}


def helpers_used(text: str) -> list[str]:
    """The helper definitions ``text`` calls (each once, dependencies first)."""
    out: list[str] = []
    names = ["PyascFloorDiv", "PyascRem", "PyascFloorDivF", "PyascRemF", "PyascFMax",
             "PyascFMin", "PyascShl", "PyascShr", "PyascBitcast", "PyascRows", "PyascRowsAt"]
    for name in names:
        if name + "<" not in text:
            continue
        wide = ("PyascFModD",) if f"{name}<double>" in text else ()  # f64 code only
        for dep in (*_NEEDS.get(name, ()), *wide, name):
            body = HELPERS[_SAME_TEXT.get(dep, dep)]
            if body not in out:
                out.append(body)
    return out
