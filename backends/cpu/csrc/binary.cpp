// Binary arithmetic: add, sub, mul, div, pow, maximum, minimum, fmod.
// out, a, b share one dtype (the dispatcher promoted and broadcast them).
// Integer arithmetic wraps (two's complement) via unsigned arithmetic.
#include "ember.h"

namespace ember {

namespace {

struct Bin3 {
  Tensor out, a, b;
};

// (out, a, b) of one dtype
Bin3 parse3(const char* op, const Args& args) {
  Bin3 r{args.out(0), args.tensor(1), args.tensor(2)};
  check_same_dtype(op, r.out, r.a);
  check_same_dtype(op, r.out, r.b);
  return r;
}

#define EMBER_PARSE(NAME)                                 \
  Args args(NAME, a_, n_, kw_, {"out", "a", "b"}, 3);     \
  Bin3 t = parse3(NAME, args);

void k_add(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  EMBER_PARSE("add")
  binary_same<M_ALL>("add", t.out, t.a, t.b, [](auto x, auto y) { return add_elem(x, y); });
}

void k_sub(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  EMBER_PARSE("sub")
  if (t.out.dtype == kBool)
    raise(PyExc_TypeError, "sub(): subtraction of bool tensors is not supported; use logical_xor() or bitwise_xor()");
  binary_same<M_NUM>("sub", t.out, t.a, t.b, [](auto x, auto y) { return sub_elem(x, y); });
}

void k_mul(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  EMBER_PARSE("mul")
  binary_same<M_ALL>("mul", t.out, t.a, t.b, [](auto x, auto y) { return mul_elem(x, y); });
}

template <class T>
void check_nonzero_divisor(const char* op, const Tensor& b) {
  if (any_elem<T>(b, [](T v) { return v == 0; }))
    raise(PyExc_RuntimeError, "%s(): ZeroDivisionError: integer division by zero", op);
}

// floor division for floating point, as PyTorch's div_floor_floating
template <class C>
inline C div_floor_fp(C a, C b) {
  if (b == 0) return a / b;
  C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if ((mod != 0) && ((b < 0) != (mod < 0))) div -= C(1);
  C floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > C(0.5)) floordiv += C(1);
  } else {
    floordiv = std::copysign(C(0), a / b);
  }
  return floordiv;
}

template <class T>
inline T int_div_trunc(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return sub_elem(T(0), x);  // no overflow trap on MIN / -1
  }
  return (T)(x / y);
}

template <class T>
inline T int_div_floor(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return sub_elem(T(0), x);  // no overflow trap on MIN / -1
    T q = (T)(x / y);
    T r = (T)(x % y);
    if (r != 0 && ((r < 0) != (y < 0))) --q;
    return q;
  } else {
    return (T)(x / y);
  }
}

template <class T>
inline T int_fmod(T x, T y) {  // C's %: the result takes the dividend's sign
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return T(0);
  }
  return (T)(x % y);
}

template <class T>
inline T int_remainder(T x, T y) {  // Python's %: the result takes the divisor's sign
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return T(0);
    T m = (T)(x % y);
    if (m != 0 && ((y < 0) != (m < 0))) m = (T)(m + y);
    return m;
  } else {
    return (T)(x % y);
  }
}

