// Reductions: sum, prod, mean, max, min, var, std (over a set of dims, out keeps them as size 1)
// and argmax / argmin (one dim). One block per output reduces with warp shuffles; many small
// reductions over a strided dim use one thread per output (coalesced across outputs).
// Sums, means and products of the half types accumulate in float (acc_t) and round once.
#include <cfloat>
#include <limits>

#include "kernels.cuh"

namespace ember {

namespace {

template <class T> __device__ inline T shfl_down(T v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }

// ---- the reduction ops: init / load / combine / finish ----------------------------------
template <class T> struct SumR {
  using A = acc_t<T>;
  __device__ A init() const { return A(0); }
  __device__ A load(T v, int64_t) const { return (A)static_cast<compute_t<T>>(v); }
  __device__ A combine(A a, A b) const { return a + b; }
  __device__ T finish(A a, int64_t) const { return cvt<T>(a); }
};
template <class T> struct ProdR {
  using A = acc_t<T>;
  __device__ A init() const { return A(1); }
  __device__ A load(T v, int64_t) const { return (A)static_cast<compute_t<T>>(v); }
  __device__ A combine(A a, A b) const { return a * b; }
  __device__ T finish(A a, int64_t) const { return cvt<T>(a); }
};
template <class T> struct MeanR : SumR<T> {
  __device__ T finish(acc_t<T> a, int64_t n) const { return cvt<T>(a / (acc_t<T>)n); }
};
template <class T, bool Max> struct ExtR {  // NaN propagates
  using A = compute_t<T>;
  __device__ A init() const {
    if constexpr (is_fp_v<T>) return Max ? -(A)INFINITY : (A)INFINITY;
    else if constexpr (std::is_same_v<T, bool>) return !Max;
    else return Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
  __device__ A load(T v, int64_t) const { return static_cast<A>(v); }
  __device__ A combine(A a, A b) const {
    if constexpr (is_fp_v<T>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return Max ? (a > b ? a : b) : (a < b ? a : b);
  }
  __device__ T finish(A a, int64_t) const { return cvt<T>(a); }
};
template <class C> struct ValIdx {
  C v;
  int64_t i;
};
template <class T, bool Max> struct ArgR {  // first index of the extreme; NaN wins
  using C = compute_t<T>;
  using A = ValIdx<C>;
  __device__ A init() const { return {C(0), -1}; }
  __device__ A load(T v, int64_t i) const { return {static_cast<C>(v), i}; }
  __device__ A combine(A a, A b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    bool take_b;
    if constexpr (is_fp_v<T>) {
      const bool an = a.v != a.v, bn = b.v != b.v;
      if (an || bn) take_b = bn && (!an || b.i < a.i);
      else take_b = Max ? (b.v > a.v || (b.v == a.v && b.i < a.i)) : (b.v < a.v || (b.v == a.v && b.i < a.i));
    } else {
      take_b = Max ? (b.v > a.v || (b.v == a.v && b.i < a.i)) : (b.v < a.v || (b.v == a.v && b.i < a.i));
    }
    return take_b ? b : a;
  }
};
template <class C> __device__ inline ValIdx<C> shfl_down(ValIdx<C> a, int d) {
  return {shfl_down(a.v, d), shfl_down(a.i, d)};
}
__device__ inline bool shfl_down(bool v, int d) { return __shfl_down_sync(0xffffffffu, (int)v, d) != 0; }
__device__ inline int8_t shfl_down(int8_t v, int d) { return (int8_t)__shfl_down_sync(0xffffffffu, (int)v, d); }
__device__ inline uint8_t shfl_down(uint8_t v, int d) { return (uint8_t)__shfl_down_sync(0xffffffffu, (int)v, d); }
__device__ inline int16_t shfl_down(int16_t v, int d) { return (int16_t)__shfl_down_sync(0xffffffffu, (int)v, d); }

// Geometry: outputs enumerate the kept dims (row-major), each reduces over the reduced dims.
struct RGeom {
  int nk, nr;
  int64_t ksize[MAXD], kx[MAXD], ko[MAXD];  // kept dims, innermost first: size, x / out strides
  int64_t rsize[MAXD], rx[MAXD];            // reduced dims, innermost first
  int64_t nout, R;
  __device__ inline void out_offsets(int64_t o, int64_t& xo, int64_t& oo) const {
    xo = 0;
    oo = 0;
    for (int d = 0; d < nk; ++d) {
      const int64_t i = o % ksize[d];
      o /= ksize[d];
      xo += i * kx[d];
      oo += i * ko[d];
    }
  }
  __device__ inline int64_t r_offset(int64_t r) const {
    if (nr == 1) return r * rx[0];
    int64_t off = 0;
    for (int d = 0; d < nr; ++d) {
      const int64_t i = r % rsize[d];
      r /= rsize[d];
      off += i * rx[d];
    }
    return off;
  }
};

RGeom make_rgeom(const Tensor& out, const Tensor& x, const bool* mask) {
  RGeom g{};
  g.nout = 1;
  g.R = 1;
  for (int d = x.ndim - 1; d >= 0; --d) {
    if (mask[d]) {
      if (x.shape[d] == 1) continue;
      // merge with the previous (inner) reduced dim when contiguous
      if (g.nr > 0 && g.rx[g.nr - 1] * g.rsize[g.nr - 1] == x.stride[d]) {
        g.rsize[g.nr - 1] *= x.shape[d];
      } else {
        g.rsize[g.nr] = x.shape[d];
        g.rx[g.nr] = x.stride[d];
        ++g.nr;
      }
      g.R *= x.shape[d];
    } else {
      if (x.shape[d] == 1) continue;
      g.ksize[g.nk] = x.shape[d];
      g.kx[g.nk] = x.stride[d];
      g.ko[g.nk] = out.stride[d];
      ++g.nk;
      g.nout *= x.shape[d];
    }
  }
  if (g.nr == 0) {
    g.nr = 1;
    g.rsize[0] = 1;
    g.rx[0] = 0;
  }
  return g;
}

template <class T, class To, class Op>
__global__ void reduce_block_kernel(RGeom g, const T* __restrict__ x, To* out, Op op) {
  using A = decltype(op.init());
  __shared__ alignas(16) char smem_raw[32 * sizeof(A)];
  A* smem = reinterpret_cast<A*>(smem_raw);
  for (int64_t o = blockIdx.x; o < g.nout; o += gridDim.x) {
    int64_t xo, oo;
    g.out_offsets(o, xo, oo);
    const T* xp = x + xo;
    A acc = op.init();
    for (int64_t r = threadIdx.x; r < g.R; r += blockDim.x) acc = op.combine(acc, op.load(xp[g.r_offset(r)], r));
    for (int d = 16; d > 0; d >>= 1) acc = op.combine(acc, shfl_down(acc, d));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) smem[warp] = acc;
    __syncthreads();
    if (warp == 0) {
      acc = lane < (int)(blockDim.x / 32) ? smem[lane] : op.init();
      for (int d = 16; d > 0; d >>= 1) acc = op.combine(acc, shfl_down(acc, d));
      if (lane == 0) {
        if constexpr (std::is_same_v<A, ValIdx<compute_t<T>>>) out[oo] = acc.i < 0 ? 0 : acc.i;
        else out[oo] = op.finish(acc, g.R);
      }
    }
    __syncthreads();
  }
}

template <class T, class To, class Op>
__global__ void reduce_thread_kernel(RGeom g, const T* __restrict__ x, To* out, Op op) {
  using A = decltype(op.init());
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < g.nout; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t xo, oo;
    g.out_offsets(o, xo, oo);
    A acc = op.init();
    for (int64_t r = 0; r < g.R; ++r) acc = op.combine(acc, op.load(x[xo + g.r_offset(r)], r));
    if constexpr (std::is_same_v<A, ValIdx<compute_t<T>>>) out[oo] = acc.i < 0 ? 0 : acc.i;
    else out[oo] = op.finish(acc, g.R);
  }
}

template <class T, class To, class Op>
void run_reduce(const char* name, const Tensor& out, const Tensor& x, const bool* mask, Op op) {
  if (out.numel == 0) return;
  RGeom g = make_rgeom(out, x, mask);
  cudaStream_t s = current_stream(out.device);
  const bool inner_contig = g.rx[0] == 1;
  if (!inner_contig && g.nout >= 2048) {
    reduce_thread_kernel<T, To, Op><<<grid_for(g.nout), kThreads, 0, s>>>(g, (const T*)x.data, (To*)out.data, op);
  } else {
    int threads = 32;
    while (threads < 512 && threads < g.R) threads *= 2;
    const unsigned blocks = (unsigned)std::min<int64_t>(g.nout, 1 << 20);
    reduce_block_kernel<T, To, Op><<<blocks, threads, 0, s>>>(g, (const T*)x.data, (To*)out.data, op);
  }
  check_launch(name);
}

template <template <class> class Op, unsigned Mask>
void reduce_kernel(const char* name, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args(name, a, n, kw, {"out", "x", "dims"}, 2);
  Tensor out = args.out(0), x = args.tensor(1);
  check_same_dtype(name, out, x);
  bool mask[MAXD];
  args.get_dims(2, x.ndim, mask);
  if (out.ndim != x.ndim) raise(PyExc_ValueError, "%s(): out must keep the reduced dims as size 1", name);
  // an empty reduced extent (R = 0) writes the identity (sum 0, prod 1, mean NaN)
  dispatch<Mask>(x.dtype, name, [&](auto tag) {
    using T = EMBER_T(tag);
    run_reduce<T, T>(name, out, x, mask, Op<T>{});
  });
}

template <class T> using MaxR = ExtR<T, true>;
template <class T> using MinR = ExtR<T, false>;

void k_sum(PyObject* const* a, Py_ssize_t n, PyObject* kw) { reduce_kernel<SumR, M_ALL>("sum", a, n, kw); }
EMBER_KERNEL("sum", k_sum);
void k_prod(PyObject* const* a, Py_ssize_t n, PyObject* kw) { reduce_kernel<ProdR, M_ALL>("prod", a, n, kw); }
EMBER_KERNEL("prod", k_prod);
void k_mean(PyObject* const* a, Py_ssize_t n, PyObject* kw) { reduce_kernel<MeanR, M_FLOAT>("mean", a, n, kw); }
EMBER_KERNEL("mean", k_mean);
void k_max(PyObject* const* a, Py_ssize_t n, PyObject* kw) { reduce_kernel<MaxR, M_ALL>("max", a, n, kw); }
EMBER_KERNEL("max", k_max);
void k_min(PyObject* const* a, Py_ssize_t n, PyObject* kw) { reduce_kernel<MinR, M_ALL>("min", a, n, kw); }
EMBER_KERNEL("min", k_min);

template <bool Max>
void arg_kernel(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* const name = Max ? "argmax" : "argmin";
  Args args(name, a, n, kw, {"out", "x", "dim"}, 3);
  Tensor out = args.out(0), x = args.tensor(1);
  check_dtype(name, out, kInt64, "out");
  const int dim = args.get_dim(2, x.ndim);
  bool mask[MAXD] = {};
  if (x.ndim) mask[dim] = true;
  if (x.numel == 0) raise(PyExc_IndexError, "%s(): cannot reduce an empty tensor", name);
  dispatch<M_ALL>(x.dtype, name, [&](auto tag) {
    using T = EMBER_T(tag);
    run_reduce<T, int64_t>(name, out, x, mask, ArgR<T, Max>{});
  });
}
EMBER_KERNEL("argmax", arg_kernel<true>);
EMBER_KERNEL("argmin", arg_kernel<false>);

// ---- var / std: two passes (mean, then squared deviations) in double for every float dtype,
// the square root taken before the one rounding to out's dtype, as PyTorch's CPU kernels: the
// squared deviations of float32 values near 1e30 do not overflow (std([1e30, -1e30, 0, 1]) is
// 8.2e29), and std of float32 values near 1e-30 is not 0 although their variance is.
__device__ inline double block_sum(double v, double* smem) {
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x / 32) ? smem[lane] : 0.0;
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    if (lane == 0) smem[32] = v;
  }
  __syncthreads();
  v = smem[32];
  __syncthreads();  // every thread has read the total before smem is reused
  return v;
}

