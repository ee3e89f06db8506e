// Linear-algebra kernels (torch.linalg): LAPACK from the scipy-openblas32 wheel, the library
// load_blas (matmul.cpp) already opened for GEMM. Its LAPACK is the Fortran interface with a
// "scipy_" prefix (scipy_dgetrf_, ...), 32-bit integers, column-major matrices.
//
// Every kernel takes batches of matrices as 3-D tensors (B, rows, cols) with any element
// strides (the dispatcher passes transposed views as they are), copies each matrix into a
// column-major scratch buffer, calls LAPACK and writes the results back through the output
// strides. The batch is spread over ember's pool with the GIL released; OpenBLAS itself stays
// single-threaded (load_blas). LAPACK's `info` is written to an int32 output: the dispatcher
// turns it into torch.linalg.LinAlgError with PyTorch's messages.
#include <dlfcn.h>

#include "ember.h"

namespace ember {

namespace {

using lint = int;  // LAPACK integer of scipy-openblas32 (LP64)
using flen = size_t;  // gfortran's hidden length argument of a CHARACTER parameter

// ---- the LAPACK / BLAS entry points, per precision --------------------------------------------
template <class T>
struct Lapack {
  void (*getrf)(const lint*, const lint*, T*, const lint*, lint*, lint*) = nullptr;
  void (*getrs)(const char*, const lint*, const lint*, const T*, const lint*, const lint*, T*, const lint*, lint*,
                flen) = nullptr;
  void (*potrf)(const char*, const lint*, T*, const lint*, lint*, flen) = nullptr;
  void (*geqrf)(const lint*, const lint*, T*, const lint*, T*, T*, const lint*, lint*) = nullptr;
  void (*orgqr)(const lint*, const lint*, const lint*, T*, const lint*, const T*, T*, const lint*, lint*) = nullptr;
  void (*ormqr)(const char*, const char*, const lint*, const lint*, const lint*, const T*, const lint*, const T*, T*,
                const lint*, T*, const lint*, lint*, flen, flen) = nullptr;
  void (*gesdd)(const char*, const lint*, const lint*, T*, const lint*, T*, T*, const lint*, T*, const lint*, T*,
                const lint*, lint*, lint*, flen) = nullptr;
  void (*gesvd)(const char*, const char*, const lint*, const lint*, T*, const lint*, T*, T*, const lint*, T*,
                const lint*, T*, const lint*, lint*, flen, flen) = nullptr;
  void (*syevd)(const char*, const char*, const lint*, T*, const lint*, T*, T*, const lint*, lint*, const lint*,
                lint*, flen, flen) = nullptr;
  void (*gels)(const char*, const lint*, const lint*, const lint*, T*, const lint*, T*, const lint*, T*, const lint*,
               lint*, flen) = nullptr;
  void (*gelsy)(const lint*, const lint*, const lint*, T*, const lint*, T*, const lint*, lint*, const T*, lint*, T*,
                const lint*, lint*) = nullptr;
  void (*gelsd)(const lint*, const lint*, const lint*, T*, const lint*, T*, const lint*, T*, const T*, lint*, T*,
                const lint*, lint*, lint*) = nullptr;
  void (*gelss)(const lint*, const lint*, const lint*, T*, const lint*, T*, const lint*, T*, const T*, lint*, T*,
                const lint*, lint*) = nullptr;
  void (*sytrf)(const char*, const lint*, T*, const lint*, lint*, T*, const lint*, lint*, flen) = nullptr;
  void (*sytrs)(const char*, const lint*, const lint*, const T*, const lint*, const lint*, T*, const lint*, lint*,
                flen) = nullptr;
  void (*trsm)(const char*, const char*, const char*, const char*, const lint*, const lint*, const T*, const T*,
               const lint*, T*, const lint*, flen, flen, flen, flen) = nullptr;
};

Lapack<float> g_s;
Lapack<double> g_d;
// Loaded at the first kernel call, under the GIL (the import of scipy_openblas32 may release it:
// a second thread may load too; both write the same pointers). Not std::call_once, which would
// deadlock a thread waiting in it while holding the GIL the loading thread needs back.
bool g_loaded = false;
std::string g_load_error;

template <class F>
void sym(void* h, F& f, const char* name, std::string& err) {
  f = (F)dlsym(h, name);
  if (!f && err.empty()) err = std::string("the BLAS library does not export ") + name;
}

// The path of scipy-openblas32's library, from the wheel's own helpers (GIL held).
std::string openblas_path() {
  PyObject* mod = PyImport_ImportModule("scipy_openblas32");
  if (!mod) {
    PyErr_Clear();
    return "";
  }
  std::string path;
  PyObject* dir = PyObject_CallMethod(mod, "get_lib_dir", nullptr);
  PyObject* lib = PyObject_CallMethod(mod, "get_library", "O", Py_True);
  if (dir && lib && PyUnicode_Check(dir) && PyUnicode_Check(lib))
    path = std::string(PyUnicode_AsUTF8(dir)) + "/" + PyUnicode_AsUTF8(lib);
  Py_XDECREF(dir);
  Py_XDECREF(lib);
  Py_DECREF(mod);
  if (PyErr_Occurred()) PyErr_Clear();
  return path;
}

void load_lapack() {
  const std::string path = openblas_path();
  if (path.empty()) {
    g_load_error = "scipy-openblas32 is not installed (pip install scipy-openblas32)";
    return;
  }
  // the handle load_blas opened (dlopen counts references; the library stays loaded)
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    g_load_error = std::string("cannot load ") + path + ": " + dlerror();
    return;
  }
  Lapack<float> s;
  Lapack<double> d;
  std::string err;
#define EMBER_LAPACK_SYM(field, name)            \
  sym(h, s.field, "scipy_s" name "_", err);      \
  sym(h, d.field, "scipy_d" name "_", err);
  EMBER_LAPACK_SYM(getrf, "getrf")
  EMBER_LAPACK_SYM(getrs, "getrs")
  EMBER_LAPACK_SYM(potrf, "potrf")
  EMBER_LAPACK_SYM(geqrf, "geqrf")
  EMBER_LAPACK_SYM(orgqr, "orgqr")
  EMBER_LAPACK_SYM(ormqr, "ormqr")
  EMBER_LAPACK_SYM(gesdd, "gesdd")
  EMBER_LAPACK_SYM(gesvd, "gesvd")
  EMBER_LAPACK_SYM(syevd, "syevd")
  EMBER_LAPACK_SYM(gels, "gels")
  EMBER_LAPACK_SYM(gelsy, "gelsy")
  EMBER_LAPACK_SYM(gelsd, "gelsd")
  EMBER_LAPACK_SYM(gelss, "gelss")
  EMBER_LAPACK_SYM(sytrf, "sytrf")
  EMBER_LAPACK_SYM(sytrs, "sytrs")
  EMBER_LAPACK_SYM(trsm, "trsm")
#undef EMBER_LAPACK_SYM
  g_s = s;
  g_d = d;
  g_load_error = err;
}

// LAPACK's table for T; raises a RuntimeError naming the op when the library is missing.
template <class T>
const Lapack<T>& lapack(const char* op) {
  if (!g_loaded) {  // kernel entry: the GIL is held
    load_lapack();
    g_loaded = true;
  }
  if (!g_load_error.empty())
    raise(PyExc_RuntimeError, "%s(): LAPACK is not available on the cpu backend: %s", op, g_load_error.c_str());
  if constexpr (std::is_same_v<T, float>) return g_s;
  else return g_d;
}

// ---- column-major scratch matrices ------------------------------------------------------------
// Matrix b of a (B, r, c) tensor into buf (column-major, leading dimension ld), and back.
template <class T>
void load_cm(const Tensor& t, int64_t b, T* buf, int64_t ld) {
  const T* p = (const T*)t.data + b * t.stride[0];
  const int64_t r = t.shape[1], c = t.shape[2], s1 = t.stride[1], s2 = t.stride[2];
  for (int64_t j = 0; j < c; ++j)
    for (int64_t i = 0; i < r; ++i) buf[i + j * ld] = p[i * s1 + j * s2];
}
// rows [0, r) x cols [0, c) of buf into matrix b of t (whose shape may be smaller than buf's)
template <class T>
void store_cm(const Tensor& t, int64_t b, const T* buf, int64_t ld) {
  T* p = (T*)t.data + b * t.stride[0];
  const int64_t r = t.shape[1], c = t.shape[2], s1 = t.stride[1], s2 = t.stride[2];
  for (int64_t j = 0; j < c; ++j)
    for (int64_t i = 0; i < r; ++i) p[i * s1 + j * s2] = buf[i + j * ld];
}
// a (B, k) vector of T or int32
template <class V>
void store_vec(const Tensor& t, int64_t b, const V* v, int64_t k) {
  V* p = (V*)t.data + b * t.stride[0];
  for (int64_t i = 0; i < std::min(k, t.shape[1]); ++i) p[i * t.stride[1]] = v[i];
}
template <class V>
void load_vec(const Tensor& t, int64_t b, V* v) {
  const V* p = (const V*)t.data + b * t.stride[0];
  for (int64_t i = 0; i < t.shape[1]; ++i) v[i] = p[i * t.stride[1]];
}
inline void store_info(const Tensor& info, int64_t b, lint v) { ((int32_t*)info.data)[b * info.stride[0]] = v; }

void check_float(const char* op, const Tensor& t) {
  if (t.dtype != kFloat32 && t.dtype != kFloat64) raise_dtype(op, t.dtype);
}
void check_rank(const char* op, const Tensor& t, int nd, const char* what) {
  if (t.ndim != nd) raise(PyExc_ValueError, "%s(): %s must have %d dims, got %d", op, what, nd, t.ndim);
}
void check_int32(const char* op, const Tensor& t, const char* what) { check_dtype(op, t, kInt32, what); }
void check_fits(const char* op, int64_t v) {
  if (v > (int64_t)std::numeric_limits<lint>::max())
    raise(PyExc_RuntimeError, "%s(): a matrix dimension of %lld exceeds LAPACK's 32-bit integers", op, (long long)v);
}

// Runs body(b, scratch) for every batch element on the pool, the GIL released; each worker
// gets its own scratch vector of `scratch_elems` T.
template <class T, class F>
void for_batch(int64_t B, size_t scratch_elems, F&& body) {
  NoGil g(true);
  parallel_for(0, B, 1, [&](int64_t s, int64_t e) {
    std::vector<T> scratch(scratch_elems);
    for (int64_t b = s; b < e; ++b) body(b, scratch.data());
  });
}

// ---- LU: getrf ----------------------------------------------------------------------------------
// (LU, pivots, info, A): LU (B,m,n), pivots (B,min(m,n)) int32 (1-based, as LAPACK/PyTorch), info (B,)
template <class T>
void lu_factor(const Tensor& LU, const Tensor& piv, const Tensor& info, const Tensor& A) {
  const Lapack<T>& L = lapack<T>("linalg_lu_factor_ex");
  const int64_t B = A.shape[0], m = A.shape[1], n = A.shape[2], k = std::min(m, n);
  const lint lm = (lint)m, ln = (lint)n, lda = (lint)std::max<int64_t>(1, m);
  for_batch<T>(B, (size_t)(m * n + k), [&](int64_t b, T* w) {
    lint* ipiv = (lint*)(w + m * n);  // k ints fit in k T's
    load_cm(A, b, w, lda);
    lint inf = 0;
    if (m && n) L.getrf(&lm, &ln, w, &lda, ipiv, &inf);
    store_cm(LU, b, w, lda);
    store_vec<int32_t>(piv, b, ipiv, k);
    store_info(info, b, inf);
  });
}
void k_lu_factor(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_lu_factor_ex", a, n, kw, {"LU", "pivots", "info", "A"}, 4);
  const Tensor LU = args.out(0), piv = args.out(1), info = args.out(2), A = args.tensor(3);
  check_float(args.op, A);
  check_rank(args.op, A, 3, "A");
  check_int32(args.op, piv, "pivots");
  check_fits(args.op, A.shape[1] * A.shape[2]);
  if (A.dtype == kFloat32) lu_factor<float>(LU, piv, info, A);
  else lu_factor<double>(LU, piv, info, A);
}
EMBER_KERNEL("linalg_lu_factor_ex", k_lu_factor);

// ---- LU solve: getrs ----------------------------------------------------------------------------
// (X, LU, pivots, B, trans): X (B,n,k) solves op(A) X = B for A = P L U; trans: 'N' or 'T'
template <class T>
void lu_solve(const Tensor& X, const Tensor& LU, const Tensor& piv, const Tensor& Bm, char trans) {
  const Lapack<T>& L = lapack<T>("linalg_lu_solve");
  const int64_t B = LU.shape[0], n = LU.shape[1], k = Bm.shape[2];
  const lint ln = (lint)n, lk = (lint)k, ld = (lint)std::max<int64_t>(1, n);
  for_batch<T>(B, (size_t)(n * n + n * k + n), [&](int64_t b, T* w) {
    T* a = w;
    T* x = w + n * n;
    lint* ipiv = (lint*)(x + n * k);
    load_cm(LU, b, a, ld);
    load_cm(Bm, b, x, ld);
    load_vec<int32_t>(piv, b, ipiv);
    lint inf = 0;
    if (n && k) L.getrs(&trans, &ln, &lk, a, &ld, ipiv, x, &ld, &inf, 1);
    store_cm(X, b, x, ld);
  });
}
void k_lu_solve(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_lu_solve", a, n, kw, {"X", "LU", "pivots", "B", "trans"}, 4);
  const Tensor X = args.out(0), LU = args.tensor(1), piv = args.tensor(2), Bm = args.tensor(3);
  const bool trans = args.get_bool(4, false);
  check_float(args.op, LU);
  check_same_dtype(args.op, LU, Bm);
  check_int32(args.op, piv, "pivots");
  if (LU.dtype == kFloat32) lu_solve<float>(X, LU, piv, Bm, trans ? 'T' : 'N');
  else lu_solve<double>(X, LU, piv, Bm, trans ? 'T' : 'N');
}
EMBER_KERNEL("linalg_lu_solve", k_lu_solve);

// ---- Cholesky: potrf ----------------------------------------------------------------------------
// (L, info, A, upper): the other triangle of L is zero
template <class T>
void cholesky(const Tensor& Lo, const Tensor& info, const Tensor& A, bool upper) {
  const Lapack<T>& L = lapack<T>("linalg_cholesky_ex");
  const int64_t B = A.shape[0], n = A.shape[1];
  const lint ln = (lint)n, ld = (lint)std::max<int64_t>(1, n);
  const char uplo = upper ? 'U' : 'L';
  for_batch<T>(B, (size_t)(n * n), [&](int64_t b, T* w) {
    load_cm(A, b, w, ld);
    lint inf = 0;
    if (n) L.potrf(&uplo, &ln, w, &ld, &inf, 1);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < n; ++i)
        if (upper ? i > j : i < j) w[i + j * n] = T(0);
    store_cm(Lo, b, w, ld);
    store_info(info, b, inf);
  });
}
void k_cholesky(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_cholesky_ex", a, n, kw, {"L", "info", "A", "upper"}, 3);
  const Tensor Lo = args.out(0), info = args.out(1), A = args.tensor(2);
  check_float(args.op, A);
  check_rank(args.op, A, 3, "A");
  const bool upper = args.get_bool(3, false);
  if (A.dtype == kFloat32) cholesky<float>(Lo, info, A, upper);
  else cholesky<double>(Lo, info, A, upper);
}
EMBER_KERNEL("linalg_cholesky_ex", k_cholesky);

