// One GEMM on ember's thread pool, for kernels that multiply matrices inside a loop (the
// recurrent layers): row-major C (m x n, leading dimension ldc) = op(A) @ op(B), op a
// transpose when ta / tb; with accumulate, C += op(A) @ op(B). float and double; OpenBLAS
// when loaded, else a plain loop.
#pragma once

#include <cstdint>

namespace ember {

template <class T>
void gemm_pool(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
               int64_t ldb, T* c, int64_t ldc, bool accumulate = false);

}  // namespace ember