// PyTorch divides by max(n - correction, 0): 0 / 0 (one element, correction 1) is NaN
__device__ inline double var_finish(double m2, int64_t n, double correction, bool sq) {
  const double v = m2 / fmax((double)n - correction, 0.0);
  return sq ? sqrt(v) : v;
}

template <class T>
__device__ inline double wide(T v) { return (double)static_cast<compute_t<T>>(v); }

template <class T>
__global__ void var_block_kernel(RGeom g, const T* __restrict__ x, T* out, double correction, bool sq) {
  __shared__ double smem[33];
  for (int64_t o = blockIdx.x; o < g.nout; o += gridDim.x) {
    int64_t xo, oo;
    g.out_offsets(o, xo, oo);
    const T* xp = x + xo;
    double s = 0;
    for (int64_t r = threadIdx.x; r < g.R; r += blockDim.x) s += wide(xp[g.r_offset(r)]);
    const double mean = block_sum(s, smem) / (double)g.R;
    double q = 0;
    for (int64_t r = threadIdx.x; r < g.R; r += blockDim.x) {
      const double d = wide(xp[g.r_offset(r)]) - mean;
      q += d * d;
    }
    q = block_sum(q, smem);
    if (threadIdx.x == 0) out[oo] = cvt<T>(var_finish(q, g.R, correction, sq));
  }
}

