// softmax / log_softmax along one dim: one block per row (warp-shuffle max and sum),
// three passes over the row: max, sum of exp(x - max), write.
#include "kernels.cuh"

namespace ember {

namespace {

struct RowGeom {
  int nk;
  int64_t ksize[MAXD], kx[MAXD], ko[MAXD];
  int64_t rows, L, sx, so;  // row count, row length, strides along dim (elements)
};

template <class A>
__device__ A block_reduce(A v, bool is_max, A* smem) {
  for (int d = 16; d > 0; d >>= 1) {
    const A o = __shfl_down_sync(0xffffffffu, v, d);
    v = is_max ? (o > v || o != o ? o : v) : v + o;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x / 32) ? smem[lane] : (is_max ? -(A)INFINITY : A(0));
    for (int d = 16; d > 0; d >>= 1) {
      const A o = __shfl_down_sync(0xffffffffu, v, d);
      v = is_max ? (o > v || o != o ? o : v) : v + o;
    }
    if (lane == 0) smem[0] = v;
  }
  __syncthreads();
  return smem[0];
}

template <class T, bool Log>
__global__ void softmax_kernel(RowGeom g, const T* __restrict__ x, T* out) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  __shared__ A smem[32];
  for (int64_t r = blockIdx.x; r < g.rows; r += gridDim.x) {
    int64_t xo = 0, oo = 0, q = r;
    for (int d = 0; d < g.nk; ++d) {
      const int64_t i = q % g.ksize[d];
      q /= g.ksize[d];
      xo += i * g.kx[d];
      oo += i * g.ko[d];
    }
    const T* xp = x + xo;
    T* op = out + oo;
    A m = -(A)INFINITY;
    for (int64_t j = threadIdx.x; j < g.L; j += blockDim.x) {
      const A v = static_cast<A>(xp[j * g.sx]);
      m = (v > m || v != v) ? v : m;
    }
    m = block_reduce<A>(m, true, smem);
    A s = 0;
    for (int64_t j = threadIdx.x; j < g.L; j += blockDim.x) s += exp(static_cast<A>(xp[j * g.sx]) - m);
    s = block_reduce<A>(s, false, smem);
    if (Log) {
      const A ls = log(s);
      for (int64_t j = threadIdx.x; j < g.L; j += blockDim.x) op[j * g.so] = cvt<T>(static_cast<A>(xp[j * g.sx]) - m - ls);
    } else {
      const A inv = A(1) / s;
      for (int64_t j = threadIdx.x; j < g.L; j += blockDim.x) op[j * g.so] = cvt<T>(exp(static_cast<A>(xp[j * g.sx]) - m) * inv);
    }
  }
}

template <bool Log>
void softmax_op(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* const name = Log ? "log_softmax" : "softmax";
  Args args(name, a, n, kw, {"out", "x", "dim"}, 3);
  Tensor out = args.out(0), x = args.tensor(1);
  check_same_dtype(name, out, x);
  check_same_shape(name, out, x);
  const int dim = args.get_dim(2, x.ndim);
  if (x.numel == 0) return;
  RowGeom g{};
  g.rows = 1;
  for (int d = x.ndim - 1; d >= 0; --d) {
    if (d == dim || x.shape[d] == 1) continue;
    g.ksize[g.nk] = x.shape[d];
    g.kx[g.nk] = x.stride[d];
    g.ko[g.nk] = out.stride[d];
    g.rows *= x.shape[d];
    ++g.nk;
  }
  g.L = x.ndim ? x.shape[dim] : 1;
  g.sx = x.ndim ? x.stride[dim] : 0;
  g.so = out.ndim ? out.stride[dim] : 0;
  int threads = 32;
  while (threads < 512 && threads < g.L) threads *= 2;
  const unsigned blocks = (unsigned)std::min<int64_t>(g.rows, 1 << 20);
  dispatch<M_FLOAT>(x.dtype, name, [&](auto tag) {
    using T = EMBER_T(tag);
    softmax_kernel<T, Log><<<blocks, threads, 0, current_stream(x.device)>>>(g, (const T*)x.data, (T*)out.data);
    check_launch(name);
  });
}

EMBER_KERNEL("softmax", softmax_op<false>);
EMBER_KERNEL("log_softmax", softmax_op<true>);

}  // namespace

}  // namespace ember