// ---- QR: geqrf, orgqr, ormqr --------------------------------------------------------------------
template <class T>
lint query(T w) { return (lint)std::max<T>(1, w); }

// (Q, R, A, compute_q, complete): Q (B,m,mq) with mq = k (reduced) or m (complete), ignored
// without compute_q (mode 'r'); R (B,rr,n)
template <class T>
void qr(const Tensor* Q, const Tensor& R, const Tensor& A) {
  const Lapack<T>& L = lapack<T>("linalg_qr");
  const int64_t B = A.shape[0], m = A.shape[1], n = A.shape[2], k = std::min(m, n);
  const int64_t mq = Q ? Q->shape[2] : 0, cols = std::max(n, mq);
  const lint lm = (lint)m, ln = (lint)n, lmq = (lint)mq, lk = (lint)k, ld = (lint)std::max<int64_t>(1, m);
  lint lwork = 1, inf = 0, neg = -1;
  if (m && n) {
    T wq = 0;
    L.geqrf(&lm, &ln, nullptr, &ld, nullptr, &wq, &neg, &inf);
    lwork = std::max(lwork, query(wq));
    if (Q && mq) {
      L.orgqr(&lm, &lmq, &lk, nullptr, &ld, nullptr, &wq, &neg, &inf);
      lwork = std::max(lwork, query(wq));
    }
  }
  for_batch<T>(B, (size_t)(m * cols + k + lwork), [&](int64_t b, T* w) {
    T* tau = w + m * cols;
    T* work = tau + k;
    load_cm(A, b, w, ld);
    lint info = 0;
    if (m && n) L.geqrf(&lm, &ln, w, &ld, tau, work, &lwork, &info);
    // R: the upper triangle of the first rows
    {
      T* p = (T*)R.data + b * R.stride[0];
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < R.shape[1]; ++i) p[i * R.stride[1] + j * R.stride[2]] = i <= j ? w[i + j * m] : T(0);
    }
    if (Q) {
      if (m && mq) {
        if (mq > n)  // complete mode, m > n: Q's extra columns start from the identity's
          for (int64_t j = n; j < mq; ++j)
            for (int64_t i = 0; i < m; ++i) w[i + j * m] = T(0);
        if (k) L.orgqr(&lm, &lmq, &lk, w, &ld, tau, work, &lwork, &info);
        else
          for (int64_t j = 0; j < mq; ++j)
            for (int64_t i = 0; i < m; ++i) w[i + j * m] = T(i == j);
      }
      store_cm(*Q, b, w, ld);
    }
  });
}
void k_qr(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_qr", a, n, kw, {"Q", "R", "A", "compute_q", "complete"}, 3);
  Tensor Qt;
  const bool hasq = args.get_bool(3, true);
  if (hasq) Qt = args.out(0);
  if (hasq && args.get_bool(4, false) && Qt.shape[2] != Qt.shape[1])
    raise(PyExc_ValueError, "%s(): complete mode needs a square Q", args.op);
  const Tensor R = args.out(1), A = args.tensor(2);
  check_float(args.op, A);
  check_rank(args.op, A, 3, "A");
  check_fits(args.op, A.shape[1] * std::max(A.shape[1], A.shape[2]));
  if (A.dtype == kFloat32) qr<float>(hasq ? &Qt : nullptr, R, A);
  else qr<double>(hasq ? &Qt : nullptr, R, A);
}
EMBER_KERNEL("linalg_qr", k_qr);

