// Unary elementwise kernels: out = f(x), out and x of the same dtype.
#include "ember.h"
#include "vecmath.h"

namespace ember {

namespace {

struct OutX {
  Tensor out, x;
};
// (out, x) of one dtype
OutX parse_out_x(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args(op, a, n, kw, {"out", "x"}, 2);
  OutX t{args.out(0), args.tensor(1)};
  check_same_dtype(op, t.out, t.x);
  return t;
}

// out = f(x), out and x of one dtype in Mask; f is generic: T f(T)
template <unsigned Mask, class F>
void same_dtype_unary(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw, F f) {
  OutX t = parse_out_x(op, a, n, kw);
  unary_same<Mask>(op, t.out, t.x, f);
}

// Floating-point math: f(C x) on the compute type C (float for half types).
template <class F>
void float_math(const char* op, const Tensor& out, const Tensor& x, F f) {
  dispatch<M_FLOAT>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    using C = compute_t<T>;
    unary_op<T, T>(op, out, x, [f](T v) -> T { return cvt<T>(f(static_cast<C>(v))); });
  });
}

// float32: contiguous runs go to Vec (the multiversioned loops of vecmath.cpp), others to f
template <void (*Vec)(float*, const float*, int64_t), class F>
void float32_math(const char* op, const Tensor& out, const Tensor& x, F f) {
  const Tensor* ts[2] = {&out, &x};
  ElemIter it;
  it.build(ts, 2, op);
  if (it.numel == 0) return;
  NoGil g(it.numel >= kGilThreshold);
  it.run([f](char* const* p, const int64_t* s, int64_t m) {
    if (s[0] == 4 && s[1] == 4) {
      Vec((float*)p[0], (const float*)p[1], m);
    } else {
      for (int64_t i = 0; i < m; ++i) *(float*)(p[0] + i * s[0]) = f(*(const float*)(p[1] + i * s[1]));
    }
  });
}

// EXPR of x, of type C, as a generic function of x
#define EMBER_MATH_FN(EXPR) [](auto x) { using C = decltype(x); return static_cast<C>(EXPR); }

