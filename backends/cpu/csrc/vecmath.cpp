// Multiversioned (AVX-512 / AVX2 / baseline, picked at load time by an ifunc) float32 loops
// for the compute-bound transcendental kernels.  All clones run the same IEEE operations
// (no FMA contraction: -std=c++17 implies -ffp-contract=off), so results are bit-identical
// whichever clone runs.
#include "vecmath.h"

#include "ember.h"

#define EMBER_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

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

EMBER_CLONES void vacc_f32(float* acc, const float* a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += a[i];
}

EMBER_CLONES double vsum_f32(const float* p, int64_t n) { return row_sum(p, n); }

EMBER_CLONES void vsoftmax_f32(float* o, const float* x, float* scratch, int64_t n, bool log) {
  const float m = row_max(x, n);
  float* e = log ? scratch : o;
  for (int64_t i = 0; i < n; ++i) e[i] = fast_expf(x[i] - m);
  const double s = row_sum(e, n);
  if (log) {
    const float ls = static_cast<float>(std::log(s));
    for (int64_t i = 0; i < n; ++i) o[i] = (x[i] - m) - ls;
  } else {
    const float inv = static_cast<float>(1.0 / s);
    for (int64_t i = 0; i < n; ++i) o[i] = e[i] * inv;
  }
}

}  // namespace ember
