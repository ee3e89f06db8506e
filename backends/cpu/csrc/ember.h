// ember CPU backend: what every kernel file uses beyond ember's shared kernel library
// (<ember/dtype.h>, <ember/python.h>: dtypes, errors, kernel tensors, Args, registration;
// <ember/scalar_ops.h>: the scalar functions of the generated kernels).
//
//  * elementwise arithmetic on one dtype (bool / floats / wrapping integers), selects
//  * exp / tanh on the compute types, vectorisable for float
//  * thread pool front end (parallel_for) and GIL release
//  * ElemIter: the elementwise iterator (drop size-1 dims, coalesce, chunked ranges)
//  * the Storage type (storage.cpp)
#pragma once
#include <emmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <ember/dtype.h>
#include <ember/python.h>
#include <ember/scalar_ops.h>

namespace ember {

constexpr int MAXD = 32;                // max tensor rank
using Tensor = TensorT<MAXD>;
using Args = ArgsT<MAXD>;
constexpr int64_t kGrain = 32768;       // elementwise grain size for parallel_for
constexpr int64_t kGilThreshold = 2048; // release the GIL only for work at least this big
extern int64_t g_stream_bytes;           // outputs this big use non-temporal stores (default 8 MiB)

// a ? x : y through bit masks, branch-free (em::select says why)
template <class T>
inline T select_bits(bool a, T x, T y) { return em::select(a, x, y); }

// Elementwise arithmetic on one dtype T: bool as logical or / and, floating point in the
// compute type, integers wrapping (two's complement, via unsigned arithmetic).
template <class T>
inline T add_elem(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else if constexpr (is_fp_v<T>) return cvt<T>(static_cast<compute_t<T>>(a) + static_cast<compute_t<T>>(b));
  else return (T)((wrap_t<T>)a + (wrap_t<T>)b);
}
template <class T>
inline T sub_elem(T a, T b) {
  static_assert(!std::is_same_v<T, bool>, "no bool subtraction");
  if constexpr (is_fp_v<T>) return cvt<T>(static_cast<compute_t<T>>(a) - static_cast<compute_t<T>>(b));
  else return (T)((wrap_t<T>)a - (wrap_t<T>)b);
}
template <class T>
inline T mul_elem(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a && b;
  else if constexpr (is_fp_v<T>) return cvt<T>(static_cast<compute_t<T>>(a) * static_cast<compute_t<T>>(b));
  else return (T)((wrap_t<T>)a * (wrap_t<T>)b);
}

// The value of the element at p, in T's compute type. A bool is read as its byte != 0: bool
// tensors can hold bytes other than 0 and 1 (a NumPy uint8 array viewed as bool, a foreign
// buffer), which C++ would carry into sums and casts as 2, 3, ... (PyTorch and NumPy count
// any nonzero byte as one true element). Reductions, scans and casts read through this.
template <class T>
inline compute_t<T> load_elem(const T* p) {
  if constexpr (std::is_same_v<T, bool>) return *(const uint8_t*)p != 0;
  else return static_cast<compute_t<T>>(*p);
}

// *o = v converted to dtype `code` (accumulator -> output of a reduction / scan)
template <class A>
inline void store_as(int code, char* o, A v) {
  switch (code) {
    case kBool: *(bool*)o = cvt<bool>(v); break;
    case kUInt8: *(uint8_t*)o = cvt<uint8_t>(v); break;
    case kInt8: *(int8_t*)o = cvt<int8_t>(v); break;
    case kInt16: *(int16_t*)o = cvt<int16_t>(v); break;
    case kInt32: *(int32_t*)o = cvt<int32_t>(v); break;
    case kInt64: *(int64_t*)o = cvt<int64_t>(v); break;
    case kFloat16: *(Half*)o = cvt<Half>(v); break;
    case kBFloat16: *(BFloat16*)o = cvt<BFloat16>(v); break;
    case kFloat32: *(float*)o = cvt<float>(v); break;
    case kFloat64: *(double*)o = cvt<double>(v); break;
    default: break;
  }
}

// ---------------------------------------------------------------------------------------------
// exp / tanh on a compute type: float through the branch-free em::fast_expf / fast_tanhf
// (<ember/scalar_ops.h>) that loops vectorise, double through libm.
using em::fast_expf;
using em::fast_tanhf;
using em::kSinCosFast;
using em::sincosf_small;
template <class C> inline C exp_c(C x) { return em::exp(x); }
template <class C> inline C tanh_c(C x) { return em::tanh(x); }

// RAII GIL release (optional; nested / worker-thread uses are no-ops)
bool in_parallel_region();
extern thread_local bool tl_gil_released;
struct NoGil {
  PyThreadState* st = nullptr;
  explicit NoGil(bool release = true) {
    if (release && !tl_gil_released && !in_parallel_region()) {
      st = PyEval_SaveThread();
      tl_gil_released = true;
    }
  }
  ~NoGil() {
    if (st) {
      tl_gil_released = false;
      PyEval_RestoreThread(st);
    }
  }
  NoGil(const NoGil&) = delete;
  NoGil& operator=(const NoGil&) = delete;
};

// ---------------------------------------------------------------------------------------------
// thread pool
int get_num_threads();
size_t storage_empty_cache();
size_t storage_cached_bytes();
void set_num_threads(int n);
struct FnRef {
  void* obj;
  void (*call)(void*, int64_t, int64_t);
  template <class F>
  explicit FnRef(F& f) : obj((void*)&f), call([](void* o, int64_t b, int64_t e) { (*(F*)o)(b, e); }) {}
  void operator()(int64_t b, int64_t e) const { call(obj, b, e); }
};
void parallel_run(int64_t begin, int64_t end, int64_t grain, FnRef fn);
bool in_parallel_region();
// Runs fn(b, e) over sub-ranges of [begin, end); inline when the range is below 2*grain.
template <class F>
inline void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& f) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  if (end - begin < 2 * grain || get_num_threads() <= 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
  parallel_run(begin, end, grain, FnRef(f));
}