// Numeric binary ops computed as fp(C x, C y) on the compute type for floats and as
// in(T x, T y) for integers; integers first check b (no zero divisor / negative exponent).
enum IntCheck { kNonzeroDivisor, kNonnegativeExponent };
template <IntCheck Check, class FP, class IN>
void fp_int_op(const char* op, const Bin3& t, FP fp, IN in) {
  dispatch<M_NUM>(t.out.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    if constexpr (is_fp_v<T>) {
      using C = compute_t<T>;
      binary_op<T, T, T>(op, t.out, t.a, t.b, [fp](T x, T y) -> T {
        return cvt<T>(static_cast<C>(fp(static_cast<C>(x), static_cast<C>(y))));
      });
    } else {
      if constexpr (Check == kNonzeroDivisor) {
        check_nonzero_divisor<T>(op, t.b);
      } else if constexpr (std::is_signed_v<T>) {
        if (any_elem<T>(t.b, [](T v) { return v < 0; }))
          raise(PyExc_RuntimeError, "%s(): Integers to negative integer powers are not allowed.", op);
      }
      binary_op<T, T, T>(op, t.out, t.a, t.b, [in](T x, T y) -> T { return in(x, y); });
    }
  });
}
void k_div(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args("div", a_, n_, kw_, {"out", "a", "b", "rounding_mode"}, 3);
  Bin3 t = parse3("div", args);
  std::string mode = args.get_str(3);
  if (mode.empty()) {
    if (!is_floating_code(t.out.dtype))
      raise(PyExc_TypeError,
            "div(): true division is not implemented for dtype %s on cpu (promote to a floating dtype first)",
            dtype_name(t.out.dtype));
    binary_same<M_FLOAT>("div", t.out, t.a, t.b, [](auto x, auto y) {
      using T = decltype(x);
      return cvt<T>(static_cast<compute_t<T>>(x) / static_cast<compute_t<T>>(y));
    });
  } else if (mode == "trunc") {
    fp_int_op<kNonzeroDivisor>("div", t, [](auto x, auto y) { return std::trunc(x / y); },
                               [](auto x, auto y) { return int_div_trunc(x, y); });
  } else if (mode == "floor") {
    fp_int_op<kNonzeroDivisor>("div", t, [](auto x, auto y) { return div_floor_fp(x, y); },
                               [](auto x, auto y) { return int_div_floor(x, y); });
  } else {
    raise(PyExc_ValueError,
          "div(): expected rounding_mode to be one of None, 'trunc' or 'floor' but found '%s'", mode.c_str());
  }
}

template <class T>
inline T int_pow(T base, T exp) {
  using U = std::conditional_t<(sizeof(T) < 8), uint32_t, uint64_t>;
  U r = 1, b = (U)base;
  uint64_t e = (uint64_t)exp;
  while (e) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return (T)r;
}

void k_pow(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  EMBER_PARSE("pow")
  fp_int_op<kNonnegativeExponent>("pow", t, [](auto x, auto y) { return std::pow(x, y); },
                                  [](auto x, auto y) { return int_pow(x, y); });
}

template <bool IsMax>
void minmax(const char* op, PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  EMBER_PARSE(op)
  binary_same<M_ALL>(op, t.out, t.a, t.b, [](auto x, auto y) {
    using T = decltype(x);
    if constexpr (is_fp_v<T>) {
      using C = compute_t<T>;
      const C cx = static_cast<C>(x), cy = static_cast<C>(y);
      if (cx != cx) return x;
      if (cy != cy) return y;
      if constexpr (IsMax) return cx >= cy ? x : y;
      else return cx <= cy ? x : y;
    } else {
      if constexpr (IsMax) return x >= y ? x : y;
      else return x <= y ? x : y;
    }
  });
}
void k_maximum(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) { minmax<true>("maximum", a_, n_, kw_); }
void k_minimum(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) { minmax<false>("minimum", a_, n_, kw_); }

void k_fmod(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  EMBER_PARSE("fmod")
  fp_int_op<kNonzeroDivisor>("fmod", t, [](auto x, auto y) { return std::fmod(x, y); },
                             [](auto x, auto y) { return int_fmod(x, y); });
}

// remainder: Python's % (result takes the divisor's sign)
void k_remainder(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  EMBER_PARSE("remainder")
  fp_int_op<kNonzeroDivisor>("remainder", t,
                             [](auto x, auto y) {
                               auto m = std::fmod(x, y);
                               if (m != 0 && ((y < 0) != (m < 0))) m += y;
                               return m;
                             },
                             [](auto x, auto y) { return int_remainder(x, y); });
}

}  // namespace

#define R(NAME) EMBER_KERNEL(#NAME, k_##NAME)
R(add); R(sub); R(mul); R(div); R(pow); R(maximum); R(minimum); R(fmod); R(remainder);
#undef R

}  // namespace ember
