// bmm: out[B,n,m] = a[B,n,k] @ b[B,k,m]. Floating dtypes go to cuBLAS (strided inputs as
// transposes / leading dimensions, copied only when no layout fits); integers, and every
// dtype when cuBLAS is not available, use a tiled shared-memory kernel.
#include <climits>
#include <memory>
#include <string>

#include <ember/ops.h>

#include "kernels.cuh"

namespace ember {

bool cublas_gemm(int device, int dtype, bool ta, bool tb, int m, int n, int k, const void* A, int lda,
                 long long sA, const void* B, int ldb, long long sB, void* C, int ldc, long long sC, int batch);
bool cublas_loaded();

namespace {

constexpr int TILE = 16;

template <class T>
struct ZeroF {
  __device__ void operator()(char** p) const { *(T*)p[0] = T(0); }
};

template <class T>
__global__ void gemm_tiled(int64_t n, int64_t m, int64_t k, const T* a, int64_t sa0, int64_t sa1, int64_t sa2,
                           const T* b, int64_t sb0, int64_t sb1, int64_t sb2, T* c, int64_t sc0, int64_t sc1,
                           int64_t sc2) {
  using A = acc_t<T>;
  __shared__ A ta[TILE][TILE + 1], tb[TILE][TILE + 1];
  const int64_t batch = blockIdx.z;
  const int64_t row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  a += batch * sa0;
  b += batch * sb0;
  A acc = 0;
  for (int64_t t = 0; t < k; t += TILE) {
    const int64_t ka = t + threadIdx.x, kb = t + threadIdx.y;
    ta[threadIdx.y][threadIdx.x] = (row < n && ka < k) ? (A)static_cast<compute_t<T>>(a[row * sa1 + ka * sa2]) : A(0);
    tb[threadIdx.y][threadIdx.x] = (kb < k && col < m) ? (A)static_cast<compute_t<T>>(b[kb * sb1 + col * sb2]) : A(0);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < TILE; ++j) acc += ta[threadIdx.y][j] * tb[j][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < m) c[batch * sc0 + row * sc1 + col * sc2] = cvt<T>(acc);
}

void k_bmm(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  const BmmArgs<MAXD> args = parse_bmm<MAXD>(a_, n_, kw_);
  const Tensor &out = args.out, &a = args.a, &b = args.b;
  const int64_t B = a.shape[0], n = a.shape[1], k = a.shape[2], m = b.shape[2];
  if (out.numel == 0) return;
  const int dev = out.device;
  cudaStream_t s = current_stream(dev);
  if (k == 0) {
    const Tensor* ts[1] = {&out};
    Geom<1> g;
    const int64_t cnt = make_geom<1>(g, ts, "bmm");
    dispatch_size(out.itemsize, "bmm", [&](auto tag) {
      using T = EMBER_T(tag);
      launch_elementwise<1>("bmm", g, cnt, dev, ZeroF<T>{});
    });
    return;
  }
  const bool fp = is_floating_code(out.dtype);
  const bool fits = n <= INT_MAX && m <= INT_MAX && k <= INT_MAX && B <= INT_MAX;
  if (fp && fits && cublas_loaded()) {
    Tensor A = a, Bm = b, O = out;
    bool acol, bcol, ocol;
    int64_t lda, ldb, ldc;
    std::unique_ptr<Scratch> sa, sb, so;
    if (!blas_layout(n, k, a.stride[1], a.stride[2], acol, lda)) {
      sa = std::make_unique<Scratch>(dev, (size_t)(a.numel * a.itemsize));
      A = Tensor::contiguous((char*)sa->ptr, a.dtype, 3, a.shape, dev);
      copy_tensor(A, a);
      acol = false;
      lda = std::max<int64_t>(1, k);
    }
    if (!blas_layout(k, m, b.stride[1], b.stride[2], bcol, ldb)) {
      sb = std::make_unique<Scratch>(dev, (size_t)(b.numel * b.itemsize));
      Bm = Tensor::contiguous((char*)sb->ptr, b.dtype, 3, b.shape, dev);
      copy_tensor(Bm, b);
      bcol = false;
      ldb = std::max<int64_t>(1, m);
    }
    if (!blas_layout(n, m, out.stride[1], out.stride[2], ocol, ldc) || ocol) {
      so = std::make_unique<Scratch>(dev, (size_t)(out.numel * out.itemsize));
      O = Tensor::contiguous((char*)so->ptr, out.dtype, 3, out.shape, dev);
      ldc = std::max<int64_t>(1, m);
    }
    // row-major C = A B  <=>  column-major C^T = B^T A^T: a row-major operand is its own
    // transpose in column-major order (no op); a column-major one needs op = T.
    const long long sA = B > 1 ? A.stride[0] : 0, sB = B > 1 ? Bm.stride[0] : 0, sC = B > 1 ? O.stride[0] : 0;
    cublas_gemm(dev, out.dtype, bcol, acol, (int)m, (int)n, (int)k, Bm.data, (int)ldb, sB, A.data, (int)lda, sA,
                O.data, (int)ldc, sC, (int)B);
    if (so) copy_tensor(out, O);
    return;
  }
  dispatch<M_NUM>(out.dtype, "bmm", [&](auto tag) {
    using T = EMBER_T(tag);
    if (B > 65535) raise(PyExc_ValueError, "bmm(): batch %lld too large for the fallback kernel", (long long)B);
    dim3 grid((unsigned)((m + TILE - 1) / TILE), (unsigned)((n + TILE - 1) / TILE), (unsigned)B);
    gemm_tiled<T><<<grid, dim3(TILE, TILE), 0, s>>>(n, m, k, (const T*)a.data, a.stride[0], a.stride[1], a.stride[2],
                                                  (const T*)b.data, b.stride[0], b.stride[1], b.stride[2],
                                                  (T*)out.data, out.stride[0], out.stride[1], out.stride[2]);
    check_launch("bmm");
  });
}
EMBER_KERNEL("bmm", k_bmm);

}  // namespace

}  // namespace ember