// ---------------------------------------------------------------------------------------------
// Elementwise iterator over up to 4 operands of one shape (operand 0 = output).
struct ElemIter {
  static constexpr int kMaxOps = 4;
  int nops = 0, ndim = 0;
  int64_t numel = 0;
  int64_t shape[MAXD];             // dim 0 = innermost
  int64_t strides[MAXD][kMaxOps];  // bytes
  char* base[kMaxOps];

  // All operands must have ts[0]'s shape (checked).
  void build(const Tensor* const* ts, int n, const char* op);
  // Iterate `shape` using each operand's strides (caller checked compatibility).
  void build_shape(const int64_t* shp, int nd, const Tensor* const* ts, int n);

  template <class F>
  void run_range(int64_t b, int64_t e, F& f) const {
    char* p[kMaxOps];
    int64_t s0[kMaxOps];
    for (int k = 0; k < nops; ++k) s0[k] = strides[0][k];
    if (ndim == 1) {
      for (int k = 0; k < nops; ++k) p[k] = base[k] + b * s0[k];
      f((char* const*)p, (const int64_t*)s0, e - b);
      return;
    }
    int64_t idx[MAXD];
    int64_t rem = b;
    for (int k = 0; k < nops; ++k) p[k] = base[k];
    for (int d = 0; d < ndim; ++d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
      for (int k = 0; k < nops; ++k) p[k] += idx[d] * strides[d][k];
    }
    while (b < e) {
      int64_t n = std::min(shape[0] - idx[0], e - b);
      f((char* const*)p, (const int64_t*)s0, n);
      b += n;
      if (b >= e) break;
      for (int k = 0; k < nops; ++k) p[k] -= idx[0] * s0[k];
      idx[0] = 0;
      for (int d = 1; d < ndim; ++d) {
        for (int k = 0; k < nops; ++k) p[k] += strides[d][k];
        if (++idx[d] < shape[d]) break;
        for (int k = 0; k < nops; ++k) p[k] -= shape[d] * strides[d][k];
        idx[d] = 0;
      }
    }
  }
  // f(char* const* ptrs, const int64_t* inner_strides_bytes, int64_t n)
  template <class F>
  void run(F&& f, int64_t grain = kGrain) const {
    if (numel <= 0) return;
    parallel_for(0, numel, grain, [&](int64_t b, int64_t e) { run_range(b, e, f); });
  }
};

// ---------------------------------------------------------------------------------------------
// inner loops