// (QR, tau, A): LAPACK's packed Householder form
template <class T>
void geqrf(const Tensor& QR, const Tensor& tau, const Tensor& A) {
  const Lapack<T>& L = lapack<T>("geqrf");
  const int64_t B = A.shape[0], m = A.shape[1], n = A.shape[2], k = std::min(m, n);
  const lint lm = (lint)m, ln = (lint)n, ld = (lint)std::max<int64_t>(1, m);
  lint lwork = 1, inf = 0, neg = -1;
  if (m && n) {
    T wq = 0;
    L.geqrf(&lm, &ln, nullptr, &ld, nullptr, &wq, &neg, &inf);
    lwork = query(wq);
  }
  for_batch<T>(B, (size_t)(m * n + k + lwork), [&](int64_t b, T* w) {
    T* t = w + m * n;
    load_cm(A, b, w, ld);
    lint info = 0;
    if (m && n) L.geqrf(&lm, &ln, w, &ld, t, t + k, &lwork, &info);
    store_cm(QR, b, w, ld);
    store_vec<T>(tau, b, t, k);
  });
}
void k_geqrf(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("geqrf", a, n, kw, {"QR", "tau", "A"}, 3);
  const Tensor QR = args.out(0), tau = args.out(1), A = args.tensor(2);
  check_float(args.op, A);
  check_rank(args.op, A, 3, "A");
  if (A.dtype == kFloat32) geqrf<float>(QR, tau, A);
  else geqrf<double>(QR, tau, A);
}
EMBER_KERNEL("geqrf", k_geqrf);

