// Comparisons (out bool), logical ops (out bool), bitwise ops, where.
#include "ember.h"

namespace ember {

namespace {

// out (bool) = f(a, b) for a, b of any one dtype; f is generic: bool f(T, T)
template <class F>
void bool_binary(const char* op, PyObject* const* a_, Py_ssize_t n_, PyObject* kw_, F f) {
  Args args(op, a_, n_, kw_, {"out", "a", "b"}, 3);
  Tensor out = args.out(0);
  Tensor a = args.tensor(1);
  Tensor b = args.tensor(2);
  check_dtype(op, out, kBool, "out");
  check_same_dtype(op, a, b);
  dispatch<M_ALL>(a.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    binary_op<bool, T, T>(op, out, a, b, [f](T x, T y) -> bool { return f(x, y); });
  });
}

// comparisons: on the compute type
template <class Cmp>
void compare(const char* op, PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  bool_binary(op, a_, n_, kw_, [](auto x, auto y) {
    using C = compute_t<decltype(x)>;
    return Cmp::apply(static_cast<C>(x), static_cast<C>(y));
  });
}

struct Eq { template <class C> static bool apply(C x, C y) { return x == y; } };
struct Ne { template <class C> static bool apply(C x, C y) { return x != y; } };
struct Lt { template <class C> static bool apply(C x, C y) { return x < y; } };
struct Le { template <class C> static bool apply(C x, C y) { return x <= y; } };
struct Gt { template <class C> static bool apply(C x, C y) { return x > y; } };
struct Ge { template <class C> static bool apply(C x, C y) { return x >= y; } };

void k_eq(PyObject* const* a, Py_ssize_t n, PyObject* kw) { compare<Eq>("eq", a, n, kw); }
void k_ne(PyObject* const* a, Py_ssize_t n, PyObject* kw) { compare<Ne>("ne", a, n, kw); }
void k_lt(PyObject* const* a, Py_ssize_t n, PyObject* kw) { compare<Lt>("lt", a, n, kw); }
void k_le(PyObject* const* a, Py_ssize_t n, PyObject* kw) { compare<Le>("le", a, n, kw); }
void k_gt(PyObject* const* a, Py_ssize_t n, PyObject* kw) { compare<Gt>("gt", a, n, kw); }
void k_ge(PyObject* const* a, Py_ssize_t n, PyObject* kw) { compare<Ge>("ge", a, n, kw); }

// logical ops: truthiness = != 0
template <class L>
void logical(const char* op, PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  bool_binary(op, a_, n_, kw_, [](auto x, auto y) { return L::apply(cvt<bool>(x), cvt<bool>(y)); });
}
struct LAnd { static bool apply(bool x, bool y) { return x && y; } };
struct LOr { static bool apply(bool x, bool y) { return x || y; } };
struct LXor { static bool apply(bool x, bool y) { return x != y; } };
void k_logical_and(PyObject* const* a, Py_ssize_t n, PyObject* kw) { logical<LAnd>("logical_and", a, n, kw); }
void k_logical_or(PyObject* const* a, Py_ssize_t n, PyObject* kw) { logical<LOr>("logical_or", a, n, kw); }
void k_logical_xor(PyObject* const* a, Py_ssize_t n, PyObject* kw) { logical<LXor>("logical_xor", a, n, kw); }

template <int Kind>  // 0 and, 1 or, 2 xor
void bitwise(const char* op, PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args(op, a_, n_, kw_, {"out", "a", "b"}, 3);
  Tensor out = args.out(0);
  Tensor a = args.tensor(1);
  Tensor b = args.tensor(2);
  check_same_dtype(op, out, a);
  check_same_dtype(op, out, b);
  binary_same<M_BOOLINT>(op, out, a, b, [](auto x, auto y) {
    using T = decltype(x);
    if constexpr (Kind == 0) return (T)(x & y);
    else if constexpr (Kind == 1) return (T)(x | y);
    else return (T)(x ^ y);
  });
}
void k_bitwise_and(PyObject* const* a, Py_ssize_t n, PyObject* kw) { bitwise<0>("bitwise_and", a, n, kw); }
void k_bitwise_or(PyObject* const* a, Py_ssize_t n, PyObject* kw) { bitwise<1>("bitwise_or", a, n, kw); }
void k_bitwise_xor(PyObject* const* a, Py_ssize_t n, PyObject* kw) { bitwise<2>("bitwise_xor", a, n, kw); }

void k_where(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args("where", a_, n_, kw_, {"out", "cond", "a", "b"}, 4);
  Tensor out = args.out(0);
  Tensor cond = args.tensor(1);
  Tensor a = args.tensor(2);
  Tensor b = args.tensor(3);
  if (cond.dtype != kBool && cond.dtype != kUInt8)
    raise(PyExc_TypeError, "where(): expected condition to be a bool tensor, got %s", dtype_name(cond.dtype));
  check_same_dtype("where", out, a);
  check_same_dtype("where", out, b);
  const Tensor* ts[4] = {&out, &cond, &a, &b};
  ElemIter it;
  it.build(ts, 4, "where");
  if (it.numel == 0) return;
  NoGil g(it.numel >= kGilThreshold);
  dispatch_size(out.itemsize, "where", [&](auto tag) {
    using T = EMBER_T(tag);
    it.run([](char* const* p, const int64_t* s, int64_t n) {
      constexpr int64_t sz = sizeof(T);
      if (s[0] == sz && s[1] == 1 && s[2] == sz && s[3] == sz) {
        T* o = (T*)p[0];
        const uint8_t* c = (const uint8_t*)p[1];
        const T* x = (const T*)p[2];
        const T* y = (const T*)p[3];
        for (int64_t i = 0; i < n; ++i) o[i] = select_bits(c[i] != 0, x[i], y[i]);
      } else if (s[0] == sz && s[1] == 1 && (s[2] == 0 || s[2] == sz) && (s[3] == 0 || s[3] == sz)) {
        // one branch a broadcast scalar (relu / threshold backward: where(mask, g, 0))
        T* o = (T*)p[0];
        const uint8_t* c = (const uint8_t*)p[1];
        const T* x = (const T*)p[2];
        const T* y = (const T*)p[3];
        const int64_t sx = s[2] / sz, sy = s[3] / sz;
        if (sx == 0) {
          const T xv = x[0];
          for (int64_t i = 0; i < n; ++i) o[i] = select_bits(c[i] != 0, xv, y[i * sy]);
        } else {
          const T yv = y[0];
          for (int64_t i = 0; i < n; ++i) o[i] = select_bits(c[i] != 0, x[i], yv);
        }
      } else {
        for (int64_t i = 0; i < n; ++i)
          *(T*)(p[0] + i * s[0]) =
              *(const uint8_t*)(p[1] + i * s[1]) ? *(const T*)(p[2] + i * s[2]) : *(const T*)(p[3] + i * s[3]);
      }
    });
  });
}

}  // namespace

#define R(NAME) EMBER_KERNEL(#NAME, k_##NAME)
R(eq); R(ne); R(lt); R(le); R(gt); R(ge);
R(logical_and); R(logical_or); R(logical_xor);
R(bitwise_and); R(bitwise_or); R(bitwise_xor);
R(where);
#undef R

}  // namespace ember