// o[i] = gen(i) for i < n with non-temporal (cache-bypassing) stores: results are computed
// into an L1-resident block, then streamed out.  For outputs much larger than the caches this
// saves the read-for-ownership traffic of ordinary stores.
template <class To, class G>
inline void stream_store(To* o, int64_t n, G&& gen) {
  int64_t i = 0;
  while (i < n && ((uintptr_t)(o + i) & 63) != 0) { o[i] = gen(i); ++i; }
  if (((uintptr_t)(o + i) & 15) != 0) {  // element size does not allow alignment
    for (; i < n; ++i) o[i] = gen(i);
    return;
  }
  constexpr int64_t kBlk = 1024 / (int64_t)sizeof(To);
  alignas(64) To buf[kBlk];
  for (; i + kBlk <= n; i += kBlk) {
    for (int64_t j = 0; j < kBlk; ++j) buf[j] = gen(i + j);
    char* dst = (char*)(o + i);
    for (int j = 0; j < 1024; j += 64) {
      _mm_stream_si128((__m128i*)(dst + j), _mm_load_si128((const __m128i*)((const char*)buf + j)));
      _mm_stream_si128((__m128i*)(dst + j + 16), _mm_load_si128((const __m128i*)((const char*)buf + j + 16)));
      _mm_stream_si128((__m128i*)(dst + j + 32), _mm_load_si128((const __m128i*)((const char*)buf + j + 32)));
      _mm_stream_si128((__m128i*)(dst + j + 48), _mm_load_si128((const __m128i*)((const char*)buf + j + 48)));
    }
  }
  for (; i < n; ++i) o[i] = gen(i);
  _mm_sfence();
}

template <class To, class Ti, class F>
inline void unary_inner(char* const* p, const int64_t* s, int64_t n, F& f, bool stream = false) {
  if (s[0] == (int64_t)sizeof(To) && s[1] == (int64_t)sizeof(Ti)) {
    To* o = (To*)p[0];
    const Ti* a = (const Ti*)p[1];
    if (stream && n >= 4096 && (void*)o != (const void*)a) {
      stream_store(o, n, [&](int64_t i) { return f(a[i]); });
      return;
    }
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
  } else if (s[1] == 0) {
    const To v = f(*(const Ti*)p[1]);
    if (s[0] == (int64_t)sizeof(To)) {
      To* o = (To*)p[0];
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    } else {
      for (int64_t i = 0; i < n; ++i) *(To*)(p[0] + i * s[0]) = v;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) *(To*)(p[0] + i * s[0]) = f(*(const Ti*)(p[1] + i * s[1]));
  }
}

// Convolution geometry shared by conv.cpp and depthwise.cpp: the output positions b in
// [0, B) whose input coordinate b * S + off lies in [0, I).
inline void valid_range(int64_t off, int64_t S, int64_t I, int64_t B, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + S - 1) / S;
  hi = I - off <= 0 ? 0 : (I - off + S - 1) / S;
  if (hi > B) hi = B;
  if (lo > hi) lo = hi;
}

// A broadcast scalar operand as a short array of copies (splat_run fills it, then calls
// body(start, count) per chunk): the loop then has the shape of the all-contiguous one, which
// gcc vectorises, where with the scalar itself it kept select-heavy bodies (maximum, clamp,
// relu) scalar: ~7 ns an element instead of ~0.4.
constexpr int64_t kSplat = 256;
template <class T, class B>
inline void splat_run(T* buf, T v, int64_t n, B body) {
  for (int64_t i = 0; i < std::min(n, kSplat); ++i) buf[i] = v;
  for (int64_t i0 = 0; i0 < n; i0 += kSplat) body(i0, std::min(kSplat, n - i0));
}

