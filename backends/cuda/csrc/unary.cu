// Unary elementwise ops: out = f(x), out and x of one dtype (the dispatcher promotes).
#include "kernels.cuh"

namespace ember {

namespace {

// f(x) in the compute type: float for 16-bit floats and float32, double for float64.
#define EMBER_FLOAT_FN(NAME, FEXPR, DEXPR)                                 \
  struct Op_##NAME {                                                       \
    template <class T>                                                     \
    __device__ T operator()(T v) const {                                   \
      if constexpr (std::is_same_v<T, double>) {                           \
        const double x = v;                                                \
        return DEXPR;                                                      \
      } else {                                                             \
        const float x = static_cast<float>(v);                             \
        return cvt<T>(FEXPR);                                              \
      }                                                                    \
    }                                                                      \
  };

EMBER_FLOAT_FN(exp, expf(x), exp(x))
EMBER_FLOAT_FN(log, logf(x), log(x))
EMBER_FLOAT_FN(sin, sinf(x), sin(x))
EMBER_FLOAT_FN(cos, cosf(x), cos(x))
EMBER_FLOAT_FN(tan, tanf(x), tan(x))
EMBER_FLOAT_FN(sqrt, sqrtf(x), sqrt(x))
EMBER_FLOAT_FN(rsqrt, rsqrtf(x), rsqrt(x))
EMBER_FLOAT_FN(erf, erff(x), erf(x))
EMBER_FLOAT_FN(expm1, expm1f(x), expm1(x))
EMBER_FLOAT_FN(log1p, log1pf(x), log1p(x))
EMBER_FLOAT_FN(log2, log2f(x), log2(x))
EMBER_FLOAT_FN(tanh, tanhf(x), tanh(x))
EMBER_FLOAT_FN(sigmoid, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + exp(-x)))
EMBER_FLOAT_FN(reciprocal, 1.0f / x, 1.0 / x)

// floor / ceil / trunc / round: identity on integers
#define EMBER_ROUND_FN(NAME, FEXPR, DEXPR)                                 \
  struct Op_##NAME {                                                       \
    template <class T>                                                     \
    __device__ T operator()(T v) const {                                   \
      if constexpr (std::is_same_v<T, double>) {                           \
        const double x = v;                                                \
        return DEXPR;                                                      \
      } else if constexpr (is_fp_v<T>) {                                   \
        const float x = static_cast<float>(v);                             \
        return cvt<T>(FEXPR);                                              \
      } else {                                                             \
        return v;                                                          \
      }                                                                    \
    }                                                                      \
  };
EMBER_ROUND_FN(floor, floorf(x), floor(x))
EMBER_ROUND_FN(ceil, ceilf(x), ceil(x))
EMBER_ROUND_FN(trunc, truncf(x), trunc(x))
EMBER_ROUND_FN(round, rintf(x), rint(x))  // half to even, as PyTorch

struct Op_neg {
  template <class T>
  __device__ T operator()(T v) const {
    if constexpr (is_fp_v<T>) return cvt<T>(-static_cast<compute_t<T>>(v));
    else return (T)(0 - (std::make_unsigned_t<T>)v);
  }
};
struct Op_abs {
  template <class T>
  __device__ T operator()(T v) const {
    if constexpr (is_fp_v<T>) {
      const compute_t<T> x = static_cast<compute_t<T>>(v);
      return cvt<T>(x < 0 ? -x : (x == 0 ? compute_t<T>(0) : x));
    } else if constexpr (std::is_signed_v<T>) {
      return v < 0 ? (T)(0 - (std::make_unsigned_t<T>)v) : v;
    } else {
      return v;
    }
  }
};
struct Op_sign {
  template <class T>
  __device__ T operator()(T v) const {
    if constexpr (is_fp_v<T>) {
      const compute_t<T> x = static_cast<compute_t<T>>(v);
      return cvt<T>(x != x ? x : (compute_t<T>)((x > 0) - (x < 0)));
    } else if constexpr (std::is_signed_v<T>) {
      return (T)((v > 0) - (v < 0));
    } else {
      return (T)(v > 0);
    }
  }
};
struct Op_bitwise_not {
  template <class T>
  __device__ T operator()(T v) const {
    if constexpr (std::is_same_v<T, bool>) return !v;
    else return (T)~v;
  }
};

template <unsigned Mask, class Op>
void unary_kernel(const char* name, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args(name, a, n, kw, {"out", "x"}, 2);
  Tensor out = args.out(0), x = args.tensor(1);
  check_same_dtype(name, out, x);
  const Tensor* ts[2] = {&out, &x};
  dispatch<Mask>(out.dtype, name, [&](auto tag) {
    using T = EMBER_T(tag);
    same_type_op<T, 1>(name, ts, Op{});
  });
}

#define EMBER_UNARY(NAME, MASK) \
  void k_##NAME(PyObject* const* a, Py_ssize_t n, PyObject* kw) { unary_kernel<MASK, Op_##NAME>(#NAME, a, n, kw); }

EMBER_UNARY(exp, M_FLOAT)
EMBER_UNARY(log, M_FLOAT)
EMBER_UNARY(sin, M_FLOAT)
EMBER_UNARY(cos, M_FLOAT)
EMBER_UNARY(tan, M_FLOAT)
EMBER_UNARY(sqrt, M_FLOAT)
EMBER_UNARY(rsqrt, M_FLOAT)
EMBER_UNARY(erf, M_FLOAT)
EMBER_UNARY(expm1, M_FLOAT)
EMBER_UNARY(log1p, M_FLOAT)
EMBER_UNARY(log2, M_FLOAT)
EMBER_UNARY(tanh, M_FLOAT)
EMBER_UNARY(sigmoid, M_FLOAT)
EMBER_UNARY(reciprocal, M_FLOAT)
EMBER_UNARY(floor, M_NUM)
EMBER_UNARY(ceil, M_NUM)
EMBER_UNARY(trunc, M_NUM)
EMBER_UNARY(round, M_NUM)
EMBER_UNARY(neg, M_NUM)
EMBER_UNARY(abs, M_NUM)
EMBER_UNARY(sign, M_NUM)
EMBER_UNARY(bitwise_not, M_BOOLINT)

}  // namespace

#define R(NAME) EMBER_KERNEL(#NAME, k_##NAME);
R(exp) R(log) R(sin) R(cos) R(tan) R(sqrt) R(rsqrt) R(erf) R(expm1) R(log1p) R(log2) R(tanh) R(sigmoid)
R(reciprocal) R(floor) R(ceil) R(trunc) R(round) R(neg) R(abs) R(sign) R(bitwise_not)
#undef R

}  // namespace ember
