// Binary elementwise ops: arithmetic (out, a, b of one dtype), comparisons (bool out) and
// logical ops (bool operands). Integer arithmetic wraps; integer division by zero cannot
// raise without a host sync, so it yields 0 (PyTorch CUDA's result is undefined there).
#include "kernels.cuh"

namespace ember {

namespace {

#define EMBER_C(v) static_cast<compute_t<T>>(v)

struct Op_add {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a || b;
    else if constexpr (is_fp_v<T>) return cvt<T>(EMBER_C(a) + EMBER_C(b));
    else return (T)((wrap_t<T>)a + (wrap_t<T>)b);
  }
};
struct Op_sub {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (is_fp_v<T>) return cvt<T>(EMBER_C(a) - EMBER_C(b));
    else return (T)((wrap_t<T>)a - (wrap_t<T>)b);
  }
};
struct Op_mul {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else if constexpr (is_fp_v<T>) return cvt<T>(EMBER_C(a) * EMBER_C(b));
    else return (T)((wrap_t<T>)a * (wrap_t<T>)b);
  }
};
struct Op_div {  // true division (floating dtypes)
  template <class T> __device__ T operator()(T a, T b) const { return cvt<T>(EMBER_C(a) / EMBER_C(b)); }
};
struct Op_div_trunc {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (is_fp_v<T>) return cvt<T>(trunc(EMBER_C(a) / EMBER_C(b)));
    else if constexpr (std::is_signed_v<T>) return b == 0 ? T(0) : b == -1 ? (T)(0 - (wrap_t<T>)a) : (T)(a / b);
    else return b == 0 ? T(0) : (T)(a / b);
  }
};
struct Op_div_floor {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (is_fp_v<T>) {
      using C = compute_t<T>;
      const C x = a, y = b;
      if (y == 0) return cvt<T>(x / y);
      const C mod = fmod(x, y);
      C div = (x - mod) / y;
      if (mod != 0 && ((y < 0) != (mod < 0))) div -= C(1);
      C fl;
      if (div != 0) {
        fl = floor(div);
        if (div - fl > C(0.5)) fl += C(1);
      } else {
        fl = copysign(C(0), x / y);
      }
      return cvt<T>(fl);
    } else if constexpr (std::is_signed_v<T>) {
      if (b == 0) return T(0);
      if (b == -1) return (T)(0 - (wrap_t<T>)a);
      T q = (T)(a / b), r = (T)(a % b);
      if (r != 0 && ((r < 0) != (b < 0))) --q;
      return q;
    } else {
      return b == 0 ? T(0) : (T)(a / b);
    }
  }
};
struct Op_maximum {  // NaN propagates
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (is_fp_v<T>) {
      const auto x = EMBER_C(a), y = EMBER_C(b);
      return (x != x) ? a : (y != y) ? b : (x > y ? a : b);
    } else {
      return a > b ? a : b;
    }
  }
};
struct Op_minimum {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (is_fp_v<T>) {
      const auto x = EMBER_C(a), y = EMBER_C(b);
      return (x != x) ? a : (y != y) ? b : (x < y ? a : b);
    } else {
      return a < b ? a : b;
    }
  }
};
struct Op_fmod {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (is_fp_v<T>) return cvt<T>(fmod(EMBER_C(a), EMBER_C(b)));
    else if constexpr (std::is_signed_v<T>) return (b == 0 || b == -1) ? T(0) : (T)(a % b);
    else return b == 0 ? T(0) : (T)(a % b);
  }
};
struct Op_remainder {  // Python's %: the divisor's sign
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (is_fp_v<T>) {
      using C = compute_t<T>;
      const C x = a, y = b;
      C m = fmod(x, y);
      if (m != 0 && ((y < 0) != (m < 0))) m += y;
      return cvt<T>(m);
    } else if constexpr (std::is_signed_v<T>) {
      if (b == 0 || b == -1) return T(0);
      T m = (T)(a % b);
      if (m != 0 && ((b < 0) != (m < 0))) m = (T)(m + b);
      return m;
    } else {
      return b == 0 ? T(0) : (T)(a % b);
    }
  }
};
struct Op_pow {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (is_fp_v<T>) {
      return cvt<T>(pow(EMBER_C(a), EMBER_C(b)));
    } else if constexpr (std::is_same_v<T, bool>) {
      return a || !b;
    } else {
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) return a == 1 ? T(1) : a == -1 ? ((b & 1) ? T(-1) : T(1)) : T(0);
      }
      wrap_t<T> r = 1, base = (wrap_t<T>)a;
      auto e = b;
      while (e) {
        if (e & 1) r *= base;
        base *= base;
        e >>= 1;
      }
      return (T)r;
    }
  }
};
struct Op_bitwise_and { template <class T> __device__ T operator()(T a, T b) const { return (T)(a & b); } };
struct Op_bitwise_or { template <class T> __device__ T operator()(T a, T b) const { return (T)(a | b); } };
struct Op_bitwise_xor { template <class T> __device__ T operator()(T a, T b) const { return (T)(a ^ b); } };