template <class To, class Ta, class Tb, class F>
inline void binary_inner(char* const* p, const int64_t* s, int64_t n, F& f, bool stream = false) {
  constexpr int64_t so = sizeof(To), sa = sizeof(Ta), sb = sizeof(Tb);
  // streaming stores only when out is not also an input (in-place results are re-read soon)
  stream = stream && n >= 4096 && p[0] != p[1] && p[0] != p[2];
  if (s[0] == so && s[1] == sa && s[2] == sb) {
    To* o = (To*)p[0];
    const Ta* a = (const Ta*)p[1];
    const Tb* b = (const Tb*)p[2];
    if (stream) { stream_store(o, n, [&](int64_t i) { return f(a[i], b[i]); }); return; }
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (s[0] == so && s[1] == 0 && s[2] == sb) {
    To* o = (To*)p[0];
    const Ta a = *(const Ta*)p[1];
    const Tb* b = (const Tb*)p[2];
    if (stream) { stream_store(o, n, [&](int64_t i) { return f(a, b[i]); }); return; }
    Ta ab[kSplat];
    splat_run(ab, a, n, [&](int64_t i0, int64_t m) { for (int64_t i = 0; i < m; ++i) o[i0 + i] = f(ab[i], b[i0 + i]); });
  } else if (s[0] == so && s[1] == sa && s[2] == 0) {
    To* o = (To*)p[0];
    const Ta* a = (const Ta*)p[1];
    const Tb b = *(const Tb*)p[2];
    if (stream) { stream_store(o, n, [&](int64_t i) { return f(a[i], b); }); return; }
    Tb bb[kSplat];
    splat_run(bb, b, n, [&](int64_t i0, int64_t m) { for (int64_t i = 0; i < m; ++i) o[i0 + i] = f(a[i0 + i], bb[i]); });
  } else {
    for (int64_t i = 0; i < n; ++i)
      *(To*)(p[0] + i * s[0]) = f(*(const Ta*)(p[1] + i * s[1]), *(const Tb*)(p[2] + i * s[2]));
  }
}

template <class To, class Ti, class F>
inline void unary_op(const char* op, const Tensor& out, const Tensor& x, F f) {
  const Tensor* ts[2] = {&out, &x};
  ElemIter it;
  it.build(ts, 2, op);
  if (it.numel == 0) return;
  NoGil g(it.numel >= kGilThreshold);
  const bool stream = it.numel * (int64_t)sizeof(To) >= g_stream_bytes;
  it.run([&](char* const* p, const int64_t* s, int64_t n) { unary_inner<To, Ti>(p, s, n, f, stream); });
}

template <class To, class Ta, class Tb, class F>
inline void binary_op(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  const Tensor* ts[3] = {&out, &a, &b};
  ElemIter it;
  it.build(ts, 3, op);
  if (it.numel == 0) return;
  NoGil g(it.numel >= kGilThreshold);
  const bool stream = it.numel * (int64_t)sizeof(To) >= g_stream_bytes;
  it.run([&](char* const* p, const int64_t* s, int64_t n) { binary_inner<To, Ta, Tb>(p, s, n, f, stream); });
}

// out = f(x) / out = f(a, b) with every operand of out's dtype, which must be in Mask (the
// caller checked the operands' dtypes).  f is generic: T f(T) / T f(T, T).
template <unsigned Mask, class F>
inline void unary_same(const char* op, const Tensor& out, const Tensor& x, F f) {
  dispatch<Mask>(out.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    unary_op<T, T>(op, out, x, [f](T v) -> T { return f(v); });
  });
}
template <unsigned Mask, class F>
inline void binary_same(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  dispatch<Mask>(out.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    binary_op<T, T, T>(op, out, a, b, [f](T x, T y) -> T { return f(x, y); });
  });
}

template <class To, class Ta, class Tb, class Tc, class F>
inline void ternary_op(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  const Tensor* ts[4] = {&out, &a, &b, &c};
  ElemIter it;
  it.build(ts, 4, op);
  if (it.numel == 0) return;
  NoGil g(it.numel >= kGilThreshold);
  it.run([&](char* const* p, const int64_t* s, int64_t n) {
    const bool ox = s[1] == (int64_t)sizeof(Ta), oy = s[2] == (int64_t)sizeof(Tb), oz = s[3] == (int64_t)sizeof(Tc);
    if (s[0] == (int64_t)sizeof(To) && (ox || s[1] == 0) && (oy || s[2] == 0) && (oz || s[3] == 0)) {
      // contiguous out; each input contiguous or a broadcast scalar (where(c, x, 0.0),
      // clamp(x, lo, hi), batch norm's shift + x * scale per channel, ...): the scalars as
      // short arrays of copies, so the loop has the all-contiguous shape gcc vectorises
      To* o = (To*)p[0];
      const Ta* x = (const Ta*)p[1];
      const Tb* y = (const Tb*)p[2];
      const Tc* z = (const Tc*)p[3];
      if (ox && oy && oz) {
        for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i], z[i]);
        return;
      }
      Ta xb[kSplat];
      Tb yb[kSplat];
      Tc zb[kSplat];
      const int64_t fill = std::min(n, kSplat);
      if (!ox) for (int64_t i = 0; i < fill; ++i) xb[i] = *x;
      if (!oy) for (int64_t i = 0; i < fill; ++i) yb[i] = *y;
      if (!oz) for (int64_t i = 0; i < fill; ++i) zb[i] = *z;
      for (int64_t i0 = 0; i0 < n; i0 += kSplat) {
        const int64_t m = std::min(kSplat, n - i0);
        const Ta* xp = ox ? x + i0 : xb;
        const Tb* yp = oy ? y + i0 : yb;
        const Tc* zp = oz ? z + i0 : zb;
        To* op = o + i0;
        for (int64_t i = 0; i < m; ++i) op[i] = f(xp[i], yp[i], zp[i]);
      }
    } else {
      for (int64_t i = 0; i < n; ++i)
        *(To*)(p[0] + i * s[0]) =
            f(*(const Ta*)(p[1] + i * s[1]), *(const Tb*)(p[2] + i * s[2]), *(const Tc*)(p[3] + i * s[3]));
    }
  });
}