// (Q, A, tau): the first n columns of the product of the k = tau.shape[1] reflectors in A (m,n)
template <class T>
void householder(const Tensor& Q, const Tensor& A, const Tensor& tau) {
  const Lapack<T>& L = lapack<T>("linalg_householder_product");
  const int64_t B = A.shape[0], m = A.shape[1], n = A.shape[2], k = tau.shape[1];
  const lint lm = (lint)m, ln = (lint)n, lk = (lint)k, ld = (lint)std::max<int64_t>(1, m);
  lint lwork = 1, inf = 0, neg = -1;
  if (m && n) {
    T wq = 0;
    L.orgqr(&lm, &ln, &lk, nullptr, &ld, nullptr, &wq, &neg, &inf);
    lwork = query(wq);
  }
  for_batch<T>(B, (size_t)(m * n + k + lwork), [&](int64_t b, T* w) {
    T* t = w + m * n;
    load_cm(A, b, w, ld);
    load_vec<T>(tau, b, t);
    lint info = 0;
    if (m && n) L.orgqr(&lm, &ln, &lk, w, &ld, t, t + k, &lwork, &info);
    store_cm(Q, b, w, ld);
  });
}
void k_householder(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_householder_product", a, n, kw, {"Q", "A", "tau"}, 3);
  const Tensor Q = args.out(0), A = args.tensor(1), tau = args.tensor(2);
  check_float(args.op, A);
  check_same_dtype(args.op, A, tau);
  if (A.dtype == kFloat32) householder<float>(Q, A, tau);
  else householder<double>(Q, A, tau);
}
EMBER_KERNEL("linalg_householder_product", k_householder);

