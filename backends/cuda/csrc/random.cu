// Philox4x32-10 random numbers from (seed, offset): the CPU backend's exact formulas
// (backends/cpu/csrc/random.cpp), so a seeded program draws the same numbers on cuda.
#include "kernels.cuh"

namespace ember {

namespace {

__device__ inline void philox10(uint64_t ctr, uint64_t seed, uint32_t w[4]) {
  uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint32_t hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint32_t hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
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

template <class T, bool Normal>
__global__ void random_kernel(int64_t n, Geom<1> g, double p1, double p2, uint64_t seed, uint64_t offset) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t w[4];
    philox10(offset + (uint64_t)i, seed, w);
    double v;
    if constexpr (Normal) {
      const double u1 = ((double)w[0] + 1.0) * 0x1.0p-32;
      const double u2 = (double)w[1] * 0x1.0p-32;
      v = p1 + p2 * (sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2));
    } else {
      double u;
      if constexpr (std::is_same_v<T, double>) u = (double)((((uint64_t)w[0] << 32) | w[1]) >> 11) * 0x1.0p-53;
      else if constexpr (std::is_same_v<T, half>) u = (double)(w[0] >> 21) * 0x1.0p-11;
      else if constexpr (std::is_same_v<T, bf16>) u = (double)(w[0] >> 24) * 0x1.0p-8;
      else u = (double)(w[0] >> 8) * 0x1.0p-24;
      v = p1 + u * (p2 - p1);
    }
    char* p[1];
    g.offsets(i, p);  // i is the row-major linear index: offsets walk the output in that order
    *(T*)p[0] = cvt<T>(v);
  }
}

template <bool Normal>
void random_op(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args(op, a, n, kw,
            Normal ? std::initializer_list<const char*>{"out", "mean", "std", "seed", "offset"}
                   : std::initializer_list<const char*>{"out", "low", "high", "seed", "offset"},
            5);
  Tensor out = args.out(0);
  const double p1 = args.get_double(1), p2 = args.get_double(2);
  const uint64_t seed = args.get_u64(3), offset = args.get_u64(4);
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
  dispatch<M_FLOAT>(out.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    random_kernel<T, Normal><<<grid_for(out.numel), kThreads, 0, current_stream(out.device)>>>(out.numel, g, p1, p2,
                                                                                               seed, offset);
    check_launch(op);
  });
}

void k_uniform(PyObject* const* a, Py_ssize_t n, PyObject* kw) { random_op<false>("uniform", a, n, kw); }
void k_normal(PyObject* const* a, Py_ssize_t n, PyObject* kw) { random_op<true>("normal", a, n, kw); }

}  // namespace

void register_random(std::vector<PyMethodDef>& defs) {
  defs.push_back(EMBER_DEF("uniform", k_uniform));
  defs.push_back(EMBER_DEF("normal", k_normal));
}

}  // namespace ember