// True if pred(x) holds for any element of t (serial scan, GIL held by caller or not).
template <class T, class P>
inline bool any_elem(const Tensor& t, P pred) {
  const Tensor* ts[1] = {&t};
  ElemIter it;
  it.build(ts, 1, "any");
  if (it.numel == 0) return false;
  bool found = false;
  auto f = [&](char* const* p, const int64_t* s, int64_t n) {
    if (found) return;
    for (int64_t i = 0; i < n; ++i)
      if (pred(*(const T*)(p[0] + i * s[0]))) { found = true; return; }
  };
  it.run_range(0, it.numel, f);
  return found;
}

// NaN-propagating max (IsMax) or min of a contiguous row of A (float or double), identity
// +-inf if n == 0: four 16-byte vector accumulators that select branch-free (a compare and a
// blend, which the data cannot mispredict), NaNs tracked in a mask of their own (a NaN
// operand of the select is lost at the next element, so the mask decides the result).
template <bool IsMax, class A>
inline A run_extreme(const A* p, int64_t n) {
  typedef A vec __attribute__((vector_size(16)));
  typedef A uvec __attribute__((vector_size(16), aligned(alignof(A))));
  using M = decltype(vec{} != vec{});
  constexpr int L = 16 / sizeof(A);
  const A id = IsMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
  vec acc[4];
  M bad = {};
  for (auto& a : acc)
    for (int j = 0; j < L; ++j) a[j] = id;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L)
    for (int k = 0; k < 4; ++k) {
      const vec v = *(const uvec*)(p + i + k * L);
      if constexpr (IsMax) acc[k] = v > acc[k] ? v : acc[k];  // ties keep the earlier
      else acc[k] = v < acc[k] ? v : acc[k];
      bad |= v != v;
    }
  A m = id;
  bool nan = false;
  for (int j = 0; j < L; ++j) nan |= bad[j] != 0;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < L; ++j) m = (IsMax ? acc[k][j] > m : acc[k][j] < m) ? acc[k][j] : m;
  for (; i < n; ++i) {
    const A v = p[i];
    nan |= v != v;
    m = (IsMax ? v > m : v < m) ? v : m;
  }
  return nan ? std::numeric_limits<A>::quiet_NaN() : m;
}

// acc[j] = NaN-propagating max (IsMax) or min of acc[j] and p[j], j < n, branch-free
template <bool IsMax, class A>
inline void rows_extreme(A* acc, const A* p, int64_t n) {
  typedef A vec __attribute__((vector_size(16)));
  typedef A uvec __attribute__((vector_size(16), aligned(alignof(A))));
  constexpr int L = 16 / sizeof(A);
  int64_t j = 0;
  for (; j + L <= n; j += L) {
    const vec v = *(const uvec*)(p + j);
    const vec a = *(uvec*)(acc + j);
    *(uvec*)(acc + j) = ((IsMax ? v > a : v < a) | (v != v)) ? v : a;
  }
  for (; j < n; ++j) {
    const A v = p[j];
    acc[j] = ((IsMax ? v > acc[j] : v < acc[j]) || v != v) ? v : acc[j];
  }
}

