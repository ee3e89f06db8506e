// ember CPU backend: shared infrastructure for all kernel files.
//
//  * dtypes (codes, names, Half / BFloat16 structs, conversions)
//  * errors (C++ exceptions carrying a Python exception type, converted at the
//    Python boundary by py_wrap)
//  * Tensor: a parsed "kernel tensor" (data pointer, shape, element strides, dtype)
//  * Args: fast vectorcall argument parsing (positional or keyword)
//  * thread pool front end (parallel_for)
//  * ElemIter: the elementwise iterator (drop size-1 dims, coalesce, chunked ranges)
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <emmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace ember {

constexpr int MAXD = 32;                // max tensor rank
constexpr int64_t kGrain = 32768;       // elementwise grain size for parallel_for
constexpr int64_t kGilThreshold = 2048; // release the GIL only for work at least this big
extern int64_t g_stream_bytes;           // outputs this big use non-temporal stores (default 8 MiB)

enum : int {
  kBool = 0, kUInt8 = 1, kInt8 = 2, kInt16 = 3, kInt32 = 4, kInt64 = 5,
  kFloat16 = 6, kBFloat16 = 7, kFloat32 = 8, kFloat64 = 9, kNumDTypes = 10
};
extern const char* const kDTypeNames[kNumDTypes];
extern const int kDTypeSizes[kNumDTypes];
inline const char* dtype_name(int code) {
  return (code >= 0 && code < kNumDTypes) ? kDTypeNames[code] : "<invalid dtype>";
}
inline bool is_floating_code(int c) { return c >= kFloat16 && c <= kFloat64; }
inline bool is_integral_code(int c) { return c >= kUInt8 && c <= kInt64; }

// ---------------------------------------------------------------------------------------------
// errors
struct Error {
  PyObject* type;
  std::string msg;
};
struct PyErrAlreadySet {};  // a Python error is already set
[[noreturn]] void raise(PyObject* type, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
[[noreturn]] void raise_dtype(const char* op, int code);

// ---------------------------------------------------------------------------------------------
// float16 / bfloat16 (round to nearest even, NaN preserved as a quiet NaN)
inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float f32_from(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// Branch-free conversions (after Maratyszcza's FP16 library) so loops can vectorise.
inline float half_to_float(uint16_t h) {
  const uint32_t w = (uint32_t)h << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = 0x1.0p-112f;
  const float normalized = f32_from((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float magic_bias = 0.5f;
  const float denormalized = f32_from((two_w >> 17) | magic_mask) - magic_bias;
  const uint32_t cutoff = 1u << 27;
  const uint32_t r = sign | (two_w < cutoff ? f32_bits(denormalized) : f32_bits(normalized));
  return f32_from(r);
}
inline uint16_t float_to_half(float f) {
  const float scale_to_inf = 0x1.0p+112f;
  const float scale_to_zero = 0x1.0p-110f;
  float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;
  const uint32_t w = f32_bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = f32_from((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = f32_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}
inline float bf16_to_float(uint16_t b) { return f32_from((uint32_t)b << 16); }
inline uint16_t float_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

struct Half {
  uint16_t x;
  Half() = default;
  explicit Half(float f) : x(float_to_half(f)) {}
  operator float() const { return half_to_float(x); }
};
struct BFloat16 {
  uint16_t x;
  BFloat16() = default;
  explicit BFloat16(float f) : x(float_to_bf16(f)) {}
  operator float() const { return bf16_to_float(x); }
};

template <class T> constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T> constexpr bool is_fp_v = std::is_floating_point_v<T> || is_half_v<T>;
template <class T> constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
// type arithmetic is done in
template <class T> using compute_t = std::conditional_t<is_half_v<T>, float, T>;
// unsigned type used for wrapping integer arithmetic
template <class T>
using wrap_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>>;

template <class To, class From>
inline To cvt(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else {
    using C = compute_t<From>;
    C c = static_cast<C>(v);
    if constexpr (std::is_same_v<To, bool>) {
      return c != C(0);
    } else if constexpr (is_half_v<To>) {
      return To(static_cast<float>(c));
    } else if constexpr (std::is_floating_point_v<To>) {
      return static_cast<To>(c);
    } else if constexpr (std::is_floating_point_v<C>) {  // float -> integer: truncate
      if constexpr (sizeof(To) == 8) return static_cast<To>(c);
      else return static_cast<To>(static_cast<int64_t>(c));
    } else {
      return static_cast<To>(c);  // integer -> integer: wraps (two's complement)
    }
  }
}

// Elementwise arithmetic on one dtype T: bool as logical or / and, floating point in the
// compute type, integers wrapping (two's complement, via unsigned arithmetic).
// a ? x : y through bit masks: gcc turns a plain ?: on floats into a branch (baseline x86-64
// has no blendv); on unpredictable data (where, pooling) a mispredicted branch per element
// costs more than the work.
template <class T>
inline T select_bits(bool a, T x, T y) {
  using U = std::conditional_t<sizeof(T) == 1, uint8_t,
            std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  U ux, uy;
  std::memcpy(&ux, &x, sizeof(T));
  std::memcpy(&uy, &y, sizeof(T));
  const U m = (U)0 - (U)a;
  const U r = (U)((ux & m) | (uy & (U)~m));
  T out;
  std::memcpy(&out, &r, sizeof(T));
  return out;
}

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

template <class T> struct Tag { using type = T; };
#define EMBER_T(tag) typename decltype(tag)::type

enum : unsigned {
  M_BOOL = 1u << kBool, M_U8 = 1u << kUInt8, M_I8 = 1u << kInt8, M_I16 = 1u << kInt16,
  M_I32 = 1u << kInt32, M_I64 = 1u << kInt64, M_F16 = 1u << kFloat16, M_BF16 = 1u << kBFloat16,
  M_F32 = 1u << kFloat32, M_F64 = 1u << kFloat64,
  M_INT = M_U8 | M_I8 | M_I16 | M_I32 | M_I64,
  M_FLOAT = M_F16 | M_BF16 | M_F32 | M_F64,
  M_NUM = M_INT | M_FLOAT,
  M_ALL = M_NUM | M_BOOL,
  M_BOOLINT = M_INT | M_BOOL,
};

// Calls f(Tag<T>{}) for the C++ type of dtype `code` if it is in Mask, else raises TypeError.
template <unsigned Mask, class F>
inline void dispatch(int code, const char* op, F&& f) {
  switch (code) {
#define EMBER_CASE(CODE, MASK, TYPE) \
  case CODE:                         \
    if constexpr ((Mask & MASK) != 0) { f(Tag<TYPE>{}); return; } \
    break;
    EMBER_CASE(kBool, M_BOOL, bool)
    EMBER_CASE(kUInt8, M_U8, uint8_t)
    EMBER_CASE(kInt8, M_I8, int8_t)
    EMBER_CASE(kInt16, M_I16, int16_t)
    EMBER_CASE(kInt32, M_I32, int32_t)
    EMBER_CASE(kInt64, M_I64, int64_t)
    EMBER_CASE(kFloat16, M_F16, Half)
    EMBER_CASE(kBFloat16, M_BF16, BFloat16)
    EMBER_CASE(kFloat32, M_F32, float)
    EMBER_CASE(kFloat64, M_F64, double)
#undef EMBER_CASE
    default: break;
  }
  raise_dtype(op, code);
}

// Dispatch on element size only (pure data movement kernels).
template <class F>
inline void dispatch_size(int itemsize, const char* op, F&& f) {
  switch (itemsize) {
    case 1: f(Tag<uint8_t>{}); return;
    case 2: f(Tag<uint16_t>{}); return;
    case 4: f(Tag<uint32_t>{}); return;
    case 8: f(Tag<uint64_t>{}); return;
    default: raise(PyExc_TypeError, "%s(): unsupported element size %d", op, itemsize);
  }
}

// ---------------------------------------------------------------------------------------------
// Branch-free float32 exp / tanh (Cephes polynomials, <= 2 ulp) written so that gcc vectorises
// loops calling them (libm's scalar expf / tanhf do not vectorise without -ffast-math).
inline float fast_expf(float x) {
  const float xc = std::min(std::max(x, -104.0f), 89.0f);
  const float z = xc * 1.44269504088896341f;
  const float n = (z + 12582912.0f) - 12582912.0f;  // round to nearest (|z| < 2^22)
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * r * r + r + 1.0f;
  const int32_t ni = (int32_t)(n == n ? n : 0.0f);  // |n| <= 150 (NaN handled below)
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  const float s1 = f32_from((uint32_t)(n1 + 127) << 23), s2 = f32_from((uint32_t)(n2 + 127) << 23);
  float res = (p * s1) * s2;
  res = x < -103.97f ? 0.0f : res;
  return x != x ? x : res;
}
inline float fast_tanhf(float x) {
  const float ax = std::fabs(x);
  // |x| >= 0.625: 1 - 2 / (exp(2|x|) + 1)
  const float e = fast_expf(std::min(ax + ax, 88.0f));
  const float big = 1.0f - 2.0f / (e + 1.0f);
  // |x| < 0.625: odd polynomial
  const float s = x * x;
  const float small =
      ((((-5.70498872745E-3f * s + 2.06390887954E-2f) * s - 5.37397155531E-2f) * s + 1.33314422036E-1f) * s -
       3.33332819422E-1f) * s * ax + ax;
  const float r = ax >= 0.625f ? big : small;
  const float sr = std::copysign(r, x);
  return x != x ? x : sr;
}
// exp / tanh on a compute type: float uses the vectorisable fast_expf / fast_tanhf, double libm.
template <class C> inline C exp_c(C x) {
  if constexpr (std::is_same_v<C, float>) return fast_expf(x);
  else return std::exp(x);
}
template <class C> inline C tanh_c(C x) {
  if constexpr (std::is_same_v<C, float>) return fast_tanhf(x);
  else return std::tanh(x);
}

// ---------------------------------------------------------------------------------------------
// Tensor
struct Tensor {
  char* data = nullptr;  // address of element [0,...,0]
  int ndim = 0;
  int dtype = 0;
  int itemsize = 0;
  bool readonly = false;
  int64_t numel = 1;
  PyObject* storage = nullptr;  // borrowed
  int64_t shape[MAXD];
  int64_t stride[MAXD];  // in elements
  bool is_contiguous() const {
    int64_t expect = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && stride[d] != expect) return false;
      expect *= shape[d];
    }
    return true;
  }
};
std::string shape_str(const Tensor& t);
bool is_tensor_like(PyObject* o);  // has a _storage attribute
void check_same_shape(const char* op, const Tensor& a, const Tensor& b);
void check_dtype(const char* op, const Tensor& t, int code, const char* what);
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b);

// ---------------------------------------------------------------------------------------------
// Args: arguments of a vectorcall kernel, by position; keywords are matched against names.
struct Args {
  static constexpr int kMax = 12;
  const char* op;
  const char* names[kMax];
  int n;
  PyObject* v[kMax];
  Args(const char* op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
       std::initializer_list<const char*> names, int nrequired);
  bool has(int i) const { return v[i] != nullptr && v[i] != Py_None; }
  Tensor tensor(int i) const;
  Tensor out(int i) const;  // writable
  int64_t get_int(int i) const;
  int64_t get_int(int i, int64_t def) const { return has(i) ? get_int(i) : def; }
  double get_double(int i) const;
  bool get_bool(int i, bool def) const;
  // dims: int or sequence of ints, normalised; sets mask[d] for each.
  void get_dims(int i, int ndim, bool* mask) const;
  int get_dim(int i, int ndim) const;
  // string or None -> "" ; returns std::string
  std::string get_str(int i) const;
};

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
    for (int64_t i = 0; i < n; ++i) o[i] = f(a, b[i]);
  } else if (s[0] == so && s[1] == sa && s[2] == 0) {
    To* o = (To*)p[0];
    const Ta* a = (const Ta*)p[1];
    const Tb b = *(const Tb*)p[2];
    if (stream) { stream_store(o, n, [&](int64_t i) { return f(a[i], b); }); return; }
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b);
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
    const bool oy = s[2] == (int64_t)sizeof(Tb), oz = s[3] == (int64_t)sizeof(Tc);
    if (s[0] == (int64_t)sizeof(To) && s[1] == (int64_t)sizeof(Ta) && (oy || s[2] == 0) &&
        (oz || s[3] == 0)) {
      // contiguous out and first input; the other two contiguous or broadcast scalars
      // (where(c, x, 0.0), clamp(x, lo, hi), ...): hoist the scalars so the loop vectorises
      To* o = (To*)p[0];
      const Ta* x = (const Ta*)p[1];
      const Tb* y = (const Tb*)p[2];
      const Tc* z = (const Tc*)p[3];
      if (oy && oz) {
        for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i], z[i]);
      } else if (oy) {
        const Tc zv = *z;
        for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i], zv);
      } else if (oz) {
        const Tb yv = *y;
        for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv, z[i]);
      } else {
        const Tb yv = *y;
        const Tc zv = *z;
        for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv, zv);
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