// (X, A, tau, C, left, transpose): op(Q) C or C op(Q), Q the reflectors of A (geqrf's form)
template <class T>
void ormqr(const Tensor& X, const Tensor& A, const Tensor& tau, const Tensor& Cm, bool left, bool trans) {
  const Lapack<T>& L = lapack<T>("ormqr");
  const int64_t B = Cm.shape[0], m = Cm.shape[1], n = Cm.shape[2], ra = A.shape[1], k = tau.shape[1];
  const lint lm = (lint)m, ln = (lint)n, lk = (lint)k, lda = (lint)std::max<int64_t>(1, ra),
             ldc = (lint)std::max<int64_t>(1, m);
  const char side = left ? 'L' : 'R', tr = trans ? 'T' : 'N';
  const int64_t ca = A.shape[2];
  lint lwork = 1, inf = 0, neg = -1;
  if (m && n && k) {
    T wq = 0;
    L.ormqr(&side, &tr, &lm, &ln, &lk, nullptr, &lda, nullptr, nullptr, &ldc, &wq, &neg, &inf, 1, 1);
    lwork = query(wq);
  }
  for_batch<T>(B, (size_t)(ra * ca + k + m * n + lwork), [&](int64_t b, T* w) {
    T* t = w + ra * ca;
    T* c = t + k;
    T* work = c + m * n;
    load_cm(A, b, w, lda);
    load_vec<T>(tau, b, t);
    load_cm(Cm, b, c, ldc);
    lint info = 0;
    if (m && n && k) L.ormqr(&side, &tr, &lm, &ln, &lk, w, &lda, t, c, &ldc, work, &lwork, &info, 1, 1);
    store_cm(X, b, c, ldc);
  });
}
void k_ormqr(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("ormqr", a, n, kw, {"X", "A", "tau", "C", "left", "transpose"}, 4);
  const Tensor X = args.out(0), A = args.tensor(1), tau = args.tensor(2), Cm = args.tensor(3);
  check_float(args.op, A);
  const bool left = args.get_bool(4, true), trans = args.get_bool(5, false);
  if (A.dtype == kFloat32) ormqr<float>(X, A, tau, Cm, left, trans);
  else ormqr<double>(X, A, tau, Cm, left, trans);
}
EMBER_KERNEL("ormqr", k_ormqr);

// ---- SVD: gesdd / gesvd -------------------------------------------------------------------------
// (U, S, Vh, info, A, full_matrices, gesvd, compute_uv): U (B,m,ku), S (B,k), Vh (B,kv,n); U and Vh
// are ignored without compute_uv (values only)
template <class T>
void svd(const Tensor* U, const Tensor& S, const Tensor* Vh, const Tensor& info, const Tensor& A, bool full,
         bool use_gesvd) {
  const Lapack<T>& L = lapack<T>("linalg_svd");
  const int64_t B = A.shape[0], m = A.shape[1], n = A.shape[2], k = std::min(m, n);
  const bool uv = U != nullptr;
  const int64_t ucols = uv ? (full ? m : k) : 0, vrows = uv ? (full ? n : k) : 0;
  const char job = !uv ? 'N' : full ? 'A' : 'S';
  const lint lm = (lint)m, ln = (lint)n, lda = (lint)std::max<int64_t>(1, m), ldu = (lint)std::max<int64_t>(1, m),
             ldvt = (lint)std::max<int64_t>(1, vrows);
  lint lwork = 1, inf = 0, neg = -1;
  if (m && n) {
    T wq = 0;
    if (use_gesvd)
      L.gesvd(&job, &job, &lm, &ln, nullptr, &lda, nullptr, nullptr, &ldu, nullptr, &ldvt, &wq, &neg, &inf, 1, 1);
    else
      L.gesdd(&job, &lm, &ln, nullptr, &lda, nullptr, nullptr, &ldu, nullptr, &ldvt, &wq, &neg, nullptr, &inf, 1);
    lwork = query(wq);
  }
  const int64_t scratch = m * n + k + m * ucols + vrows * n + lwork + 8 * k + 1;
  for_batch<T>(B, (size_t)scratch, [&](int64_t b, T* w) {
    T* s = w + m * n;
    T* u = s + k;
    T* vt = u + m * ucols;
    T* work = vt + vrows * n;
    lint* iwork = (lint*)(work + lwork);  // 8k ints fit in 8k T's
    load_cm(A, b, w, lda);
    lint inf_ = 0;
    if (m && n) {
      if (use_gesvd)
        L.gesvd(&job, &job, &lm, &ln, w, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, &inf_, 1, 1);
      else
        L.gesdd(&job, &lm, &ln, w, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, &inf_, 1);
    } else if (uv) {  // an empty matrix: U and Vh are identities
      for (int64_t j = 0; j < ucols; ++j)
        for (int64_t i = 0; i < m; ++i) u[i + j * m] = T(i == j);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < vrows; ++i) vt[i + j * vrows] = T(i == j);
    }
    store_vec<T>(S, b, s, k);
    if (uv) {
      store_cm(*U, b, u, ldu);
      store_cm(*Vh, b, vt, ldvt);
    }
    store_info(info, b, inf_);
  });
}
void k_svd(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_svd", a, n, kw,
                  {"U", "S", "Vh", "info", "A", "full_matrices", "gesvd", "compute_uv"}, 5);
  const bool uv = args.get_bool(7, true);
  Tensor U, Vh;
  if (uv) {
    U = args.out(0);
    Vh = args.out(2);
  }
  const Tensor S = args.out(1), info = args.out(3), A = args.tensor(4);
  check_float(args.op, A);
  check_rank(args.op, A, 3, "A");
  check_fits(args.op, std::max(A.shape[1], A.shape[2]) * std::max(A.shape[1], A.shape[2]));
  const bool full = args.get_bool(5, true), gesvd = args.get_bool(6, false);
  if (A.dtype == kFloat32) svd<float>(uv ? &U : nullptr, S, uv ? &Vh : nullptr, info, A, full, gesvd);
  else svd<double>(uv ? &U : nullptr, S, uv ? &Vh : nullptr, info, A, full, gesvd);
}
EMBER_KERNEL("linalg_svd", k_svd);