template <class T>
__global__ void var_thread_kernel(RGeom g, const T* __restrict__ x, T* out, double correction, bool sq) {
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < g.nout; o += (int64_t)gridDim.x * blockDim.x) {
    int64_t xo, oo;
    g.out_offsets(o, xo, oo);
    double s = 0;
    for (int64_t r = 0; r < g.R; ++r) s += wide(x[xo + g.r_offset(r)]);
    const double mean = s / (double)g.R;
    double q = 0;
    for (int64_t r = 0; r < g.R; ++r) {
      const double d = wide(x[xo + g.r_offset(r)]) - mean;
      q += d * d;
    }
    out[oo] = cvt<T>(var_finish(q, g.R, correction, sq));
  }
}

template <bool Sqrt>
void var_std(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* const name = Sqrt ? "std" : "var";
  Args args(name, a, n, kw, {"out", "x", "dims", "correction"}, 2);
  Tensor out = args.out(0), x = args.tensor(1);
  check_same_dtype(name, out, x);
  bool mask[MAXD];
  args.get_dims(2, x.ndim, mask);
  if (out.ndim != x.ndim) raise(PyExc_ValueError, "%s(): out must keep the reduced dims as size 1", name);
  const double correction = args.has(3) ? args.get_double(3) : 1.0;
  dispatch<M_FLOAT>(x.dtype, name, [&](auto tag) {
    using T = EMBER_T(tag);
    if (out.numel == 0) return;
    RGeom g = make_rgeom(out, x, mask);
    cudaStream_t s = current_stream(out.device);
    if (g.rx[0] != 1 && g.nout >= 2048) {
      var_thread_kernel<T><<<grid_for(g.nout), kThreads, 0, s>>>(g, (const T*)x.data, (T*)out.data, correction, Sqrt);
    } else {
      int threads = 32;
      while (threads < 512 && threads < g.R) threads *= 2;
      const unsigned blocks = (unsigned)std::min<int64_t>(g.nout, 1 << 20);
      var_block_kernel<T><<<blocks, threads, 0, s>>>(g, (const T*)x.data, (T*)out.data, correction, Sqrt);
    }
    check_launch(name);
  });
}
EMBER_KERNEL("var", var_std<false>);
EMBER_KERNEL("std", var_std<true>);

}  // namespace

}  // namespace ember
