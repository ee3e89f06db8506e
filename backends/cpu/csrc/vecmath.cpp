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

EMBER_CLONES void vexp_sub_f32(float* o, const float* a, float m, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = fast_expf(a[i] - m);
}

EMBER_CLONES float vmax_f32(const float* p, int64_t n) { return row_max(p, n); }

EMBER_CLONES void vscale_f32(float* o, const float* a, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = a[i] * s;
}

EMBER_CLONES void vsub2_f32(float* o, const float* a, float m, float l, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = (a[i] - m) - l;
}

EMBER_CLONES void vacc_f32(float* acc, const float* a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += a[i];
}

EMBER_CLONES double vsum_f32(const float* p, int64_t n) { return row_sum(p, n); }

}  // namespace ember
