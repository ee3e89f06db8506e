// Unary elementwise kernels: out = f(x), out and x of the same dtype.
#include "ember.h"
#include "vecmath.h"

namespace ember {

namespace {

// Floating-point-only math: f is written on the compute type C (float for half types).
#define EMBER_FLOAT_UNARY(NAME, EXPR)                                                      \
  void k_##NAME(PyObject* const* a, Py_ssize_t n, PyObject* kw) {                           \
    Args args(#NAME, a, n, kw, {"out", "x"}, 2);                                            \
    Tensor out = args.out(0);                                                                \
    Tensor x = args.tensor(1);                                                               \
    check_same_dtype(#NAME, out, x);                                                         \
    dispatch<M_FLOAT>(x.dtype, #NAME, [&](auto tag) {                                        \
      using T = EMBER_T(tag);                                                                \
      using C = compute_t<T>;                                                                \
      unary_op<T, T>(#NAME, out, x, [](T v) -> T {                                           \
        const C x = static_cast<C>(v);                                                       \
        return cvt<T>(static_cast<C>(EXPR));                                                 \
      });                                                                                    \
    });                                                                                      \
  }

// exp / sigmoid / tanh: float-compute types (float32, float16, bfloat16) use the vectorisable
// fast_expf / fast_tanhf; float64 uses libm.
template <class C> inline C exp_c(C x) {
  if constexpr (std::is_same_v<C, float>) return fast_expf(x);
  else return std::exp(x);
}
template <class C> inline C tanh_c(C x) {
  if constexpr (std::is_same_v<C, float>) return fast_tanhf(x);
  else return std::tanh(x);
}
// float32 + contiguous runs go to the multiversioned loops of vecmath.cpp
#define EMBER_FAST_UNARY(NAME, EXPR, VEC)                                                  \
  void k_##NAME(PyObject* const* a, Py_ssize_t n, PyObject* kw) {                           \
    Args args(#NAME, a, n, kw, {"out", "x"}, 2);                                            \
    Tensor out = args.out(0);                                                                \
    Tensor x = args.tensor(1);                                                               \
    check_same_dtype(#NAME, out, x);                                                         \
    if (x.dtype == kFloat32) {                                                               \
      const Tensor* ts[2] = {&out, &x};                                                      \
      ElemIter it;                                                                           \
      it.build(ts, 2, #NAME);                                                                \
      if (it.numel == 0) return;                                                             \
      NoGil g(it.numel >= kGilThreshold);                                                    \
      it.run([](char* const* p, const int64_t* s, int64_t m) {                               \
        if (s[0] == 4 && s[1] == 4) {                                                        \
          VEC((float*)p[0], (const float*)p[1], m);                                          \
        } else {                                                                             \
          using C = float;                                                                   \
          for (int64_t i = 0; i < m; ++i) {                                                  \
            const C x = *(const float*)(p[1] + i * s[1]);                                    \
            *(float*)(p[0] + i * s[0]) = (EXPR);                                             \
          }                                                                                  \
        }                                                                                    \
      });                                                                                    \
      return;                                                                                \
    }                                                                                        \
    dispatch<M_FLOAT>(x.dtype, #NAME, [&](auto tag) {                                        \
      using T = EMBER_T(tag);                                                                \
      using C = compute_t<T>;                                                                \
      unary_op<T, T>(#NAME, out, x, [](T v) -> T {                                           \
        const C x = static_cast<C>(v);                                                       \
        return cvt<T>(static_cast<C>(EXPR));                                                 \
      });                                                                                    \
    });                                                                                      \
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

// Rounding: floats round; integers (and bool) are returned unchanged, as in PyTorch.
#define EMBER_ROUND_UNARY(NAME, EXPR)                                                      \
  void k_##NAME(PyObject* const* a, Py_ssize_t n, PyObject* kw) {                           \
    Args args(#NAME, a, n, kw, {"out", "x"}, 2);                                            \
    Tensor out = args.out(0);                                                                \
    Tensor x = args.tensor(1);                                                               \
    check_same_dtype(#NAME, out, x);                                                         \
    if (!is_floating_code(x.dtype)) {                                                        \
      dispatch<M_ALL>(x.dtype, #NAME, [](auto) {});                                          \
      copy_tensor(out, x);                                                                   \
      return;                                                                                \
    }                                                                                        \
    dispatch<M_FLOAT>(x.dtype, #NAME, [&](auto tag) {                                        \
      using T = EMBER_T(tag);                                                                \
      using C = compute_t<T>;                                                                \
      unary_op<T, T>(#NAME, out, x, [](T v) -> T {                                           \
        const C x = static_cast<C>(v);                                                       \
        return cvt<T>(static_cast<C>(EXPR));                                                 \
      });                                                                                    \
    });                                                                                      \
  }

EMBER_ROUND_UNARY(floor, std::floor(x))
EMBER_ROUND_UNARY(ceil, std::ceil(x))
EMBER_ROUND_UNARY(trunc, std::trunc(x))
EMBER_ROUND_UNARY(round, std::nearbyint(x))  // half to even (default rounding mode)

void k_neg(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("neg", a, n, kw, {"out", "x"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_same_dtype("neg", out, x);
  dispatch<M_NUM>(x.dtype, "neg", [&](auto tag) {
    using T = EMBER_T(tag);
    unary_op<T, T>("neg", out, x, [](T v) -> T {
      if constexpr (is_fp_v<T>) return cvt<T>(-static_cast<compute_t<T>>(v));
      else return (T)(wrap_t<T>(0) - (wrap_t<T>)v);
    });
  });
}

void k_abs(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("abs", a, n, kw, {"out", "x"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_same_dtype("abs", out, x);
  dispatch<M_NUM>(x.dtype, "abs", [&](auto tag) {
    using T = EMBER_T(tag);
    unary_op<T, T>("abs", out, x, [](T v) -> T {
      if constexpr (is_half_v<T>) {
        T r;
        r.x = (uint16_t)(v.x & 0x7fff);
        return r;
      } else if constexpr (std::is_floating_point_v<T>) {
        return std::fabs(v);
      } else if constexpr (std::is_unsigned_v<T>) {
        return v;
      } else {
        return v < 0 ? (T)(wrap_t<T>(0) - (wrap_t<T>)v) : v;
      }
    });
  });
}

void k_sign(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("sign", a, n, kw, {"out", "x"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_same_dtype("sign", out, x);
  dispatch<M_ALL>(x.dtype, "sign", [&](auto tag) {
    using T = EMBER_T(tag);
    using C = compute_t<T>;
    unary_op<T, T>("sign", out, x, [](T v) -> T {
      if constexpr (std::is_same_v<T, bool>) return v;
      else {
        const C c = static_cast<C>(v);
        return cvt<T>(static_cast<C>((C(0) < c) - (c < C(0))));  // NaN -> 0 as PyTorch
      }
    });
  });
}

void k_bitwise_not(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("bitwise_not", a, n, kw, {"out", "x"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_same_dtype("bitwise_not", out, x);
  dispatch<M_BOOLINT>(x.dtype, "bitwise_not", [&](auto tag) {
    using T = EMBER_T(tag);
    unary_op<T, T>("bitwise_not", out, x, [](T v) -> T {
      if constexpr (std::is_same_v<T, bool>) return !v;
      else return (T)~v;
    });
  });
}

// float classification: out bool, x any dtype (integers are never NaN / inf)
template <int Kind>  // 0 isnan, 1 isinf, 2 isfinite
void classify(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args(op, a, n, kw, {"out", "x"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_dtype(op, out, kBool, "out");
  dispatch<M_ALL>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    unary_op<bool, T>(op, out, x, [](T v) -> bool {
      if constexpr (is_fp_v<T>) {
        const compute_t<T> c = static_cast<compute_t<T>>(v);
        if constexpr (Kind == 0) return c != c;
        else if constexpr (Kind == 1) return std::isinf(c);
        else return std::isfinite(c);
      } else {
        return Kind == 2;
      }
    });
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

void register_unary(std::vector<PyMethodDef>& defs) {
#define R(NAME) defs.push_back(EMBER_DEF(#NAME, k_##NAME))
  R(exp); R(log); R(sin); R(cos); R(tan); R(sqrt); R(rsqrt); R(erf); R(tanh); R(sigmoid);
  R(reciprocal); R(log1p); R(expm1); R(log2);
  R(floor); R(ceil); R(trunc); R(round);
  R(neg); R(abs); R(sign); R(bitwise_not);
  R(isnan); R(isinf); R(isfinite); R(logical_not);
#undef R
}

}  // namespace ember
