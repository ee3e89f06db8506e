// Device-side infrastructure for the .cu files (the element types, conversions and dtype
// dispatch are ember's shared <ember/dtype.h>, through common.h): the accumulator type, and
// the elementwise launcher (one templated kernel family over strided / broadcast
// operands, with 128-bit vector loads when every operand is contiguous and aligned).
#pragma once
#include <cstdint>
#include <type_traits>

#include "common.h"

namespace ember {

// accumulator of sums: float for 16-bit floats and float32, double, int64 for integers
template <class T>
using acc_t = std::conditional_t<is_fp_v<T>, std::conditional_t<std::is_same_v<T, double>, double, float>, int64_t>;

constexpr int kThreads = 256;
inline unsigned grid_for(int64_t n, int per_thread = 1) {
  int64_t b = (n + (int64_t)kThreads * per_thread - 1) / ((int64_t)kThreads * per_thread);
  if (b < 1) b = 1;
  if (b > (1 << 20)) b = 1 << 20;  // grid-stride loops cover the rest
  return (unsigned)b;
}

// ---- strided iteration ------------------------------------------------------------------

// Up to N operands over one iteration shape; dims innermost first, strides in bytes.
// Size-1 dims are dropped and dims contiguous for every operand coalesced (on the host).
template <int N>
struct Geom {
  int ndim;
  int64_t size[MAXD];
  int64_t stride[MAXD][N];
  char* base[N];
  __device__ inline void offsets(int64_t i, char** p) const {
#pragma unroll
    for (int k = 0; k < N; ++k) p[k] = base[k];
    if (ndim == 1) {
#pragma unroll
      for (int k = 0; k < N; ++k) p[k] += i * stride[0][k];
      return;
    }
    for (int d = 0; d < ndim; ++d) {
      const int64_t idx = i % size[d];
      i /= size[d];
#pragma unroll
      for (int k = 0; k < N; ++k) p[k] += idx * stride[d][k];
    }
  }
};

// Geometry of operands that all have ts[0]'s shape (the dispatcher broadcasts as stride-0
// views first). Returns numel.
template <int N>
int64_t make_geom(Geom<N>& g, const Tensor* const* ts, const char* op) {
  const Tensor& o = *ts[0];
  for (int k = 1; k < N; ++k) {
    bool ok = ts[k]->ndim == o.ndim;
    for (int d = 0; ok && d < o.ndim; ++d) ok = ts[k]->shape[d] == o.shape[d];
    if (!ok)
      raise(PyExc_ValueError, "%s(): operand shapes must match the output's (broadcast first): %s vs %s", op,
            shape_str(o).c_str(), shape_str(*ts[k]).c_str());
    if (ts[k]->device != o.device)
      raise(PyExc_RuntimeError, "%s(): expected all tensors on cuda:%d, got cuda:%d", op, o.device, ts[k]->device);
  }
  for (int k = 0; k < N; ++k) g.base[k] = ts[k]->data;
  int nd = 0;
  for (int d = o.ndim - 1; d >= 0; --d) {
    if (o.shape[d] == 1) continue;
    g.size[nd] = o.shape[d];
    for (int k = 0; k < N; ++k) g.stride[nd][k] = ts[k]->stride[d] * ts[k]->itemsize;
    ++nd;
  }
  if (nd > 1) {
    int w = 0;
    for (int i = 1; i < nd; ++i) {
      bool ok = true;
      for (int k = 0; k < N; ++k)
        if (g.stride[i][k] != g.stride[w][k] * g.size[w]) { ok = false; break; }
      if (ok) {
        g.size[w] *= g.size[i];
      } else {
        ++w;
        g.size[w] = g.size[i];
        for (int k = 0; k < N; ++k) g.stride[w][k] = g.stride[i][k];
      }
    }
    nd = w + 1;
  }
  if (nd == 0) {
    nd = 1;
    g.size[0] = 1;
    for (int k = 0; k < N; ++k) g.stride[0][k] = 0;
  }
  g.ndim = nd;
  return o.numel;
}

// f(char** p): p[k] points at operand k's element
template <int N, class F>
__global__ void elementwise_kernel(int64_t n, Geom<N> g, F f) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    char* p[N];
    g.offsets(i, p);
    f(p);
  }
}

// Contiguous operands of one type T, 16-byte aligned: VEC elements per load / store.
template <class T, int NIN, class Op>
__global__ void vectorized_kernel(int64_t nvec, T* out, const T* __restrict__ a, const T* __restrict__ b,
                                  const T* __restrict__ c, Op op) {
  constexpr int VEC = 16 / sizeof(T);
  struct alignas(16) V { T v[VEC]; };
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nvec; i += (int64_t)gridDim.x * blockDim.x) {
    V x = reinterpret_cast<const V*>(a)[i], y, z, r;
    if constexpr (NIN >= 2) y = reinterpret_cast<const V*>(b)[i];
    if constexpr (NIN >= 3) z = reinterpret_cast<const V*>(c)[i];
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      if constexpr (NIN == 1) r.v[j] = op(x.v[j]);
      else if constexpr (NIN == 2) r.v[j] = op(x.v[j], y.v[j]);
      else r.v[j] = op(x.v[j], y.v[j], z.v[j]);
    }
    reinterpret_cast<V*>(out)[i] = r;
  }
}

template <int N, class F>
void launch_elementwise(const char* op, const Geom<N>& g, int64_t n, int device, F f) {
  if (n <= 0) return;
  elementwise_kernel<N, F><<<grid_for(n), kThreads, 0, current_stream(device)>>>(n, g, f);
  check_launch(op);
}

template <class T, int NIN, class Op>
struct SameTypeF {
  Op f;
  __device__ void operator()(char** p) const {
    if constexpr (NIN == 1) *(T*)p[0] = f(*(const T*)p[1]);
    else if constexpr (NIN == 2) *(T*)p[0] = f(*(const T*)p[1], *(const T*)p[2]);
    else *(T*)p[0] = f(*(const T*)p[1], *(const T*)p[2], *(const T*)p[3]);
  }
};

// out = op(inputs...) with every operand of type T (NIN inputs): the vectorised kernel for
// contiguous aligned operands (plus an elementwise tail), the strided kernel otherwise.
template <class T, int NIN, class Op>
void same_type_op(const char* op, const Tensor* const* ts, Op f) {
  Geom<NIN + 1> g;
  const int64_t n = make_geom<NIN + 1>(g, ts, op);
  if (n <= 0) return;
  const int dev = ts[0]->device;
  constexpr int VEC = 16 / sizeof(T);
  bool contig = g.ndim == 1;
  for (int k = 0; contig && k <= NIN; ++k)
    contig = g.stride[0][k] == (int64_t)sizeof(T) && ((uintptr_t)g.base[k] % 16) == 0;
  int64_t done = 0;
  if (contig && n >= VEC * 4) {
    const int64_t nvec = n / VEC;
    vectorized_kernel<T, NIN, Op><<<grid_for(nvec), kThreads, 0, current_stream(dev)>>>(
        nvec, (T*)g.base[0], (const T*)g.base[1], NIN >= 2 ? (const T*)g.base[NIN >= 2 ? 2 : 1] : nullptr,
        NIN >= 3 ? (const T*)g.base[NIN >= 3 ? 3 : 1] : nullptr, f);
    check_launch(op);
    done = nvec * VEC;
    if (done == n) return;
    for (int k = 0; k <= NIN; ++k) g.base[k] += done * (int64_t)sizeof(T);
  }
  launch_elementwise<NIN + 1>(op, g, n - done, dev, SameTypeF<T, NIN, Op>{f});
}

}  // namespace ember
