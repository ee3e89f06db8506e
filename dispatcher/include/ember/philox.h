// Counter-based random numbers: Philox4x32-10 and ember's uniform / normal formulas, one
// definition for the host and the device so that a seeded program draws the same numbers on
// every backend (the OpenCL backend and the docs reproduce the same formulas).
//
//   key  = (k0, k1) = (seed & 0xffffffff, seed >> 32)          (seed as uint64)
//   ctr  = (c0, c1, c2, c3) = (lo32(offset + i), hi32(offset + i), 0, 0)
//          i = the element's linear index in row-major order of `out` (offset + i mod 2^64)
//   round: (hi0, lo0) = 0xD2511F53 * c0, (hi1, lo1) = 0xCD9E8D57 * c2   (32x32 -> 64 bit)
//          c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
//          10 rounds; after each of the first 9: k0 += 0x9E3779B9, k1 += 0xBB67AE85
//   output words (w0, w1, w2, w3) = c after 10 rounds
//   uniform, float32:  u = (w0 >> 8) * 2^-24                                     in [0, 1)
//   uniform, float64:  u = (((uint64)w0 << 32 | w1) >> 11) * 2^-53                 in [0, 1)
//   uniform, float16:  u = (w0 >> 21) * 2^-11   (the dtype's 11 significand bits, as PyTorch;
//   uniform, bfloat16: u = (w0 >> 24) * 2^-8     24 bits would round up to 1.0)
//            value = low + u * (high - low)      (computed in double, then rounded to the dtype)
//   normal (all float dtypes): u1 = (w0 + 1.0) * 2^-32 in (0, 1], u2 = w1 * 2^-32 in [0, 1)
//            z = sqrt(-2 ln u1) * cos(2 pi u2);  value = mean + std * z   (double, then rounded)
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "dtype.h"

#pragma GCC visibility push(hidden)

namespace ember {

// The four output words of Philox4x32-10 for counter `ctr` under key `seed`.
EMBER_HD inline void philox10(uint64_t ctr, uint64_t seed, uint32_t w[4]) {
  uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
#if defined(__CUDA_ARCH__)
    const uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
#else
    const uint64_t p0 = (uint64_t)0xD2511F53u * c0;
    const uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
    const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
#endif
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  w[0] = c0;
  w[1] = c1;
  w[2] = c2;
  w[3] = c3;
}

// One draw of uniform(low, high) or normal(mean, std) numbers: the distribution's two
// parameters and the Philox key (seed) and counter base (offset).
struct RandomDraw {
  double p1, p2;  // low, high / mean, std
  uint64_t seed, offset;
};

// Element i (row-major in the output) of draw d, in double before rounding to T.
template <class T, bool Normal>
EMBER_HD EMBER_INLINE double random_value(const RandomDraw& d, uint64_t i) {
  uint32_t w[4];
  philox10(d.offset + i, d.seed, w);
  if constexpr (Normal) {
    const double u1 = ((double)w[0] + 1.0) * 0x1.0p-32;
    const double u2 = (double)w[1] * 0x1.0p-32;
    const double z = sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
    return d.p1 + d.p2 * z;
  } else {
    double u;
    if constexpr (std::is_same_v<T, double>)
      u = (double)((((uint64_t)w[0] << 32) | w[1]) >> 11) * 0x1.0p-53;
    else if constexpr (std::is_same_v<T, Half>)
      u = (double)(w[0] >> 21) * 0x1.0p-11;
    else if constexpr (std::is_same_v<T, BFloat16>)
      u = (double)(w[0] >> 24) * 0x1.0p-8;
    else
      u = (double)(w[0] >> 8) * 0x1.0p-24;
    return d.p1 + u * (d.p2 - d.p1);
  }
}

}  // namespace ember

#pragma GCC visibility pop