// Floating-point-only math.
#define EMBER_FLOAT_UNARY(NAME, EXPR)                                \
  void k_##NAME(PyObject* const* a, Py_ssize_t n, PyObject* kw) {     \
    OutX t = parse_out_x(#NAME, a, n, kw);                            \
    float_math(#NAME, t.out, t.x, EMBER_MATH_FN(EXPR));               \
  }

// exp / sigmoid / tanh: float32 contiguous runs use VEC; exp_c / tanh_c use the vectorisable
// fast_expf / fast_tanhf for the float-compute types (float32, float16, bfloat16), libm for float64.
#define EMBER_FAST_UNARY(NAME, EXPR, VEC)                            \
  void k_##NAME(PyObject* const* a, Py_ssize_t n, PyObject* kw) {     \
    OutX t = parse_out_x(#NAME, a, n, kw);                            \
    if (t.x.dtype == kFloat32)                                        \
      float32_math<VEC>(#NAME, t.out, t.x, EMBER_MATH_FN(EXPR));      \
    else                                                              \
      float_math(#NAME, t.out, t.x, EMBER_MATH_FN(EXPR));             \
  }

// Rounding: floats round; integers (and bool) are returned unchanged, as in PyTorch.
#define EMBER_ROUND_UNARY(NAME, EXPR)                                \
  void k_##NAME(PyObject* const* a, Py_ssize_t n, PyObject* kw) {     \
    OutX t = parse_out_x(#NAME, a, n, kw);                            \
    if (is_floating_code(t.x.dtype)) {                                \
      float_math(#NAME, t.out, t.x, EMBER_MATH_FN(EXPR));             \
    } else {                                                          \
      dispatch<M_ALL>(t.x.dtype, #NAME, [](auto) {});                 \
      copy_tensor(t.out, t.x);                                        \
    }                                                                 \
  }

EMBER_FAST_UNARY(exp, exp_c(x), vexp_f32)
EMBER_FLOAT_UNARY(log, std::log(x))
EMBER_FLOAT_UNARY(sin, std::sin(x))
EMBER_FLOAT_UNARY(cos, std::cos(x))
EMBER_FLOAT_UNARY(tan, std::tan(x))
EMBER_FLOAT_UNARY(sqrt, std::sqrt(x))
EMBER_FLOAT_UNARY(rsqrt, C(1) / std::sqrt(x))
EMBER_FLOAT_UNARY(erf, std::erf(x))
EMBER_FAST_UNARY(tanh, tanh_c(x), vtanh_f32)
EMBER_FAST_UNARY(sigmoid, C(1) / (C(1) + exp_c(-x)), vsigmoid_f32)
EMBER_FLOAT_UNARY(reciprocal, C(1) / x)
EMBER_FLOAT_UNARY(log1p, std::log1p(x))
EMBER_FLOAT_UNARY(expm1, std::expm1(x))
EMBER_FLOAT_UNARY(log2, std::log2(x))

EMBER_ROUND_UNARY(floor, std::floor(x))
EMBER_ROUND_UNARY(ceil, std::ceil(x))
EMBER_ROUND_UNARY(trunc, std::trunc(x))
EMBER_ROUND_UNARY(round, std::nearbyint(x))  // half to even (default rounding mode)

void k_neg(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  same_dtype_unary<M_NUM>("neg", a, n, kw, [](auto v) {
    using T = decltype(v);
    if constexpr (is_fp_v<T>) return cvt<T>(-static_cast<compute_t<T>>(v));
    else return sub_elem(T(0), v);
  });
}

void k_abs(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  same_dtype_unary<M_NUM>("abs", a, n, kw, [](auto v) {
    using T = decltype(v);
    if constexpr (is_half_v<T>) {
      T r;
      r.x = (uint16_t)(v.x & 0x7fff);
      return r;
    } else if constexpr (std::is_floating_point_v<T>) {
      return std::fabs(v);
    } else if constexpr (std::is_unsigned_v<T>) {
      return v;
    } else {
      return v < 0 ? sub_elem(T(0), v) : v;
    }
  });
}

void k_sign(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  same_dtype_unary<M_ALL>("sign", a, n, kw, [](auto v) {
    using T = decltype(v);
    using C = compute_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      return v;
    } else {
      const C c = static_cast<C>(v);
      return cvt<T>(static_cast<C>((C(0) < c) - (c < C(0))));  // NaN -> 0 as PyTorch
    }
  });
}

void k_bitwise_not(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  same_dtype_unary<M_BOOLINT>("bitwise_not", a, n, kw, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, bool>) return !v;
    else return (T)~v;
  });
}

// float classification: out bool, x any dtype (integers are never NaN / inf)
template <int Kind, class T>  // 0 isnan, 1 isinf, 2 isfinite
inline bool classify_elem(T v) {
  if constexpr (is_fp_v<T>) {
    const compute_t<T> c = static_cast<compute_t<T>>(v);
    if constexpr (Kind == 0) return c != c;
    else if constexpr (Kind == 1) return std::isinf(c);
    else return std::isfinite(c);
  } else {
    return Kind == 2;
  }
}
template <int Kind>
void classify(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args(op, a, n, kw, {"out", "x"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_dtype(op, out, kBool, "out");
  dispatch<M_ALL>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    unary_op<bool, T>(op, out, x, [](T v) -> bool { return classify_elem<Kind>(v); });
  });
}
void k_isnan(PyObject* const* a, Py_ssize_t n, PyObject* kw) { classify<0>("isnan", a, n, kw); }
void k_isinf(PyObject* const* a, Py_ssize_t n, PyObject* kw) { classify<1>("isinf", a, n, kw); }
void k_isfinite(PyObject* const* a, Py_ssize_t n, PyObject* kw) { classify<2>("isfinite", a, n, kw); }

void k_logical_not(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("logical_not", a, n, kw, {"out", "x"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  dispatch<M_ALL>(x.dtype, "logical_not", [&](auto tag) {
    using T = EMBER_T(tag);
    if (out.dtype == kBool) {
      unary_op<bool, T>("logical_not", out, x, [](T v) -> bool { return !cvt<bool>(v); });
    } else {
      check_same_dtype("logical_not", out, x);
      unary_op<T, T>("logical_not", out, x, [](T v) -> T { return cvt<T>(!cvt<bool>(v)); });
    }
  });
}

}  // namespace

#define R(NAME) EMBER_KERNEL(#NAME, k_##NAME)
R(exp); R(log); R(sin); R(cos); R(tan); R(sqrt); R(rsqrt); R(erf); R(tanh); R(sigmoid);
R(reciprocal); R(log1p); R(expm1); R(log2);
R(floor); R(ceil); R(trunc); R(round);
R(neg); R(abs); R(sign); R(bitwise_not);
R(isnan); R(isinf); R(isfinite); R(logical_not);
#undef R

}  // namespace ember
