// The scalar runtime of the generated elementwise kernels.
//
// ember.dispatcher.codegen.cxx renders every op's scalar body (dispatcher/defs) as C++
// that calls em::NAME for arithmetic, selects, library functions and the integer
// intrinsics of the expression language. This header implements them once, for host
// code (the cpu backend) and device code (the cuda backend, under __CUDA_ARCH__), so the
// generated text is the same for both.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dtype.h"

namespace ember {
namespace em {

// ---- dtype kinds (the expression language's float / sint / uint / bool bodies) ----------
enum Kind : int { kFloatKind, kSIntKind, kUIntKind, kBoolKind };
template <class T>
constexpr Kind kind_v = is_fp_v<T> ? kFloatKind
                        : std::is_same_v<T, bool> ? kBoolKind
                        : std::is_signed_v<T> ? kSIntKind
                                              : kUIntKind;

// unsigned type for wrapping integer arithmetic (at least 32 bits: no int promotion traps)
template <class C>
using uwrap_t = wrap_t<C>;
template <class C>
constexpr bool is_wrapping_v = std::is_integral_v<C> && !std::is_same_v<C, bool>;

// ---- arithmetic: integers wrap (two's complement), as PyTorch's ----------------------------
template <class C>
EMBER_HD inline C add(C a, C b) {
  if constexpr (is_wrapping_v<C>) return static_cast<C>(static_cast<uwrap_t<C>>(a) + static_cast<uwrap_t<C>>(b));
  else return a + b;
}
template <class C>
EMBER_HD inline C sub(C a, C b) {
  if constexpr (is_wrapping_v<C>) return static_cast<C>(static_cast<uwrap_t<C>>(a) - static_cast<uwrap_t<C>>(b));
  else return a - b;
}
template <class C>
EMBER_HD inline C mul(C a, C b) {
  if constexpr (is_wrapping_v<C>) return static_cast<C>(static_cast<uwrap_t<C>>(a) * static_cast<uwrap_t<C>>(b));
  else return a * b;
}
template <class C>
EMBER_HD inline C neg(C a) {
  if constexpr (is_wrapping_v<C>) return static_cast<C>(uwrap_t<C>(0) - static_cast<uwrap_t<C>>(a));
  else return -a;
}

// c ? a : b. On the host through bit masks: gcc turns ?: on floats into a branch (baseline
// x86-64 has no blend), and on unpredictable data (where, masks) a mispredicted branch per
// element costs more than the work.
template <class C>
EMBER_HD inline C select(bool c, C a, C b) {
#if defined(__CUDA_ARCH__)
  return c ? a : b;
#else
  using U = std::conditional_t<sizeof(C) == 1, uint8_t,
            std::conditional_t<sizeof(C) == 2, uint16_t, std::conditional_t<sizeof(C) == 4, uint32_t, uint64_t>>>;
  U ua, ub;
  std::memcpy(&ua, &a, sizeof(C));
  std::memcpy(&ub, &b, sizeof(C));
  const U m = static_cast<U>(U(0) - static_cast<U>(c));
  const U r = static_cast<U>((ua & m) | (ub & static_cast<U>(~m)));
  C out;
  std::memcpy(&out, &r, sizeof(C));
  return out;
#endif
}

// ---- float32 exp / tanh for the host, written so that gcc vectorises loops calling them ----
// (Cephes polynomials, <= 2 ulp; libm's scalar expf / tanhf do not vectorise without
// -ffast-math.) The cuda backend uses the device's expf / tanhf.
// exp's reduction and polynomial on xc in [-104, 89] (Cody-Waite: xc = n ln2 + r, |r| <=
// ln2 / 2): returns p = exp(r) and n. MayBeNaN: xc may also be NaN (the result is then
// discarded by the caller, but the conversion to int must not see it)
template <bool MayBeNaN>
inline float expf_reduced(float xc, int32_t& ni) {
  const float z = xc * 1.44269504088896341f;
  const float n = (z + 12582912.0f) - 12582912.0f;  // round to nearest (|z| < 2^22)
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  ni = (int32_t)(MayBeNaN ? (n == n ? n : 0.0f) : n);  // |n| <= 150
  return p * r * r + r + 1.0f;
}
inline float fast_expf(float x) {
  const float xc = std::min(std::max(x, -104.0f), 89.0f);
  int32_t ni;
  const float p = expf_reduced<true>(xc, ni);
  // 2^n as two factors: n in [-150, 128] leaves the exponent range of one
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  float res = (p * f32_from((uint32_t)(n1 + 127) << 23)) * f32_from((uint32_t)(n2 + 127) << 23);
  res = x < -103.97f ? 0.0f : res;
  return x != x ? x : res;
}
inline float fast_tanhf(float x) {
  const float ax = std::fabs(x);
  // |x| >= 0.625: 1 - 2 / (exp(2|x|) + 1). The exponent's argument is in [0, 88] (NaN maps
  // to 88), so n is in [0, 127] and 2^n is one factor: p 2^n is the bits of fast_expf's
  // (p 2^n1) 2^n2 (both products are exact), with none of its clamps and fix-ups.
  const float t = ax + ax;
  int32_t ni;
  const float p = expf_reduced<false>(t < 88.0f ? t : 88.0f, ni);
  const float big = 1.0f - 2.0f / (p * f32_from((uint32_t)(ni + 127) << 23) + 1.0f);
  // |x| < 0.625: odd polynomial
  const float s = x * x;
  const float small =
      ((((-5.70498872745E-3f * s + 2.06390887954E-2f) * s - 5.37397155531E-2f) * s + 1.33314422036E-1f) * s -
       3.33332819422E-1f) * s * ax + ax;
  // NaN: ax >= 0.625 is false, and the polynomial of NaN is NaN
  const float r = ax >= 0.625f ? big : small;
  return std::copysign(r, x);
}

// erf: |x| < 1: x + x P(x^2); else 1 - exp(-x^2) Q(t), t = 1 / (1 + |x| / 2), with |x|
// clamped to 4 (erf rounds to 1 from 3.92; NaN passes the clamp). P (degree 6 in x^2) and
// Q (degree 7 in t) are weighted least-squares fits written for ember (relative error
// 1.2e-9 and 3.7e-10 in float64). Measured against double erf over every float: at most
// 1.55 ulp (6,828 positive inputs above 1 ulp; the worst near |x| = 1, where 1 - erfc
// cancels); odd, so -0 and the signs are kept; 15x faster than libm's scalar erff, in a
// loop gcc vectorises.
inline float fast_erff(float x) {
  const float ax = std::fabs(x);
  const float s = x * x;
  const float p = ((((((7.8542208939e-05f * s - 8.0103112850e-04f) * s + 5.1883426495e-03f) * s -
                      2.6853820309e-02f) * s + 1.1283585429e-01f) * s - 3.7612625957e-01f) * s +
                   1.2837916613e-01f);
  const float small = x + x * p;
  const float xc = ax > 4.0f ? 4.0f : ax;
  const float t = 1.0f / (1.0f + 0.5f * xc);
  const float q = (((((((1.1901632696e-01f * t - 4.7015270591e-01f) * t + 5.6187444925e-01f) * t -
                       1.0259354115e-01f) * t + 3.4736144543e-01f) * t + 2.5980156660e-01f) * t +
                    2.8489625454e-01f) * t - 1.5318891383e-04f);
  // exp(-xc^2): the argument is in [-16, 0] (or NaN), so 2^n is one factor
  int32_t ni;
  const float e = expf_reduced<true>(-(xc * xc), ni);
  const float big = 1.0f - (e * f32_from((uint32_t)(ni + 127) << 23)) * q;
  return ax < 1.0f ? small : std::copysign(big, x);
}

// log: x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first), f = m - 1
// (exact), s = f / (2 + f); log(1 + f) = 2 atanh(s) = f - s (f - T(s^2)) with T(z) = 2z/3 +
// 2z^2/5 + 2z^3/7 + 2z^4/9 (atanh's series: |s| <= 0.1716, the next term is below 2^-30 of
// the result), and e ln2 added in two parts (e LN2_HI is exact). Measured against double log
// over every positive float: at most 0.954 ulp (0.6 % of inputs above 0.5 ulp; the worst
// near m = sqrt(1/2)); log(1) = +0, log(+-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN
// stays NaN. 6x faster than libm's scalar logf in a vectorised loop.
inline float fast_logf(float x) {
  const bool sub = x < 1.17549435e-38f;  // subnormal (zero and negatives are fixed below)
  const float xs = sub ? x * 8388608.0f : x;
  const uint32_t v = f32_bits(xs);
  uint32_t mb = (v & 0x007FFFFFu) | 0x3F800000u;  // m in [1, 2)
  int32_t e = (int32_t)((v >> 23) & 0xFFu) - 127 - (sub ? 23 : 0);
  const bool big = mb > 0x3FB504F3u;  // m > sqrt(2): m / 2
  mb -= big ? 0x00800000u : 0u;
  e += big ? 1 : 0;
  const float f = f32_from(mb) - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  const float t = z * (0.666666667f + z * (0.4f + z * (0.285714286f + z * 0.222222222f)));
  const float ef = (float)e;
  float r = ef * 0.693145751953125f + ((f - s * (f - t)) + ef * 1.42860682030941723212e-6f);
  r = x == 0.0f ? f32_from(0xFF800000u) : r;  // -inf
  r = x < 0.0f ? f32_from(0x7FC00000u) : r;   // NaN
  r = x == f32_from(0x7F800000u) ? x : r;     // +inf
  return x != x ? x : r;
}

// sin / cos for |x| <= 2^19 (kSinCosFast), in double: n = rint(x 2/pi), r = x - n pi/2 with
// pi/2 in two parts (the first of 33 significant bits, so n PIO2_HI is exact for |n| < 2^20),
// then sin(r) and cos(r) by their Taylor polynomials on |r| <= pi/4 (truncation below 2^-28
// of the result) and the quadrant's choice and sign. Measured against double sin / cos over
// every float of magnitude up to 2^19: within 0.5 ulp and a hair (correctly rounded but for
// ties of the double result). Beyond 2^19 (and inf, NaN) the callers use libm's, whose
// reduction is exact there; the vectorised loop computes every element this way and then
// redoes those (vecmath.cpp), so both give the same bits.
constexpr float kSinCosFast = 524288.0f;
inline float sincosf_small(float x, int cosine) {
  const double xd = x;
  double n = std::nearbyint(xd * 0.63661977236758134308);
  n = std::fabs(xd) <= 524288.0 ? n : 0.0;  // (the caller discards those; no int of NaN)
  const double r = (xd - n * 1.57079632673412561417) - n * 6.07710050650619224932e-11;
  const double z = r * r;
  const double sn = r + r * z * (-1.0 / 6 + z * (1.0 / 120 + z * (-1.0 / 5040 + z * (1.0 / 362880))));
  const double cs =
      1.0 + z * (-0.5 + z * (1.0 / 24 + z * (-1.0 / 720 + z * (1.0 / 40320 + z * (-1.0 / 3628800)))));
  const int32_t q = (int32_t)n + cosine;  // cos(x) = sin(x + pi/2)
  double v = (q & 1) ? cs : sn;
  v = (q & 2) ? -v : v;
  // sin(-0) is -0 (r came out +0)
  return (x == 0.0f && !cosine) ? x : (float)v;
}
inline float fast_sinf(float x) {
  return std::fabs(x) <= kSinCosFast ? sincosf_small(x, 0) : std::sin(x);
}
inline float fast_cosf(float x) {
  return std::fabs(x) <= kSinCosFast ? sincosf_small(x, 1) : std::cos(x);
}

// ---- library functions on the compute types (float, double) -----------------------------
#if defined(__CUDA_ARCH__)
#define EMBER_MATH1(NAME, F, D) \
  EMBER_HD inline float NAME(float x) { return ::F(x); } \
  EMBER_HD inline double NAME(double x) { return ::D(x); }
#define EMBER_MATH2(NAME, F, D) \
  EMBER_HD inline float NAME(float x, float y) { return ::F(x, y); } \
  EMBER_HD inline double NAME(double x, double y) { return ::D(x, y); }
#else
#define EMBER_MATH1(NAME, F, D) \
  EMBER_HD inline float NAME(float x) { return std::D(x); } \
  EMBER_HD inline double NAME(double x) { return std::D(x); }
#define EMBER_MATH2(NAME, F, D) \
  EMBER_HD inline float NAME(float x, float y) { return std::D(x, y); } \
  EMBER_HD inline double NAME(double x, double y) { return std::D(x, y); }
#endif

EMBER_MATH1(tan, tanf, tan)
EMBER_MATH1(sqrt, sqrtf, sqrt)
EMBER_MATH1(expm1, expm1f, expm1)
EMBER_MATH1(log1p, log1pf, log1p)
EMBER_MATH1(log2, log2f, log2)
EMBER_MATH1(floor, floorf, floor)
EMBER_MATH1(ceil, ceilf, ceil)
EMBER_MATH1(trunc, truncf, trunc)
EMBER_MATH1(fabs, fabsf, fabs)
EMBER_MATH2(fmod, fmodf, fmod)
EMBER_MATH2(pow, powf, pow)
EMBER_MATH2(hypot, hypotf, hypot)
EMBER_MATH2(copysign, copysignf, copysign)
EMBER_MATH1(asin, asinf, asin)
EMBER_MATH1(acos, acosf, acos)
EMBER_MATH1(atan, atanf, atan)
EMBER_MATH1(sinh, sinhf, sinh)
EMBER_MATH1(cosh, coshf, cosh)
EMBER_MATH1(asinh, asinhf, asinh)
EMBER_MATH1(acosh, acoshf, acosh)
EMBER_MATH1(atanh, atanhf, atanh)
EMBER_MATH1(exp2, exp2f, exp2)
EMBER_MATH1(log10, log10f, log10)
EMBER_MATH1(lgamma, lgammaf, lgamma)
EMBER_MATH1(erfc, erfcf, erfc)
EMBER_MATH2(atan2, atan2f, atan2)
EMBER_MATH2(nextafter, nextafterf, nextafter)
#undef EMBER_MATH1
#undef EMBER_MATH2

#if defined(__CUDA_ARCH__)
EMBER_HD inline float exp(float x) { return ::expf(x); }
EMBER_HD inline double exp(double x) { return ::exp(x); }
EMBER_HD inline float log(float x) { return ::logf(x); }
EMBER_HD inline double log(double x) { return ::log(x); }
EMBER_HD inline float sin(float x) { return ::sinf(x); }
EMBER_HD inline double sin(double x) { return ::sin(x); }
EMBER_HD inline float cos(float x) { return ::cosf(x); }
EMBER_HD inline double cos(double x) { return ::cos(x); }
EMBER_HD inline float tanh(float x) { return ::tanhf(x); }
EMBER_HD inline double tanh(double x) { return ::tanh(x); }
EMBER_HD inline float erf(float x) { return ::erff(x); }
EMBER_HD inline double erf(double x) { return ::erf(x); }
EMBER_HD inline float rsqrt(float x) { return ::rsqrtf(x); }
EMBER_HD inline double rsqrt(double x) { return ::rsqrt(x); }
EMBER_HD inline float rint(float x) { return ::rintf(x); }
EMBER_HD inline double rint(double x) { return ::rint(x); }
#else
EMBER_HD inline float exp(float x) { return fast_expf(x); }
EMBER_HD inline double exp(double x) { return std::exp(x); }
EMBER_HD inline float log(float x) { return fast_logf(x); }
EMBER_HD inline double log(double x) { return std::log(x); }
EMBER_HD inline float sin(float x) { return fast_sinf(x); }
EMBER_HD inline double sin(double x) { return std::sin(x); }
EMBER_HD inline float cos(float x) { return fast_cosf(x); }
EMBER_HD inline double cos(double x) { return std::cos(x); }
EMBER_HD inline float tanh(float x) { return fast_tanhf(x); }
EMBER_HD inline double tanh(double x) { return std::tanh(x); }
EMBER_HD inline float erf(float x) { return fast_erff(x); }
EMBER_HD inline double erf(double x) { return std::erf(x); }
EMBER_HD inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
EMBER_HD inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
// half to even under the default rounding mode, without raising FE_INEXACT
EMBER_HD inline float rint(float x) { return std::nearbyint(x); }
EMBER_HD inline double rint(double x) { return std::nearbyint(x); }
#endif

// ---- classification (integers are never NaN or infinite) ---------------------------------
template <class C>
EMBER_HD inline bool isnan(C x) {
  if constexpr (std::is_floating_point_v<C>) return x != x;
  else return false;
}
template <class C>
EMBER_HD inline bool isinf(C x) {
  if constexpr (std::is_floating_point_v<C>) return x == x && (x - x) != (x - x);
  else return false;
}
template <class C>
EMBER_HD inline bool isfinite(C x) {
  if constexpr (std::is_floating_point_v<C>) return (x - x) == (x - x);
  else return true;
}

// ---- integer division, modulo and powers (a zero divisor gives 0: backends that can
// report it check the operands before the launch) -------------------------------------------
template <class C>
EMBER_HD inline C idiv_trunc(C a, C b) {
  if (b == C(0)) return C(0);
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return neg(a);  // no overflow trap on MIN / -1
  }
  return static_cast<C>(a / b);
}
template <class C>
EMBER_HD inline C idiv_floor(C a, C b) {
  if (b == C(0)) return C(0);
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return neg(a);
    C q = static_cast<C>(a / b);
    const C r = static_cast<C>(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) q = static_cast<C>(q - 1);
    return q;
  } else {
    return static_cast<C>(a / b);
  }
}
// C's %: the result takes the dividend's sign
template <class C>
EMBER_HD inline C imod(C a, C b) {
  if (b == C(0)) return C(0);
  if constexpr (std::is_signed_v<C>) {
    if (b == C(-1)) return C(0);
  }
  return static_cast<C>(a % b);
}
// a ** e by squaring, wrapping; a negative exponent (rejected by the op's check where the
// backend can raise) gives the truncated value: 1 / a is 0 unless a is 1 or -1
template <class C>
EMBER_HD inline C ipow(C a, C e) {
  if constexpr (std::is_signed_v<C>) {
    if (e < 0) return a == C(1) ? C(1) : a == C(-1) ? ((e & 1) ? C(-1) : C(1)) : C(0);
  }
  uwrap_t<C> r = 1, base = static_cast<uwrap_t<C>>(a);
  uint64_t k = static_cast<uint64_t>(e);
  while (k) {
    if (k & 1) r *= base;
    base *= base;
    k >>= 1;
  }
  return static_cast<C>(r);
}
// PyTorch's calc_gcd: Euclid's algorithm on the absolute values (which wrap for the most
// negative value, as PyTorch's do)
template <class C>
EMBER_HD inline C igcd(C a, C b) {
  if constexpr (std::is_signed_v<C>) {
    a = a < C(0) ? neg(a) : a;
    b = b < C(0) ? neg(b) : b;
  }
  while (a != C(0)) {
    const C c = a;
    if constexpr (std::is_signed_v<C>) {
      a = (a == C(-1)) ? C(0) : static_cast<C>(b % a);  // (x % -1 is 0; MIN % -1 traps)
    } else {
      a = static_cast<C>(b % a);
    }
    b = c;
  }
  return b;
}
// floor(a / b) for floating types, exactly as PyTorch's div_floor_floating
template <class C>
EMBER_HD inline C fdiv_floor(C a, C b) {
  if (b == C(0)) return a / b;
  const C mod = fmod(a, b);
  C div = (a - mod) / b;
  if ((mod != C(0)) && ((b < C(0)) != (mod < C(0)))) div -= C(1);
  if (div != C(0)) {
    C fl = floor(div);
    if (div - fl > C(0.5)) fl += C(1);
    return fl;
  }
  return copysign(C(0), a / b);
}

// ---- scalar attributes of a kernel call (addcmul's value) -------------------------------------
// Both fields always hold the value (i: truncated for a float, as PyTorch converts a Scalar for
// an integer dtype), so as<C>() has no branch and hoists out of a kernel's loop.
struct Scalar {
  bool is_int = true;
  int64_t i = 0;
  double d = 0.0;
  template <class C>
  EMBER_HD C as() const {
    if constexpr (std::is_floating_point_v<C>) return static_cast<C>(d);
    else if constexpr (std::is_same_v<C, bool>) return d != 0.0;
    else return static_cast<C>(static_cast<uwrap_t<C>>(i));  // integer dtypes wrap
  }
};

}  // namespace em
}  // namespace ember