// NaN-propagating max of a contiguous row, in float (16 independent lanes); -inf if n == 0
template <class T>
inline float row_max(const T* p, int64_t n) {
  constexpr int V = 16;
  float acc[V];
  for (int j = 0; j < V; ++j) acc[j] = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + V <= n; i += V)
    for (int j = 0; j < V; ++j) {
      const float v = static_cast<float>(p[i + j]);
      acc[j] = (v > acc[j] || v != v) ? v : acc[j];
    }
  float m = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < V; ++j) m = (acc[j] > m || acc[j] != acc[j]) ? acc[j] : m;
  for (; i < n; ++i) {
    const float v = static_cast<float>(p[i]);
    m = (v > m || v != v) ? v : m;
  }
  return m;
}

// Sum of a contiguous floating-point row: 16 float lanes (double for float64) over
// 2048-element blocks, the block sums combined in double.
template <class T>
inline double row_sum(const T* p, int64_t n) {
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
      for (int j = 0; j < V; ++j) acc[j] += static_cast<A>(q[k + j]);
    double s = 0;
    for (int j = 0; j < V; ++j) s += acc[j];
    total += s;
    i += m;
  }
  for (; i < n; ++i) total += (double)static_cast<A>(p[i]);
  return total;
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
// A contiguous tensor header over raw memory.
Tensor make_contiguous_header(char* data, int dtype, int ndim, const int64_t* shape);