// ---- symmetric eigendecomposition: syevd --------------------------------------------------------
// (W, V, info, A, upper, compute_v): W (B,n) ascending, V (B,n,n) (ignored without compute_v)
template <class T>
void eigh(const Tensor& W, const Tensor* V, const Tensor& info, const Tensor& A, bool upper) {
  const Lapack<T>& L = lapack<T>("linalg_eigh");
  const int64_t B = A.shape[0], n = A.shape[1];
  const char job = V ? 'V' : 'N', uplo = upper ? 'U' : 'L';
  const lint ln = (lint)n, ld = (lint)std::max<int64_t>(1, n);
  lint lwork = 1, liwork = 1, inf = 0, neg = -1;
  if (n) {
    T wq = 0;
    lint iq = 0;
    L.syevd(&job, &uplo, &ln, nullptr, &ld, nullptr, &wq, &neg, &iq, &neg, &inf, 1, 1);
    lwork = query(wq);
    liwork = std::max<lint>(1, iq);
  }
  for_batch<T>(B, (size_t)(n * n + n + lwork + liwork), [&](int64_t b, T* w) {
    T* ev = w + n * n;
    T* work = ev + n;
    lint* iwork = (lint*)(work + lwork);
    load_cm(A, b, w, ld);
    lint inf_ = 0;
    if (n) L.syevd(&job, &uplo, &ln, w, &ld, ev, work, &lwork, iwork, &liwork, &inf_, 1, 1);
    store_vec<T>(W, b, ev, n);
    if (V) store_cm(*V, b, w, ld);
    store_info(info, b, inf_);
  });
}
void k_eigh(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_eigh", a, n, kw, {"W", "V", "info", "A", "upper", "compute_v"}, 4);
  const bool hasv = args.get_bool(5, true);
  Tensor V;
  if (hasv) V = args.out(1);
  const Tensor W = args.out(0), info = args.out(2), A = args.tensor(3);
  check_float(args.op, A);
  check_rank(args.op, A, 3, "A");
  const bool upper = args.get_bool(4, false);
  if (A.dtype == kFloat32) eigh<float>(W, hasv ? &V : nullptr, info, A, upper);
  else eigh<double>(W, hasv ? &V : nullptr, info, A, upper);
}
EMBER_KERNEL("linalg_eigh", k_eigh);

