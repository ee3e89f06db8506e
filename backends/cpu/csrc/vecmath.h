// Multiversioned float32 loops (vecmath.cpp); contiguous arrays, o may equal a.
#pragma once
#include <cstdint>

// AVX-512 / AVX2 / baseline clones of a function, picked at load time by an ifunc (the
// same IEEE operations in each: CMakeLists.txt sets -ffp-contract=off)
#define EMBER_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

namespace ember {
void vexp_f32(float* o, const float* a, int64_t n);
void vsigmoid_f32(float* o, const float* a, int64_t n);
void vtanh_f32(float* o, const float* a, int64_t n);
void vsin_f32(float* o, const float* a, int64_t n);
void vcos_f32(float* o, const float* a, int64_t n);
void vacc_f32(float* acc, const float* a, int64_t n);                // acc += a
double vsum_f32(const float* p, int64_t n);                          // row_sum(p, n)
double vsum_f64(const double* p, int64_t n);                         // row_sum(p, n)
// softmax (log: log_softmax) of one contiguous row in one call: max, exp(x - max) (into o,
// or into scratch for log, since o may alias x), its row_sum, then the scale or the shift
void vsoftmax_f32(float* o, const float* x, float* scratch, int64_t n, bool log);
// attention's row in place: the safe softmax (zeros where every element is -inf) of
// row * sc, the same bits as scaling the row first and then vsoftmax_f32
void vsoftmax_scaled_safe_f32(float* row, int64_t n, float sc);
}  // namespace ember