// ---------------------------------------------------------------------------------------------
// registration
using KernelFn = void (*)(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);
template <KernelFn F>
PyObject* py_wrap(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    F(args, nargs, kwnames);
  } catch (const Error& e) {
    PyErr_SetString(e.type, e.msg.c_str());
    return nullptr;
  } catch (const PyErrAlreadySet&) {
    return nullptr;
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}
#define EMBER_DEF(NAME, FN) \
  PyMethodDef { NAME, (PyCFunction)(void (*)(void)) & ::ember::py_wrap<FN>, METH_FASTCALL | METH_KEYWORDS, nullptr }

void register_copy(std::vector<PyMethodDef>& defs);
void register_unary(std::vector<PyMethodDef>& defs);
void register_binary(std::vector<PyMethodDef>& defs);
void register_compare(std::vector<PyMethodDef>& defs);
void register_reduce(std::vector<PyMethodDef>& defs);
void register_scan(std::vector<PyMethodDef>& defs);
void register_softmax(std::vector<PyMethodDef>& defs);
void register_index(std::vector<PyMethodDef>& defs);
void register_sort(std::vector<PyMethodDef>& defs);
void register_matmul(std::vector<PyMethodDef>& defs);
void register_random(std::vector<PyMethodDef>& defs);
void register_ternary(std::vector<PyMethodDef>& defs);
void register_conv(std::vector<PyMethodDef>& defs);

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
void init_strings();
bool init_storage_type(PyObject* module);

// matmul.cpp
void blas_set_num_threads(int n);

}  // namespace ember
