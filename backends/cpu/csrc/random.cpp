// uniform / normal: Philox4x32-10 counter-based random numbers, the formulas of
// <ember/philox.h> (every backend draws the same numbers for a seed and offset).
#include <ember/ops.h>
#include <ember/philox.h>

#include "ember.h"

namespace ember {

namespace {

template <bool Normal>
void random_op(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const RandomArgs<MAXD> r = parse_random<MAXD>(Normal, a, n, kw);
  const int64_t N = r.out.numel;
  if (N == 0) return;
  NoGil g(N >= kGilThreshold);
  // element i of the draw is the i-th in row-major order: strided outputs go through a buffer
  std::vector<char> tmp;
  Tensor dst = r.out;
  if (!dst.is_contiguous()) {
    tmp.resize((size_t)(N * dst.itemsize));
    dst = Tensor::contiguous(tmp.data(), dst.dtype, dst.ndim, dst.shape);
  }
  dispatch<M_FLOAT>(dst.dtype, r.op, [&](auto tag) {
    using T = EMBER_T(tag);
    T* o = (T*)dst.data;
    parallel_for(0, N, 8192, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = cvt<T>(random_value<T, Normal>(r.draw, (uint64_t)i));
    });
  });
  if (dst.data != r.out.data) copy_tensor(r.out, dst);
}
EMBER_KERNEL("uniform", random_op<false>);
EMBER_KERNEL("normal", random_op<true>);

}  // namespace

}  // namespace ember