// ---- least squares: gels / gelsy / gelsd / gelss ------------------------------------------------
// (X, residuals, rank, sv, info, A, B, driver, rcond): X (B,n,k); residuals (B,k) (sums of
// squares of rows n..m-1 of the transformed right-hand side; meaningful for m > n, full rank);
// rank (B,) int64 (gelsy/gelsd/gelss); sv (B,min(m,n)) (gelsd/gelss); info (B,) int32.
// driver: 0 gels, 1 gelsy, 2 gelsd, 3 gelss.
template <class T>
void lstsq(const Tensor& X, const Tensor& res, const Tensor& rank, const Tensor& sv, const Tensor& info,
           const Tensor& A, const Tensor& Bm, int driver, double rcond) {
  const Lapack<T>& L = lapack<T>("linalg_lstsq");
  const int64_t B = A.shape[0], m = A.shape[1], n = A.shape[2], k = Bm.shape[2], mn = std::min(m, n),
                ldbv = std::max<int64_t>(1, std::max(m, n));
  const lint lm = (lint)m, ln = (lint)n, lk = (lint)k, lda = (lint)std::max<int64_t>(1, m), ldb = (lint)ldbv;
  const T rc = (T)rcond;
  const char tr = 'N';
  lint lwork = 1, liwork = 1, inf = 0, neg = -1, rk = 0;
  if (m && n && k) {
    T wq = 0;
    lint iq = 0;
    switch (driver) {
      case 0: L.gels(&tr, &lm, &ln, &lk, nullptr, &lda, nullptr, &ldb, &wq, &neg, &inf, 1); break;
      case 1: L.gelsy(&lm, &ln, &lk, nullptr, &lda, nullptr, &ldb, nullptr, &rc, &rk, &wq, &neg, &inf); break;
      case 2: L.gelsd(&lm, &ln, &lk, nullptr, &lda, nullptr, &ldb, nullptr, &rc, &rk, &wq, &neg, &iq, &inf); break;
      default: L.gelss(&lm, &ln, &lk, nullptr, &lda, nullptr, &ldb, nullptr, &rc, &rk, &wq, &neg, &inf); break;
    }
    lwork = query(wq);
    liwork = std::max<lint>(1, iq);
  }
  liwork = std::max<lint>(liwork, (lint)n);  // gelsy's jpvt
  for_batch<T>(B, (size_t)(m * n + ldbv * k + mn + lwork + liwork), [&](int64_t b, T* w) {
    T* x = w + m * n;
    T* s = x + ldbv * k;
    T* work = s + mn;
    lint* iwork = (lint*)(work + lwork);
    load_cm(A, b, w, lda);
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < ldbv; ++i) x[i + j * ldbv] = T(0);
    load_cm(Bm, b, x, ldb);
    lint inf_ = 0, rk_ = (lint)mn;
    if (m && n && k) {
      switch (driver) {
        case 0: L.gels(&tr, &lm, &ln, &lk, w, &lda, x, &ldb, work, &lwork, &inf_, 1); break;
        case 1:
          for (int64_t i = 0; i < n; ++i) iwork[i] = 0;
          L.gelsy(&lm, &ln, &lk, w, &lda, x, &ldb, iwork, &rc, &rk_, work, &lwork, &inf_);
          break;
        case 2: L.gelsd(&lm, &ln, &lk, w, &lda, x, &ldb, s, &rc, &rk_, work, &lwork, iwork, &inf_); break;
        default: L.gelss(&lm, &ln, &lk, w, &lda, x, &ldb, s, &rc, &rk_, work, &lwork, &inf_); break;
      }
    } else if (m && n && driver >= 2) {  // no right-hand sides: still the singular values and rank
      lint one = 1;
      std::vector<T> tmp((size_t)ldbv, T(0));
      T wq = 0;
      lint iq = 0, lw = -1;
      if (driver == 2) L.gelsd(&lm, &ln, &one, w, &lda, tmp.data(), &ldb, s, &rc, &rk_, &wq, &lw, &iq, &inf_);
      else L.gelss(&lm, &ln, &one, w, &lda, tmp.data(), &ldb, s, &rc, &rk_, &wq, &lw, &inf_);
      lw = query(wq);
      std::vector<T> wk((size_t)lw);
      std::vector<lint> iw((size_t)std::max<lint>(1, iq));
      if (driver == 2) L.gelsd(&lm, &ln, &one, w, &lda, tmp.data(), &ldb, s, &rc, &rk_, wk.data(), &lw, iw.data(), &inf_);
      else L.gelss(&lm, &ln, &one, w, &lda, tmp.data(), &ldb, s, &rc, &rk_, wk.data(), &lw, &inf_);
    } else if (m && n && driver == 1) {
      lint one = 1, lw = -1;
      std::vector<T> tmp((size_t)ldbv, T(0));
      T wq = 0;
      L.gelsy(&lm, &ln, &one, w, &lda, tmp.data(), &ldb, iwork, &rc, &rk_, &wq, &lw, &inf_);
      lw = query(wq);
      std::vector<T> wk((size_t)lw);
      for (int64_t i = 0; i < n; ++i) iwork[i] = 0;
      L.gelsy(&lm, &ln, &one, w, &lda, tmp.data(), &ldb, iwork, &rc, &rk_, wk.data(), &lw, &inf_);
    } else if (!m || !n) {
      rk_ = 0;
    }
    store_cm(X, b, x, ldb);
    if (res.ndim == 2 && res.shape[1] == k) {
      T* pr = (T*)res.data + b * res.stride[0];
      for (int64_t j = 0; j < k; ++j) {
        T acc = 0;
        for (int64_t i = n; i < m; ++i) acc += x[i + j * ldbv] * x[i + j * ldbv];
        pr[j * res.stride[1]] = acc;
      }
    }
    if (rank.ndim == 1 && rank.shape[0] == B) ((int64_t*)rank.data)[b * rank.stride[0]] = rk_;
    if (sv.ndim == 2 && sv.shape[1] == mn) store_vec<T>(sv, b, s, mn);
    store_info(info, b, inf_);
  });
}
void k_lstsq(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_lstsq", a, n, kw,
                  {"X", "residuals", "rank", "singular_values", "info", "A", "B", "driver", "rcond"}, 8);
  const Tensor X = args.out(0), res = args.out(1), rank = args.out(2), sv = args.out(3), info = args.out(4),
               A = args.tensor(5), Bm = args.tensor(6);
  check_float(args.op, A);
  check_same_dtype(args.op, A, Bm);
  check_dtype(args.op, rank, kInt64, "rank");
  const int driver = (int)args.get_int(7);
  const double rcond = args.has(8) ? args.get_double(8) : -1.0;
  if (A.dtype == kFloat32) lstsq<float>(X, res, rank, sv, info, A, Bm, driver, rcond);
  else lstsq<double>(X, res, rank, sv, info, A, Bm, driver, rcond);
}
EMBER_KERNEL("linalg_lstsq", k_lstsq);

// ---- LDL^T (Bunch-Kaufman): sytrf / sytrs -------------------------------------------------------
template <class T>
void ldl_factor(const Tensor& LD, const Tensor& piv, const Tensor& info, const Tensor& A, bool upper) {
  const Lapack<T>& L = lapack<T>("linalg_ldl_factor_ex");
  const int64_t B = A.shape[0], n = A.shape[1];
  const char uplo = upper ? 'U' : 'L';
  const lint ln = (lint)n, ld = (lint)std::max<int64_t>(1, n);
  lint lwork = 1, inf = 0, neg = -1;
  if (n) {
    T wq = 0;
    L.sytrf(&uplo, &ln, nullptr, &ld, nullptr, &wq, &neg, &inf, 1);
    lwork = query(wq);
  }
  for_batch<T>(B, (size_t)(n * n + n + lwork), [&](int64_t b, T* w) {
    lint* ipiv = (lint*)(w + n * n);
    T* work = w + n * n + n;
    load_cm(A, b, w, ld);
    lint inf_ = 0;
    if (n) L.sytrf(&uplo, &ln, w, &ld, ipiv, work, &lwork, &inf_, 1);
    for (int64_t j = 0; j < n; ++j)  // the unused triangle is zero (PyTorch)
      for (int64_t i = 0; i < n; ++i)
        if (upper ? i > j : i < j) w[i + j * n] = T(0);
    store_cm(LD, b, w, ld);
    store_vec<int32_t>(piv, b, ipiv, n);
    store_info(info, b, inf_);
  });
}
void k_ldl_factor(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_ldl_factor_ex", a, n, kw, {"LD", "pivots", "info", "A", "upper"}, 4);
  const Tensor LD = args.out(0), piv = args.out(1), info = args.out(2), A = args.tensor(3);
  check_float(args.op, A);
  check_int32(args.op, piv, "pivots");
  const bool upper = args.get_bool(4, false);
  if (A.dtype == kFloat32) ldl_factor<float>(LD, piv, info, A, upper);
  else ldl_factor<double>(LD, piv, info, A, upper);
}
EMBER_KERNEL("linalg_ldl_factor_ex", k_ldl_factor);