// NaN-propagating max of a contiguous row, in float; -inf if n == 0
template <class T>
inline float row_max(const T* p, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    return run_extreme<true>(p, n);
  } else {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(p[i]);
      m = (v > m || v != v) ? v : m;
    }
    return m;
  }
}

// Sum of f(p[i]) over a contiguous floating-point row: 16 lanes of A (float; double for
// float64) over 2048-element blocks, the block sums combined in double. row_sum: f = the
// element itself.
template <class T, class F>
inline double row_sum_of(const T* p, int64_t n, F f) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  constexpr int V = 16;
  constexpr int64_t B = 2048;
  double total = 0;
  int64_t i = 0;
  while (n - i >= V) {
    const int64_t m = std::min<int64_t>(B, (n - i) / V * V);
    A acc[V];
    for (int j = 0; j < V; ++j) acc[j] = 0;
    const T* q = p + i;
    for (int64_t k = 0; k < m; k += V)
      for (int j = 0; j < V; ++j) acc[j] += static_cast<A>(f(q[k + j]));
    double s = 0;
    for (int j = 0; j < V; ++j) s += acc[j];
    total += s;
    i += m;
  }
  for (; i < n; ++i) total += (double)static_cast<A>(f(p[i]));
  return total;
}

template <class T>
inline double row_sum(const T* p, int64_t n) {
  return row_sum_of(p, n, [](T v) { return v; });
}

// t without dim d (0-d tensors are returned unchanged)
inline Tensor drop_dim(const Tensor& t, int d) {
  Tensor r = t;
  if (t.ndim == 0) return r;
  for (int i = d; i < t.ndim - 1; ++i) {
    r.shape[i] = t.shape[i + 1];
    r.stride[i] = t.stride[i + 1];
  }
  r.ndim = t.ndim - 1;
  r.numel = 1;
  for (int i = 0; i < r.ndim; ++i) r.numel *= r.shape[i];
  return r;
}

// Three tensors walked along one dim (gather, scatter, sort): `it` iterates the positions of
// t1 without `dim` over all three tensors; at each position a kernel walks `len` (t1's size
// along dim) elements using the byte strides sd[k] of tensor k along dim.
struct DimWalk {
  ElemIter it;
  int64_t len;
  int64_t sd[3];
  DimWalk(const Tensor& t0, const Tensor& t1, const Tensor& t2, int dim) {
    const Tensor* t[3] = {&t0, &t1, &t2};
    len = t1.ndim ? t1.shape[dim] : 1;
    for (int k = 0; k < 3; ++k) sd[k] = (t[k]->ndim ? t[k]->stride[dim] : 0) * t[k]->itemsize;
    Tensor d0 = drop_dim(t0, dim), d1 = drop_dim(t1, dim), d2 = drop_dim(t2, dim);
    const Tensor* ts[3] = {&d0, &d1, &d2};
    it.build_shape(d1.shape, d1.ndim, ts, 3);
  }
  // f(char* p0, char* p1, char* p2): the three tensors' elements at dim index 0 of one position
  template <class F>
  void run(F&& f, int64_t grain) const {
    it.run(
        [&](char* const* p, const int64_t* s, int64_t m) {
          for (int64_t i = 0; i < m; ++i) f(p[0] + i * s[0], p[1] + i * s[1], p[2] + i * s[2]);
        },
        grain);
  }
};

// copy between two tensors of the same shape, any dtypes (used by random / matmul etc.)
void copy_tensor(const Tensor& dst, const Tensor& src);

// storage.cpp
extern PyTypeObject StorageType;
struct StorageObject {
  PyObject_HEAD
  char* data;
  int64_t nbytes;
  int readonly;
  int has_view;
  Py_buffer view;
  // Shared memory (ember.multiprocessing): when shm_fd >= 0, data is a MAP_SHARED mapping of
  // map_size bytes of the anonymous shared-memory file shm_fd (memfd / unlinked shm_open),
  // which the storage owns; the memory goes away when every process has closed its mapping.
  int shm_fd;
  size_t map_size;
  Py_ssize_t exports;    // live buffer exports (memoryview, NumPy) of data
  PyObject* retired;     // memory that exports made before share_() still point at, or NULL
  PyObject* weakreflist;
};
bool init_storage_type(PyObject* module);

// matmul.cpp
void blas_set_num_threads(int n);

}  // namespace ember
