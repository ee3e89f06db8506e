// sort along one dim: stable (ties keep their order), NaN above every number (last
// ascending, first descending), as the CPU backend. Rows of up to 2048 elements: a bitonic
// sort of (value, index) pairs in shared memory, one block per row; longer rows: a merge
// sort per row in scratch memory.
#include <ember/ops.h>

#include "kernels.cuh"

namespace ember {

namespace {

constexpr int64_t kPad = INT64_MAX;

template <class C>
__device__ inline bool before(C av, int64_t ai, C bv, int64_t bi, bool desc) {
  if (ai == kPad) return false;
  if (bi == kPad) return true;
  const bool an = av != av, bn = bv != bv;
  if (an || bn) {
    if (an && bn) return ai < bi;
    return desc ? an : bn;  // NaN is the largest value
  }
  if (av != bv) return desc ? av > bv : av < bv;
  return ai < bi;
}

struct SortGeom {
  int nk;
  int64_t ksize[MAXD], kx[MAXD], kv[MAXD], ki[MAXD];
  int64_t rows, L, sx, sv, si;
  __device__ void row(int64_t r, int64_t& xo, int64_t& vo, int64_t& io) const {
    xo = vo = io = 0;
    for (int d = 0; d < nk; ++d) {
      const int64_t i = r % ksize[d];
      r /= ksize[d];
      xo += i * kx[d];
      vo += i * kv[d];
      io += i * ki[d];
    }
  }
};

template <class T>
__global__ void bitonic_kernel(SortGeom g, int P, const T* __restrict__ x, T* values, int64_t* indices, bool desc) {
  using C = compute_t<T>;
  extern __shared__ __align__(16) char smem[];
  C* kv = reinterpret_cast<C*>(smem);
  int64_t* ki = reinterpret_cast<int64_t*>(smem + ((P * sizeof(C) + 15) / 16) * 16);
  for (int64_t r = blockIdx.x; r < g.rows; r += gridDim.x) {
    int64_t xo, vo, io;
    g.row(r, xo, vo, io);
    for (int j = threadIdx.x; j < P; j += blockDim.x) {
      if (j < g.L) {
        kv[j] = static_cast<C>(x[xo + j * g.sx]);
        ki[j] = j;
      } else {
        kv[j] = C(0);
        ki[j] = kPad;
      }
    }
    __syncthreads();
    for (int k = 2; k <= P; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        for (int t = threadIdx.x; t < P; t += blockDim.x) {
          const int u = t ^ j;
          if (u > t) {
            const bool up = (t & k) == 0;
            const bool swap = up ? before(kv[u], ki[u], kv[t], ki[t], desc) : before(kv[t], ki[t], kv[u], ki[u], desc);
            if (swap) {
              const C tv = kv[t];
              kv[t] = kv[u];
              kv[u] = tv;
              const int64_t ti = ki[t];
              ki[t] = ki[u];
              ki[u] = ti;
            }
          }
        }
        __syncthreads();
      }
    }
    for (int j = threadIdx.x; j < g.L; j += blockDim.x) {
      values[vo + j * g.sv] = cvt<T>(kv[j]);
      indices[io + j * g.si] = ki[j];
    }
    __syncthreads();
  }
}

// one thread per row: bottom-up merge sort of (value, index) in scratch (a, b: 2 L each)
template <class T>
__global__ void merge_kernel(SortGeom g, const T* __restrict__ x, T* values, int64_t* indices, bool desc,
                             compute_t<T>* va, int64_t* ia, compute_t<T>* vb, int64_t* ib) {
  using C = compute_t<T>;
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < g.rows; r += (int64_t)gridDim.x * blockDim.x) {
    int64_t xo, vo, io;
    g.row(r, xo, vo, io);
    C* sv = va + r * g.L;
    int64_t* si = ia + r * g.L;
    C* dv = vb + r * g.L;
    int64_t* di = ib + r * g.L;
    for (int64_t j = 0; j < g.L; ++j) sv[j] = static_cast<C>(x[xo + j * g.sx]), si[j] = j;
    for (int64_t w = 1; w < g.L; w <<= 1) {
      for (int64_t lo = 0; lo < g.L; lo += 2 * w) {
        const int64_t mid = min(lo + w, g.L), hi = min(lo + 2 * w, g.L);
        int64_t p = lo, q = mid, o = lo;
        while (p < mid && q < hi) {
          if (before(sv[q], si[q], sv[p], si[p], desc)) dv[o] = sv[q], di[o++] = si[q++];
          else dv[o] = sv[p], di[o++] = si[p++];
        }
        while (p < mid) dv[o] = sv[p], di[o++] = si[p++];
        while (q < hi) dv[o] = sv[q], di[o++] = si[q++];
      }
      C* tv = sv; sv = dv; dv = tv;
      int64_t* ti = si; si = di; di = ti;
    }
    for (int64_t j = 0; j < g.L; ++j) values[vo + j * g.sv] = cvt<T>(sv[j]), indices[io + j * g.si] = si[j];
  }
}

void k_sort(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const SortArgs<MAXD> args = parse_sort<MAXD>(a, n, kw);
  const Tensor &values = args.values, &indices = args.indices, &x = args.x;
  if (x.numel == 0) return;
  const int dim = args.dim;
  SortGeom g{};
  g.rows = 1;
  for (int d = x.ndim - 1; d >= 0; --d) {
    if (d == dim || x.shape[d] == 1) continue;
    g.ksize[g.nk] = x.shape[d];
    g.kx[g.nk] = x.stride[d];
    g.kv[g.nk] = values.stride[d];
    g.ki[g.nk] = indices.stride[d];
    g.rows *= x.shape[d];
    ++g.nk;
  }
  g.L = x.ndim ? x.shape[dim] : 1;
  g.sx = x.ndim ? x.stride[dim] : 0;
  g.sv = values.ndim ? values.stride[dim] : 0;
  g.si = indices.ndim ? indices.stride[dim] : 0;
  cudaStream_t s = current_stream(x.device);
  // x may alias values: both paths read a whole row before writing it
  dispatch<M_ALL>(x.dtype, "sort", [&](auto tag) {
    using T = EMBER_T(tag);
    using C = compute_t<T>;
    if (g.L <= 2048) {
      int P = 1;
      while (P < g.L) P <<= 1;
      const size_t shm = ((P * sizeof(C) + 15) / 16) * 16 + P * sizeof(int64_t);
      const int threads = P < 512 ? (P < 32 ? 32 : P) : 512;
      bitonic_kernel<T><<<(unsigned)std::min<int64_t>(g.rows, 1 << 20), threads, shm, s>>>(
          g, P, (const T*)x.data, (T*)values.data, (int64_t*)indices.data, args.descending);
    } else {
      const size_t per = (size_t)(g.rows * g.L);
      Scratch va(x.device, per * sizeof(C)), vb(x.device, per * sizeof(C));
      Scratch ia(x.device, per * 8), ib(x.device, per * 8);
      merge_kernel<T><<<grid_for(g.rows), 64, 0, s>>>(g, (const T*)x.data, (T*)values.data, (int64_t*)indices.data,
                                                      args.descending, (C*)va.ptr, (int64_t*)ia.ptr, (C*)vb.ptr,
                                                      (int64_t*)ib.ptr);
    }
    check_launch("sort");
  });
}
EMBER_KERNEL("sort", k_sort);

}  // namespace

}  // namespace ember
