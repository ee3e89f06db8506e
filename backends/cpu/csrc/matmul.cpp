// bmm: out[B,n,m] = a[B,n,k] @ b[B,k,m].  float32/float64 go to OpenBLAS (scipy-openblas32,
// dlopened at runtime by load_blas), float32 products from 2^21 multiply-adds to oneDNN when
// it is loaded (onednn.cpp); float16/bfloat16 are widened to float32 for sgemm;
// integers (and everything when no BLAS is loaded) use a C++ loop parallel over B*n rows.
#include <dlfcn.h>

#include <mutex>

#include <ember/ops.h>

#include "blas.h"
#include "ember.h"
#include "onednn.h"

namespace ember {

namespace {

enum { kRowMajor = 101, kNoTrans = 111, kTrans = 112 };
using sgemm_t = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using dgemm_t = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                         double*, int);
using setnt_t = void (*)(int);

sgemm_t g_sgemm = nullptr;
dgemm_t g_dgemm = nullptr;
setnt_t g_setnt = nullptr;
std::mutex g_blas_mu;

template <class T>
void gemm(int ta, int tb, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c, int ldc,
          T beta = T(0)) {
  if constexpr (std::is_same_v<T, float>)
    g_sgemm(kRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  else
    g_dgemm(kRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

// Runs block(i, r0, r1, c0, c1) over B GEMMs of (n x m) outputs with inner size k.
// OpenBLAS runs single-threaded (load_blas); all parallelism is ember's pool, so no BLAS
// threads spin after a GEMM while the next kernels want the cores.
template <class F>
void split_gemms(int64_t B, int64_t n, int64_t m, int64_t k, F&& block) {
  const int nt = in_parallel_region() ? 1 : get_num_threads();  // (nested: one thread)
  const int64_t work = n * m * k;
  if (nt <= 1 || B * work <= 48 * 48 * 48) {
    for (int64_t i = 0; i < B; ++i) block(i, 0, n, 0, m);
  } else if (B >= nt) {
    // many independent GEMMs: the batch spread over the pool
    parallel_for(0, B, 1, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) block(i, 0, n, 0, m);
    });
  } else {
    // one (or a few) large GEMMs: each split into nt panels along the longer output side
    // (multiples of 16 so the BLAS micro-kernels stay full)
    const bool by_cols = m >= n;
    const int64_t len = by_cols ? m : n;
    int64_t chunk = (len + nt - 1) / nt;
    chunk = std::max<int64_t>(16, (chunk + 15) / 16 * 16);
    const int64_t parts = (len + chunk - 1) / chunk;
    parallel_for(0, B * parts, 1, [&](int64_t s, int64_t e) {
      for (int64_t t = s; t < e; ++t) {
        const int64_t i = t / parts, p0 = (t % parts) * chunk, p1 = std::min(len, p0 + chunk);
        if (by_cols) block(i, 0, n, p0, p1);
        else block(i, p0, p1, 0, m);
      }
    });
  }
}

template <class T>
void bmm_blas(const Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t B = a.shape[0], n = a.shape[1], k = a.shape[2], m = b.shape[2];
  std::vector<T> ta_buf, tb_buf, tc_buf;
  Tensor A = a, Bm = b, O = out;
  bool acol, bcol, ocol;  // column-major (transposed) layouts: see blas_layout
  int64_t lda, ldb, ldc;
  if (!blas_layout(n, k, a.stride[1], a.stride[2], acol, lda)) {
    ta_buf.resize((size_t)(B * n * k));
    A = Tensor::contiguous((char*)ta_buf.data(), a.dtype, 3, a.shape);
    copy_tensor(A, a);
    acol = false;
    lda = std::max<int64_t>(1, k);
  }
  if (!blas_layout(k, m, b.stride[1], b.stride[2], bcol, ldb)) {
    tb_buf.resize((size_t)(B * k * m));
    Bm = Tensor::contiguous((char*)tb_buf.data(), b.dtype, 3, b.shape);
    copy_tensor(Bm, b);
    bcol = false;
    ldb = std::max<int64_t>(1, m);
  }
  if (!blas_layout(n, m, out.stride[1], out.stride[2], ocol, ldc) || ocol) {
    tc_buf.resize((size_t)(B * n * m));
    O = Tensor::contiguous((char*)tc_buf.data(), out.dtype, 3, out.shape);
    ldc = std::max<int64_t>(1, m);
  }
  const int transa = acol ? kTrans : kNoTrans, transb = bcol ? kTrans : kNoTrans;
  const int64_t sa = A.stride[0], sb = Bm.stride[0], sc = O.stride[0];
  const T* pa = (const T*)A.data;
  const T* pb = (const T*)Bm.data;
  T* pc = (T*)O.data;
  // Rows [r0, r1) and columns [c0, c1) of batch i: row-major offsets of the sub-matrices
  // of A, B and C.
  auto block = [&](int64_t i, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const T* ai = pa + i * sa + (transa == kNoTrans ? r0 * lda : r0);
    const T* bi = pb + i * sb + (transb == kNoTrans ? c0 : c0 * ldb);
    T* ci = pc + i * sc + r0 * ldc + c0;
    gemm<T>(transa, transb, (int)(r1 - r0), (int)(c1 - c0), (int)k, ai, (int)lda, bi, (int)ldb, ci, (int)ldc);
  };
  split_gemms(B, n, m, k, block);
  if (O.data != out.data) copy_tensor(out, O);
}

template <class T>
void bmm_loop(const Tensor& out, const Tensor& a, const Tensor& b) {
  using A = std::conditional_t<is_fp_v<T>, compute_t<T>, int64_t>;
  const int64_t B = a.shape[0], n = a.shape[1], k = a.shape[2], m = b.shape[2];
  const int64_t sa0 = a.stride[0], sa1 = a.stride[1], sa2 = a.stride[2];
  const int64_t sb0 = b.stride[0], sb1 = b.stride[1], sb2 = b.stride[2];
  const int64_t so0 = out.stride[0], so1 = out.stride[1], so2 = out.stride[2];
  const T* pa = (const T*)a.data;
  const T* pb = (const T*)b.data;
  T* po = (T*)out.data;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, k * m));
  parallel_for(0, B * n, grain, [&](int64_t s, int64_t e) {
    std::vector<A> acc((size_t)m);
    for (int64_t r = s; r < e; ++r) {
      const int64_t bi = r / n, i = r % n;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t kk = 0; kk < k; ++kk) {
        const A av = (A) static_cast<compute_t<T>>(pa[bi * sa0 + i * sa1 + kk * sa2]);
        const T* brp = pb + bi * sb0 + kk * sb1;
        if constexpr (is_fp_v<T>) {
          for (int64_t j = 0; j < m; ++j) acc[(size_t)j] += av * static_cast<A>(brp[j * sb2]);
        } else {
          for (int64_t j = 0; j < m; ++j)
            acc[(size_t)j] = (int64_t)((uint64_t)acc[(size_t)j] + (uint64_t)av * (uint64_t)(int64_t)brp[j * sb2]);
        }
      }
      T* orow = po + bi * so0 + i * so1;
      for (int64_t j = 0; j < m; ++j) orow[j * so2] = cvt<T>(acc[(size_t)j]);
    }
  });
}