template <unsigned Mask, class Op>
void arith(const char* name, const Tensor& out, const Tensor& a, const Tensor& b) {
  check_same_dtype(name, out, a);
  check_same_dtype(name, out, b);
  const Tensor* ts[3] = {&out, &a, &b};
  dispatch<Mask>(out.dtype, name, [&](auto tag) {
    using T = EMBER_T(tag);
    same_type_op<T, 2>(name, ts, Op{});
  });
}

template <unsigned Mask, class Op>
void arith_kernel(const char* name, PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args(name, a_, n_, kw_, {"out", "a", "b"}, 3);
  arith<Mask, Op>(name, args.out(0), args.tensor(1), args.tensor(2));
}

#define EMBER_ARITH(NAME, MASK) \
  void k_##NAME(PyObject* const* a, Py_ssize_t n, PyObject* kw) { arith_kernel<MASK, Op_##NAME>(#NAME, a, n, kw); }
EMBER_ARITH(add, M_ALL)
EMBER_ARITH(sub, M_NUM)
EMBER_ARITH(mul, M_ALL)
EMBER_ARITH(maximum, M_ALL)
EMBER_ARITH(minimum, M_ALL)
EMBER_ARITH(fmod, M_NUM)
EMBER_ARITH(remainder, M_NUM)
EMBER_ARITH(pow, M_ALL)
EMBER_ARITH(bitwise_and, M_BOOLINT)
EMBER_ARITH(bitwise_or, M_BOOLINT)
EMBER_ARITH(bitwise_xor, M_BOOLINT)

void k_div(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args("div", a_, n_, kw_, {"out", "a", "b", "rounding_mode"}, 3);
  Tensor out = args.out(0), a = args.tensor(1), b = args.tensor(2);
  const std::string mode = args.get_str(3);
  if (mode.empty()) {
    if (!is_floating_code(out.dtype))
      raise(PyExc_TypeError, "div(): true division is not implemented for dtype %s on cuda (promote first)",
            dtype_name(out.dtype));
    arith<M_FLOAT, Op_div>("div", out, a, b);
  } else if (mode == "trunc") {
    arith<M_NUM, Op_div_trunc>("div", out, a, b);
  } else if (mode == "floor") {
    arith<M_NUM, Op_div_floor>("div", out, a, b);
  } else {
    raise(PyExc_ValueError, "div(): expected rounding_mode to be one of None, 'trunc' or 'floor' but found '%s'",
          mode.c_str());
  }
}

// ---- comparisons and logical ops: bool out ---------------------------------------------

struct Cmp_eq { template <class C> __device__ bool operator()(C a, C b) const { return a == b; } };
struct Cmp_ne { template <class C> __device__ bool operator()(C a, C b) const { return a != b; } };
struct Cmp_lt { template <class C> __device__ bool operator()(C a, C b) const { return a < b; } };
struct Cmp_le { template <class C> __device__ bool operator()(C a, C b) const { return a <= b; } };
struct Cmp_gt { template <class C> __device__ bool operator()(C a, C b) const { return a > b; } };
struct Cmp_ge { template <class C> __device__ bool operator()(C a, C b) const { return a >= b; } };
struct Cmp_logical_and { template <class C> __device__ bool operator()(C a, C b) const { return a && b; } };
struct Cmp_logical_or { template <class C> __device__ bool operator()(C a, C b) const { return a || b; } };
struct Cmp_logical_xor { template <class C> __device__ bool operator()(C a, C b) const { return (bool)a != (bool)b; } };

template <class T, class Cmp>
struct CmpF {
  __device__ void operator()(char** p) const {
    *(bool*)p[0] = Cmp{}(static_cast<compute_t<T>>(*(const T*)p[1]), static_cast<compute_t<T>>(*(const T*)p[2]));
  }
};

template <class Cmp>
void compare_kernel(const char* name, PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args(name, a_, n_, kw_, {"out", "a", "b"}, 3);
  Tensor out = args.out(0), a = args.tensor(1), b = args.tensor(2);
  check_dtype(name, out, kBool, "out");
  check_same_dtype(name, a, b);
  const Tensor* ts[3] = {&out, &a, &b};
  Geom<3> g;
  const int64_t n = make_geom<3>(g, ts, name);
  dispatch<M_ALL>(a.dtype, name, [&](auto tag) {
    using T = EMBER_T(tag);
    launch_elementwise<3>(name, g, n, out.device, CmpF<T, Cmp>{});
  });
}

#define EMBER_CMP(NAME) \
  void k_##NAME(PyObject* const* a, Py_ssize_t n, PyObject* kw) { compare_kernel<Cmp_##NAME>(#NAME, a, n, kw); }
EMBER_CMP(eq)
EMBER_CMP(ne)
EMBER_CMP(lt)
EMBER_CMP(le)
EMBER_CMP(gt)
EMBER_CMP(ge)
EMBER_CMP(logical_and)
EMBER_CMP(logical_or)
EMBER_CMP(logical_xor)

}  // namespace

#define R(NAME) EMBER_KERNEL(#NAME, k_##NAME);
R(add) R(sub) R(mul) R(div) R(maximum) R(minimum) R(fmod) R(remainder) R(pow) R(bitwise_and) R(bitwise_or)
R(bitwise_xor) R(eq) R(ne) R(lt) R(le) R(gt) R(ge) R(logical_and) R(logical_or) R(logical_xor)
#undef R

}  // namespace ember
