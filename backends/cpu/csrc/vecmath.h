// Multiversioned float32 loops (vecmath.cpp); contiguous arrays, o may equal a.
#pragma once
#include <cstdint>

namespace ember {
void vexp_f32(float* o, const float* a, int64_t n);
void vsigmoid_f32(float* o, const float* a, int64_t n);
void vtanh_f32(float* o, const float* a, int64_t n);
void vexp_sub_f32(float* o, const float* a, float m, int64_t n);    // exp(a - m)
float vmax_f32(const float* p, int64_t n);                           // NaN-propagating
void vscale_f32(float* o, const float* a, float s, int64_t n);       // a * s
void vsub2_f32(float* o, const float* a, float m, float l, int64_t n);  // (a - m) - l
void vacc_f32(float* acc, const float* a, int64_t n);                // acc += a
double vsum_f32(const float* p, int64_t n);                          // row_sum(p, n)
}  // namespace ember