void run_bmm(const Tensor& out, const Tensor& a, const Tensor& b);

void k_bmm(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  const BmmArgs<MAXD> args = parse_bmm<MAXD>(a_, n_, kw_);
  run_bmm(args.out, args.a, args.b);
}
EMBER_KERNEL("bmm", k_bmm);

// t as a batch of one (a leading dim of size 1)
Tensor batch_of_one(const Tensor& t) {
  Tensor r = t;
  r.ndim = t.ndim + 1;
  r.shape[0] = 1;
  r.stride[0] = std::max<int64_t>(1, t.numel);
  for (int d = 0; d < t.ndim; ++d) {
    r.shape[d + 1] = t.shape[d];
    r.stride[d + 1] = t.stride[d];
  }
  return r;
}

// mm: out[n,m] = a[n,k] @ b[k,m], bmm's kernel on batch-of-one headers (no Python views)
void k_mm(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args("mm", a_, n_, kw_, {"out", "a", "b"}, 3);
  const Tensor out = args.out(0), a = args.tensor(1), b = args.tensor(2);
  check_same_dtype("mm", out, a);
  check_same_dtype("mm", out, b);
  if (a.ndim != 2 || b.ndim != 2 || out.ndim != 2 || a.shape[1] != b.shape[0] ||
      out.shape[0] != a.shape[0] || out.shape[1] != b.shape[1])
    raise(PyExc_ValueError, "mm(): expected matrices [n, k] @ [k, m] -> [n, m], got %s, %s and out %s",
          shape_str(a).c_str(), shape_str(b).c_str(), shape_str(out).c_str());
  run_bmm(batch_of_one(out), batch_of_one(a), batch_of_one(b));
}
EMBER_KERNEL("mm", k_mm);