template <class T>
void ldl_solve(const Tensor& X, const Tensor& LD, const Tensor& piv, const Tensor& Bm, bool upper) {
  const Lapack<T>& L = lapack<T>("linalg_ldl_solve");
  const int64_t B = LD.shape[0], n = LD.shape[1], k = Bm.shape[2];
  const char uplo = upper ? 'U' : 'L';
  const lint ln = (lint)n, lk = (lint)k, ld = (lint)std::max<int64_t>(1, n);
  for_batch<T>(B, (size_t)(n * n + n * k + n), [&](int64_t b, T* w) {
    T* x = w + n * n;
    lint* ipiv = (lint*)(x + n * k);
    load_cm(LD, b, w, ld);
    load_cm(Bm, b, x, ld);
    load_vec<int32_t>(piv, b, ipiv);
    lint inf_ = 0;
    if (n && k) L.sytrs(&uplo, &ln, &lk, w, &ld, ipiv, x, &ld, &inf_, 1);
    store_cm(X, b, x, ld);
  });
}
void k_ldl_solve(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_ldl_solve", a, n, kw, {"X", "LD", "pivots", "B", "upper"}, 4);
  const Tensor X = args.out(0), LD = args.tensor(1), piv = args.tensor(2), Bm = args.tensor(3);
  check_float(args.op, LD);
  check_same_dtype(args.op, LD, Bm);
  check_int32(args.op, piv, "pivots");
  const bool upper = args.get_bool(4, false);
  if (LD.dtype == kFloat32) ldl_solve<float>(X, LD, piv, Bm, upper);
  else ldl_solve<double>(X, LD, piv, Bm, upper);
}
EMBER_KERNEL("linalg_ldl_solve", k_ldl_solve);

// ---- triangular solve: BLAS trsm ----------------------------------------------------------------
// (X, A, B, upper, left, unitriangular): A X = B (left) or X A = B; A (B,n,n) triangular
template <class T>
void tri_solve(const Tensor& X, const Tensor& A, const Tensor& Bm, bool upper, bool left, bool unit) {
  const Lapack<T>& L = lapack<T>("linalg_solve_triangular");
  const int64_t B = Bm.shape[0], m = Bm.shape[1], n = Bm.shape[2], na = A.shape[1];
  const char side = left ? 'L' : 'R', uplo = upper ? 'U' : 'L', tr = 'N', diag = unit ? 'U' : 'N';
  const lint lm = (lint)m, ln = (lint)n, lda = (lint)std::max<int64_t>(1, na), ldb = (lint)std::max<int64_t>(1, m);
  const T one = 1;
  for_batch<T>(B, (size_t)(na * na + m * n), [&](int64_t b, T* w) {
    T* x = w + na * na;
    load_cm(A, b, w, lda);
    load_cm(Bm, b, x, ldb);
    if (m && n) L.trsm(&side, &uplo, &tr, &diag, &lm, &ln, &one, w, &lda, x, &ldb, 1, 1, 1, 1);
    store_cm(X, b, x, ldb);
  });
}
void k_tri_solve(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_trsm", a, n, kw, {"X", "A", "B", "upper", "left", "unitriangular"}, 4);
  const Tensor X = args.out(0), A = args.tensor(1), Bm = args.tensor(2);
  check_float(args.op, A);
  check_same_dtype(args.op, A, Bm);
  const bool upper = args.get_bool(3, false), left = args.get_bool(4, true), unit = args.get_bool(5, false);
  if (A.dtype == kFloat32) tri_solve<float>(X, A, Bm, upper, left, unit);
  else tri_solve<double>(X, A, Bm, upper, left, unit);
}
EMBER_KERNEL("linalg_trsm", k_tri_solve);

// ---- pivots -> permutation ----------------------------------------------------------------------
// (perm, pivots, m): perm (B,m) int64 with A[perm] = L U for LAPACK's sequential row swaps (1-based)
void k_lu_perm(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Args args("linalg_lu_pivots_to_permutation", a, n, kw, {"perm", "pivots", "m"}, 2);
  const Tensor perm = args.out(0), piv = args.tensor(1);
  if (args.has(2) && args.get_int(2) != perm.shape[perm.ndim - 1])
    raise(PyExc_ValueError, "%s(): perm must have m = %lld columns", args.op, (long long)args.get_int(2));
  check_dtype(args.op, perm, kInt64, "perm");
  check_int32(args.op, piv, "pivots");
  check_rank(args.op, perm, 2, "perm");
  check_rank(args.op, piv, 2, "pivots");
  const int64_t B = perm.shape[0], m = perm.shape[1], k = piv.shape[1];
  for (int64_t b = 0; b < B; ++b) {
    int64_t* p = (int64_t*)perm.data + b * perm.stride[0];
    const int32_t* v = (const int32_t*)piv.data + b * piv.stride[0];
    for (int64_t i = 0; i < m; ++i) p[i * perm.stride[1]] = i;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t j = (int64_t)v[i * piv.stride[1]] - 1;
      if (j < 0 || j >= m)
        raise(PyExc_RuntimeError, "lu_unpack: the pivots must be between 1 and %lld, got %lld", (long long)m,
              (long long)(j + 1));
      std::swap(p[i * perm.stride[1]], p[j * perm.stride[1]]);
    }
  }
}
EMBER_KERNEL("linalg_lu_pivots_to_permutation", k_lu_perm);

}  // namespace

}  // namespace ember
