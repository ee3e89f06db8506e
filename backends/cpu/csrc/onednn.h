// oneDNN for float32 dense convolution and matrix products, when the optional library is
// loaded (onednn.cpp).
#pragma once

#include <memory>

#include <string>

#include <ember/ops.h>

#include "ember.h"

namespace ember {

// The three passes of dense_conv, named by the tensors (out, a, b) of the kernels:
//   forward           out = y (N, O, *B),   a = x (N, C, *I),  b = w (O, C/G, *K)
//   backward_data     out = dx (N, C, *I),  a = dy (N, O, *B), b = w
//   backward_weights  out = dw (O, C/G, *K), a = dy,           b = x
enum class ConvPass { forward, backward_data, backward_weights };

// Runs the pass with oneDNN and returns true; false when oneDNN is not loaded or switched
// off, the dtype is not float32, or oneDNN has no implementation for the geometry (the
// caller then runs ember's own kernel). Raises when oneDNN fails while executing.
bool onednn_conv(ConvPass pass, const Tensor& out, const Tensor& a, const Tensor& b, const ConvGeom& g, int nd,
                 int64_t groups);

// C (B, n, m) = A (B, n, k) @ B (B, k, m) in float32, each with its (batch, row, column)
// strides, plus bias (m values, element stride bias_stride; oneDNN's implementations read it dense) on every row when bias is not
// null; false (the caller runs OpenBLAS) when oneDNN is off, inside a parallel region,
// for small products, broadcast operands or layouts oneDNN runs only in reference code.
bool onednn_matmul(int64_t B, int64_t n, int64_t k, int64_t m, const float* a, const int64_t* sa, const float* b,
                   const int64_t* sb, float* c, const int64_t* sc, const float* bias = nullptr,
                   int64_t bias_stride = 0);

// A 2-d float32 product C (n, m) = A (n, k) @ B (k, m) with these (row, column) strides,
// planned once (outside a parallel region) and run by onednn_matmul_here on the calling
// thread: a task of ember's pool that splits the work itself (the recurrent layers' steps,
// whose rows each task then finishes). Null when oneDNN is off or has no fast
// implementation for the geometry.
std::shared_ptr<const void> onednn_matmul_plan(int64_t n, int64_t k, int64_t m, const int64_t* sa,
                                               const int64_t* sb, const int64_t* sc);
void onednn_matmul_here(const std::shared_ptr<const void>& plan, const float* a, const float* b, float* c);

void load_onednn(const std::string& path);
bool onednn_loaded();
// on/off without unloading (tests compare oneDNN with ember's kernels); on when loaded
void set_onednn_enabled(bool on);
bool onednn_enabled();
int64_t onednn_calls();  // how many primitives (convolutions, matrix products) oneDNN has run

}  // namespace ember