// linear: out[n,m] = x[n,k] @ w[m,k]^T + bias[m], float32 and float64 (the dispatcher's
// composite runs the other dtypes). As PyTorch's addmm: oneDNN takes the bias as its
// matmul's bias; on OpenBLAS the bias is written into out's rows and the product added
// onto it (beta = 1), so the sum costs no pass of its own.
void k_linear(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args("linear", a_, n_, kw_, {"out", "input", "weight", "bias"}, 3);
  const Tensor out = args.out(0), x = args.tensor(1), w = args.tensor(2);
  const bool hb = args.has(3);
  const Tensor bias = hb ? args.tensor(3) : Tensor();
  for (const Tensor* t : {&x, &w}) check_same_dtype("linear", out, *t);
  if (hb) check_same_dtype("linear", out, bias);
  if (x.ndim != 2 || w.ndim != 2 || out.ndim != 2 || x.shape[1] != w.shape[1] || out.shape[0] != x.shape[0] ||
      out.shape[1] != w.shape[0] || (hb && (bias.ndim != 1 || bias.shape[0] != w.shape[0])))
    raise(PyExc_ValueError,
          "linear(): expected input [n, k], weight [m, k], bias [m] and out [n, m], got %s, %s, %s and out %s",
          shape_str(x).c_str(), shape_str(w).c_str(), hb ? shape_str(bias).c_str() : "None",
          shape_str(out).c_str());
  if (out.dtype != kFloat32 && out.dtype != kFloat64)
    raise(PyExc_TypeError, "linear(): not implemented for dtype %s (float32 and float64 only)",
          dtype_name(out.dtype));
  Tensor wt = w;  // w^T as a [k, m] header
  wt.shape[0] = w.shape[1];
  wt.shape[1] = w.shape[0];
  wt.stride[0] = w.stride[1];
  wt.stride[1] = w.stride[0];
  const int64_t n = x.shape[0], k = x.shape[1], m = w.shape[0];
  // the product, then out += bias row by row (no bias, nothing to multiply, no BLAS, or
  // layouts BLAS cannot read)
  auto product_then_bias = [&] {
    run_bmm(batch_of_one(out), batch_of_one(x), batch_of_one(wt));
    if (!hb || n * m == 0) return;
    NoGil g(n * m >= kGilThreshold);
    dispatch<M_F32 | M_F64>(out.dtype, "linear", [&](auto tag) {
      using T = EMBER_T(tag);
      parallel_for(0, n, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, m)), [&](int64_t s, int64_t e) {
        const T* b = (const T*)bias.data;
        for (int64_t i = s; i < e; ++i) {
          T* o = (T*)out.data + i * out.stride[0];
          for (int64_t j = 0; j < m; ++j) o[j * out.stride[1]] += b[j * bias.stride[0]];
        }
      });
    });
  };
  if (!hb || n * m == 0 || k == 0 || !g_sgemm) return product_then_bias();
  NoGil g(n * m * k >= kGilThreshold);
  if (out.dtype == kFloat32) {
    const int64_t sx[3] = {0, x.stride[0], x.stride[1]}, sw[3] = {0, wt.stride[0], wt.stride[1]},
                  so[3] = {0, out.stride[0], out.stride[1]};
    // (a strided bias as a contiguous copy: oneDNN's matmul implementations read it dense)
    std::vector<float> dense;
    const float* pb = (const float*)bias.data;
    if (bias.stride[0] != 1) {
      dense.resize((size_t)m);
      for (int64_t j = 0; j < m; ++j) dense[(size_t)j] = pb[j * bias.stride[0]];
      pb = dense.data();
    }
    if (onednn_matmul(1, n, k, m, (const float*)x.data, sx, (const float*)wt.data, sw, (float*)out.data, so, pb, 1))
      return;
  }
  bool xcol, wcol, ocol;
  int64_t ldx, ldw, ldo;
  const bool blas_ok = blas_layout(n, k, x.stride[0], x.stride[1], xcol, ldx) &&
                       blas_layout(k, m, wt.stride[0], wt.stride[1], wcol, ldw) &&
                       blas_layout(n, m, out.stride[0], out.stride[1], ocol, ldo) && !ocol &&
                       n <= kIntMax && m <= kIntMax && k <= kIntMax;
  if (!blas_ok) return product_then_bias();
  dispatch<M_F32 | M_F64>(out.dtype, "linear", [&](auto tag) {
    using T = EMBER_T(tag);
    T* po = (T*)out.data;
    const T* pb = (const T*)bias.data;
    const int ta = xcol ? kTrans : kNoTrans, tb = wcol ? kTrans : kNoTrans;
    // each block writes the bias into its rows and columns, then accumulates its product
    split_gemms(1, n, m, k, [&](int64_t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t j = c0; j < c1; ++j) po[i * ldo + j] = pb[j * bias.stride[0]];
      const T* xa = (const T*)x.data + (xcol ? r0 : r0 * ldx);
      const T* wb = (const T*)wt.data + (wcol ? c0 * ldw : c0);
      gemm<T>(ta, tb, (int)(r1 - r0), (int)(c1 - c0), (int)k, xa, (int)ldx, wb, (int)ldw, po + r0 * ldo + c0,
              (int)ldo, T(1));
    });
  });
}
EMBER_KERNEL("linear", k_linear);

