// Multiversioned (AVX-512 / AVX2 / baseline, picked at load time by an ifunc) float32 loops
// for the compute-bound transcendental kernels.  All clones run the same IEEE operations
// (no FMA contraction: CMakeLists.txt sets -ffp-contract=off), so results are bit-identical
// whichever clone runs. The row softmax has, beside its clones, an AVX-512 version in
// intrinsics (the clones' per-row reductions were latency-bound on short rows: 76 against
// 40 ns for a row of 64) that adds in the same order.
#include "vecmath.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ember.h"


namespace ember {

EMBER_CLONES void vexp_f32(float* o, const float* a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fast_expf(a[i]);
}

EMBER_CLONES void vsigmoid_f32(float* o, const float* a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = 1.0f / (1.0f + fast_expf(-a[i]));
}

EMBER_CLONES void vtanh_f32(float* o, const float* a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fast_tanhf(a[i]);
}

// sin / cos: every element by sincosf_small, vectorised (into a chunk of the stack: o may
// be a), then the few beyond kSinCosFast (and inf, NaN) again by libm, as fast_sinf /
// fast_cosf do one at a time: the same bits as the generated loop and compiled code (inlined
// into each clone, which then vectorises it for its own ISA)
template <int Cosine>
__attribute__((always_inline)) static inline void vsincos_f32(float* o, const float* a,
                                                             int64_t n) {
  constexpr int64_t kChunk = 1024;
  float tmp[kChunk];
  for (int64_t b = 0; b < n; b += kChunk) {
    const int64_t m = std::min(kChunk, n - b);
    const float* x = a + b;
    int far = 0;
    for (int64_t i = 0; i < m; ++i) {
      tmp[i] = sincosf_small(x[i], Cosine);
      far |= !(std::fabs(x[i]) <= kSinCosFast);
    }
    if (far) {
      for (int64_t i = 0; i < m; ++i)
        if (!(std::fabs(x[i]) <= kSinCosFast)) tmp[i] = Cosine ? std::cos(x[i]) : std::sin(x[i]);
    }
    std::memcpy(o + b, tmp, (size_t)m * sizeof(float));
  }
}
EMBER_CLONES void vsin_f32(float* o, const float* a, int64_t n) { vsincos_f32<0>(o, a, n); }
EMBER_CLONES void vcos_f32(float* o, const float* a, int64_t n) { vsincos_f32<1>(o, a, n); }

EMBER_CLONES void vacc_f32(float* acc, const float* a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += a[i];
}

EMBER_CLONES double vsum_f32(const float* p, int64_t n) { return row_sum(p, n); }

// (float64 sums are bound by memory, not worth clones; the reduce kernels inline row_sum)
double vsum_f64(const double* p, int64_t n) { return row_sum(p, n); }

namespace {

constexpr int64_t kSoftmaxRow = 2048;  // rows up to this length: one block of 16 lanes

// The sum of a softmax row's exponentials: 16 float lanes (lane j: elements j, j + 16, ...
// of the first n / 16 * 16), combined in double as a tree (8 + 8, 4 + 4, 2 + 2, 1 + 1), then
// the last n % 16 elements in order. Longer rows: row_sum. The AVX-512 path below adds in
// the same order, so every path gives the same bits.
inline double lanes_sum(const float* e, int64_t n) {
  if (n > kSoftmaxRow) return row_sum(e, n);
  float acc[16] = {};
  const int64_t body = n / 16 * 16;
  for (int64_t k = 0; k < body; k += 16)
    for (int j = 0; j < 16; ++j) acc[j] += e[k + j];
  double t[16];
  for (int j = 0; j < 16; ++j) t[j] = acc[j];
  for (int w = 8; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) t[j] = t[j] + t[j + w];
  double s = t[0];
  for (int64_t i = body; i < n; ++i) s += (double)e[i];
  return s;
}

EMBER_CLONES void softmax_generic(float* o, const float* x, float* scratch, int64_t n, bool log) {
  const float m = row_max(x, n);
  float* e = log ? scratch : o;
  for (int64_t i = 0; i < n; ++i) e[i] = fast_expf(x[i] - m);
  const double s = lanes_sum(e, n);
  if (log) {
    const float ls = static_cast<float>(std::log(s));
    for (int64_t i = 0; i < n; ++i) o[i] = (x[i] - m) - ls;
  } else {
    const float inv = static_cast<float>(1.0 / s);
    for (int64_t i = 0; i < n; ++i) o[i] = e[i] * inv;
  }
}

#define EMBER_AVX512 __attribute__((target("avx512f,avx512dq")))

// fast_expf on 16 lanes: the same IEEE operations in the same order (no FMA)
EMBER_AVX512 inline __m512 exp16(__m512 x) {
  const __m512 xc = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(x, _mm512_set1_ps(-104.0f)));
  const __m512 z = _mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f));
  const __m512 n = _mm512_sub_ps(_mm512_add_ps(z, _mm512_set1_ps(12582912.0f)), _mm512_set1_ps(12582912.0f));
  __m512 r = _mm512_sub_ps(xc, _mm512_mul_ps(n, _mm512_set1_ps(0.693359375f)));
  r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(-2.12194440e-4f)));
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(5.0000001201E-1f));
  p = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(p, r), r), r), _mm512_set1_ps(1.0f));
  const __m512i ni = _mm512_cvttps_epi32(_mm512_maskz_mov_ps(_mm512_cmp_ps_mask(n, n, _CMP_ORD_Q), n));
  const __m512i n1 = _mm512_srai_epi32(ni, 1), n2 = _mm512_sub_epi32(ni, n1);
  const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, _mm512_set1_epi32(127)), 23));
  const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, _mm512_set1_epi32(127)), 23));
  __m512 res = _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
  res = _mm512_mask_mov_ps(res, _mm512_cmp_ps_mask(x, _mm512_set1_ps(-103.97f), _CMP_LT_OQ), _mm512_setzero_ps());
  return _mm512_mask_mov_ps(res, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

// softmax_generic for rows up to kSoftmaxRow on AVX-512: one pass for the max, one for the
// exponentials and their lane sums, one for the scale (or the shift). Scaled: of x * sc
// (attention's scores, each product rounded as the composite's mul rounds it), and a row
// whose elements are all -inf gives zeros (attention's safe softmax).
template <bool Scaled>
EMBER_AVX512 inline __m512 scaled16(__m512 v, __m512 sc) {
  return Scaled ? _mm512_mul_ps(v, sc) : v;
}

template <bool Scaled>
EMBER_AVX512 void softmax_avx512(float* o, const float* x, float* scratch, int64_t n, bool log, float sc = 1.0f) {
  const int64_t body = n / 16 * 16;
  const __mmask16 tail = (__mmask16)((1u << (n - body)) - 1);
  const __m512 vsc = _mm512_set1_ps(sc);
#define load(j) scaled16<Scaled>(_mm512_loadu_ps(x + (j)), vsc)
#define load_tail() scaled16<Scaled>(_mm512_maskz_loadu_ps(tail, x + body), vsc)
  __m512 acc = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 nan = 0;
  for (int64_t j = 0; j < body; j += 16) {
    const __m512 v = load(j);
    acc = _mm512_mask_mov_ps(acc, _mm512_cmp_ps_mask(v, acc, _CMP_GT_OQ), v);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  }
  if (tail) {
    const __m512 v = load_tail();
    acc = _mm512_mask_mov_ps(acc, _mm512_mask_cmp_ps_mask(tail, v, acc, _CMP_GT_OQ), v);
    nan |= _mm512_mask_cmp_ps_mask(tail, v, v, _CMP_UNORD_Q);
  }
  const float m = nan ? std::numeric_limits<float>::quiet_NaN() : _mm512_reduce_max_ps(acc);
  if (Scaled && m == -std::numeric_limits<float>::infinity()) {  // every key hidden
    std::fill(o, o + n, 0.0f);
    return;
  }
  const __m512 vm = _mm512_set1_ps(m);
  float* e = log ? scratch : o;
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < body; j += 16) {
    const __m512 v = exp16(_mm512_sub_ps(load(j), vm));
    _mm512_storeu_ps(e + j, v);
    sum = _mm512_add_ps(sum, v);
  }
  if (tail) _mm512_mask_storeu_ps(e + body, tail, exp16(_mm512_sub_ps(load_tail(), vm)));
  // lanes_sum's tree: (0..7) + (8..15), then halves of that, then pairs
  const __m512d t8 = _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(sum)),
                                   _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sum), 1))));
  const __m256d t4 = _mm256_add_pd(_mm512_castpd512_pd256(t8), _mm512_extractf64x4_pd(t8, 1));
  const __m128d t2 = _mm_add_pd(_mm256_castpd256_pd128(t4), _mm256_extractf128_pd(t4, 1));
  double s = _mm_cvtsd_f64(t2) + _mm_cvtsd_f64(_mm_unpackhi_pd(t2, t2));
  for (int64_t i = body; i < n; ++i) s += (double)e[i];
  if (log) {
    const __m512 shift = _mm512_set1_ps(static_cast<float>(std::log(s)));
    for (int64_t j = 0; j < body; j += 16)
      _mm512_storeu_ps(o + j, _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), vm), shift));
    if (tail)
      _mm512_mask_storeu_ps(o + body, tail, _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + body), vm), shift));
  } else {
    const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / s));
    for (int64_t j = 0; j < body; j += 16) _mm512_storeu_ps(o + j, _mm512_mul_ps(_mm512_loadu_ps(e + j), inv));
    if (tail) _mm512_mask_storeu_ps(o + body, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, e + body), inv));
  }
}

#undef load
#undef load_tail

const bool g_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");

}  // namespace

void vsoftmax_f32(float* o, const float* x, float* scratch, int64_t n, bool log) {
  if (g_avx512 && n <= kSoftmaxRow) softmax_avx512<false>(o, x, scratch, n, log);
  else softmax_generic(o, x, scratch, n, log);
}

void vsoftmax_scaled_safe_f32(float* row, int64_t n, float sc) {
  if (g_avx512 && n <= kSoftmaxRow) {
    softmax_avx512<true>(row, row, nullptr, n, false, sc);
    return;
  }
  for (int64_t j = 0; j < n; ++j) row[j] = row[j] * sc;
  if (row_max(row, n) == -std::numeric_limits<float>::infinity()) {
    std::fill(row, row + n, 0.0f);
    return;
  }
  softmax_generic(row, row, nullptr, n, false);
}

}  // namespace ember
