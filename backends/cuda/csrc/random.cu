// uniform / normal: Philox4x32-10 random numbers from (seed, offset), the formulas of
// <ember/philox.h>, so a seeded program draws the same numbers on cuda as on the cpu.
#include <ember/ops.h>
#include <ember/philox.h>

#include "kernels.cuh"

namespace ember {

namespace {

template <class T, bool Normal>
__global__ void random_kernel(int64_t n, Geom<1> g, RandomDraw d) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    char* p[1];
    g.offsets(i, p);  // i is the row-major linear index: offsets walk the output in that order
    *(T*)p[0] = cvt<T>(random_value<T, Normal>(d, (uint64_t)i));
  }
}

template <bool Normal>
void random_op(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const RandomArgs<MAXD> r = parse_random<MAXD>(Normal, a, n, kw);
  const Tensor& out = r.out;
  if (out.numel == 0) return;
  // row-major geometry without dim reordering (make_geom may reorder by stride)
  Geom<1> g{};
  g.base[0] = out.data;
  int nd = 0;
  for (int d = out.ndim - 1; d >= 0; --d) {
    g.size[nd] = out.shape[d];
    g.stride[nd][0] = out.stride[d] * out.itemsize;
    ++nd;
  }
  if (nd == 0) {
    nd = 1;
    g.size[0] = 1;
    g.stride[0][0] = 0;
  }
  g.ndim = nd;
  if (out.is_contiguous()) {
    g.ndim = 1;
    g.size[0] = out.numel;
    g.stride[0][0] = out.itemsize;
  }
  dispatch<M_FLOAT>(out.dtype, r.op, [&](auto tag) {
    using T = EMBER_T(tag);
    random_kernel<T, Normal><<<grid_for(out.numel), kThreads, 0, current_stream(out.device)>>>(out.numel, g, r.draw);
    check_launch(r.op);
  });
}
EMBER_KERNEL("uniform", random_op<false>);
EMBER_KERNEL("normal", random_op<true>);

}  // namespace

}  // namespace ember