void run_bmm(const Tensor& out, const Tensor& a, const Tensor& b) {
  const int64_t B = a.shape[0], n = a.shape[1], k = a.shape[2], m = b.shape[2];
  dispatch<M_ALL>(out.dtype, "bmm", [](auto) {});
  if (B * n * m == 0) return;
  NoGil g(B * n * m * std::max<int64_t>(k, 1) >= kGilThreshold);
  const bool fits = n <= kIntMax && m <= kIntMax && k <= kIntMax && n * k <= kIntMax * 16;
  if (k == 0 || !fits || !g_sgemm) {
    if (k == 0) {
      dispatch_size(out.itemsize, "bmm", [&](auto tag) {
        using T = EMBER_T(tag);
        const Tensor* ts[1] = {&out};
        ElemIter it;
        it.build(ts, 1, "bmm");
        it.run([](char* const* p, const int64_t* s, int64_t nn) {
          for (int64_t i = 0; i < nn; ++i) *(T*)(p[0] + i * s[0]) = T(0);
        });
      });
      return;
    }
    dispatch<M_ALL>(out.dtype, "bmm", [&](auto tag) { bmm_loop<EMBER_T(tag)>(out, a, b); });
    return;
  }
  switch (out.dtype) {
    case kFloat32:
      if (!onednn_matmul(B, n, k, m, (const float*)a.data, a.stride, (const float*)b.data, b.stride,
                         (float*)out.data, out.stride))
        bmm_blas<float>(out, a, b);
      return;
    case kFloat64: bmm_blas<double>(out, a, b); return;
    case kFloat16:
    case kBFloat16: {
      // widen to float32, sgemm, narrow
      std::vector<float> fa((size_t)(B * n * k)), fb((size_t)(B * k * m)), fo((size_t)(B * n * m));
      Tensor A = Tensor::contiguous((char*)fa.data(), kFloat32, 3, a.shape);
      Tensor Bt = Tensor::contiguous((char*)fb.data(), kFloat32, 3, b.shape);
      Tensor O = Tensor::contiguous((char*)fo.data(), kFloat32, 3, out.shape);
      copy_tensor(A, a);
      copy_tensor(Bt, b);
      bmm_blas<float>(O, A, Bt);
      copy_tensor(out, O);
      return;
    }
    default:
      dispatch<M_ALL>(out.dtype, "bmm", [&](auto tag) { bmm_loop<EMBER_T(tag)>(out, a, b); });
  }
}

}  // namespace

template <class T>
void gemm_pool(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
               int64_t ldb, T* c, int64_t ldc, bool accumulate) {
  if (m == 0 || n == 0 || (k == 0 && accumulate)) return;
  const bool fits = m <= kIntMax && n <= kIntMax && k <= kIntMax && lda <= kIntMax && ldb <= kIntMax &&
                    ldc <= kIntMax;
  if constexpr (std::is_same_v<T, float>) {
    const int64_t sa[3] = {0, ta ? 1 : lda, ta ? lda : 1}, sb[3] = {0, tb ? 1 : ldb, tb ? ldb : 1}, sc[3] = {0, ldc, 1};
    if (!accumulate && k > 0 && onednn_matmul(1, m, k, n, a, sa, b, sb, c, sc)) return;
  }
  if (g_sgemm && fits && k > 0) {
    const int transa = ta ? kTrans : kNoTrans, transb = tb ? kTrans : kNoTrans;
    split_gemms(1, m, n, k, [&](int64_t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
      gemm<T>(transa, transb, (int)(r1 - r0), (int)(c1 - c0), (int)k, a + (ta ? r0 : r0 * lda), (int)lda,
              b + (tb ? c0 * ldb : c0), (int)ldb, c + r0 * ldc + c0, (int)ldc, accumulate ? T(1) : T(0));
    });
    return;
  }
  parallel_for(0, m, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, n * std::max<int64_t>(k, 1))),
               [&](int64_t s, int64_t e) {
                 for (int64_t i = s; i < e; ++i)
                   for (int64_t j = 0; j < n; ++j) {
                     T acc = T(0);
                     for (int64_t q = 0; q < k; ++q)
                       acc += (ta ? a[q * lda + i] : a[i * lda + q]) * (tb ? b[j * ldb + q] : b[q * ldb + j]);
                     c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc : acc;
                   }
               });
}
template void gemm_pool<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                               int64_t, float*, int64_t, bool);
template void gemm_pool<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t, const double*,
                                int64_t, double*, int64_t, bool);

void load_blas(const std::string& path) {
  std::lock_guard<std::mutex> lk(g_blas_mu);
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) raise(PyExc_OSError, "load_blas(): cannot load '%s': %s", path.c_str(), dlerror());
  auto s = (sgemm_t)dlsym(h, "scipy_cblas_sgemm");
  auto d = (dgemm_t)dlsym(h, "scipy_cblas_dgemm");
  auto t = (setnt_t)dlsym(h, "scipy_openblas_set_num_threads");
  if (!s || !d)
    raise(PyExc_OSError, "load_blas(): '%s' does not export scipy_cblas_sgemm / scipy_cblas_dgemm", path.c_str());
  g_setnt = t;
  g_dgemm = d;
  g_sgemm = s;
  if (g_setnt) g_setnt(1);  // single-threaded: bmm_blas splits GEMMs over ember's pool
}

bool blas_loaded() { return g_sgemm != nullptr; }

// OpenBLAS stays single-threaded whatever ember's thread count (see bmm_blas).
void blas_set_num_threads(int) {
  if (g_setnt) g_setnt(1);
}

}  // namespace ember
