// Ternary elementwise composites with native kernels: lerp, addcmul, addcdiv, clamp.
#include "ember.h"

namespace ember {

namespace {

// lerp(out, a, b, w): a + w * (b - a), computed as PyTorch does for accuracy near w = 1
void k_lerp(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args("lerp", a_, n_, kw_, {"out", "a", "b", "w"}, 4);
  Tensor out = args.out(0);
  Tensor a = args.tensor(1), b = args.tensor(2), w = args.tensor(3);
  check_same_dtype("lerp", out, a);
  check_same_dtype("lerp", out, b);
  check_same_dtype("lerp", out, w);
  dispatch<M_FLOAT>(out.dtype, "lerp", [&](auto tag) {
    using T = EMBER_T(tag);
    using C = compute_t<T>;
    ternary_op<T, T, T, T>("lerp", out, a, b, w, [](T x, T y, T z) -> T {
      const C cx = static_cast<C>(x), cy = static_cast<C>(y), cw = static_cast<C>(z);
      const C d = cy - cx;
      return cvt<T>(std::fabs(cw) < C(0.5) ? cx + cw * d : cy - d * (C(1) - cw));
    });
  });
}

struct ScalarArg {
  bool is_int;
  int64_t i;
  double d;
};
ScalarArg scalar_arg(const Args& args, int idx, double def) {
  ScalarArg s{false, 0, def};
  PyObject* o = args.v[idx];
  if (!o || o == Py_None) {
    if (def == (double)(int64_t)def) { s.is_int = true; s.i = (int64_t)def; }
    return s;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (!overflow) { s.is_int = true; s.i = v; s.d = (double)v; return s; }
  }
  s.d = args.get_double(idx);
  return s;
}

template <bool Div>
void addc(const char* op, PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args(op, a_, n_, kw_, {"out", "a", "t1", "t2", "value"}, 4);
  Tensor out = args.out(0);
  Tensor a = args.tensor(1), t1 = args.tensor(2), t2 = args.tensor(3);
  ScalarArg v = scalar_arg(args, 4, 1.0);
  check_same_dtype(op, out, a);
  check_same_dtype(op, out, t1);
  check_same_dtype(op, out, t2);
  if (Div && !is_floating_code(out.dtype))
    raise(PyExc_TypeError, "%s(): integer division is not supported; not implemented for dtype %s on cpu", op,
          dtype_name(out.dtype));
  dispatch<Div ? M_FLOAT : M_NUM>(out.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    using C = compute_t<T>;
    if constexpr (is_fp_v<T>) {
      const C val = static_cast<C>(v.d);
      ternary_op<T, T, T, T>(op, out, a, t1, t2, [val](T x, T y, T z) -> T {
        if constexpr (Div) return cvt<T>(static_cast<C>(x) + val * (static_cast<C>(y) / static_cast<C>(z)));
        else return cvt<T>(static_cast<C>(x) + val * (static_cast<C>(y) * static_cast<C>(z)));
      });
    } else {
      if (!v.is_int) raise(PyExc_TypeError, "%s(): value must be an integer for integer tensors", op);
      const wrap_t<T> val = (wrap_t<T>)v.i;
      ternary_op<T, T, T, T>(op, out, a, t1, t2, [val](T x, T y, T z) -> T {
        return (T)((wrap_t<T>)x + val * ((wrap_t<T>)y * (wrap_t<T>)z));
      });
    }
  });
}
void k_addcmul(PyObject* const* a, Py_ssize_t n, PyObject* kw) { addc<false>("addcmul", a, n, kw); }
void k_addcdiv(PyObject* const* a, Py_ssize_t n, PyObject* kw) { addc<true>("addcdiv", a, n, kw); }

// clamp(out, x, lo, hi): lo / hi are tensors (broadcast) or Python numbers / None.
// Equals minimum(maximum(x, lo), hi), NaN-propagating.
void k_clamp(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args("clamp", a_, n_, kw_, {"out", "x", "lo", "hi"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_same_dtype("clamp", out, x);
  dispatch<M_NUM>(out.dtype, "clamp", [&](auto tag) {
    using T = EMBER_T(tag);
    using C = compute_t<T>;
    auto mx = [](C u, C v) -> C { return (u != u) ? u : (v != v ? v : (u >= v ? u : v)); };
    auto mn = [](C u, C v) -> C { return (u != u) ? u : (v != v ? v : (u <= v ? u : v)); };
    const bool lo_t = args.has(2) && is_tensor_like(args.v[2]);
    const bool hi_t = args.has(3) && is_tensor_like(args.v[3]);
    if (lo_t || hi_t) {
      // tensor bounds: materialise missing ones as 0-d-like broadcast scalars
      Tensor lo = lo_t ? args.tensor(2) : x, hi = hi_t ? args.tensor(3) : x;
      if (lo_t) check_same_dtype("clamp", out, lo);
      if (hi_t) check_same_dtype("clamp", out, hi);
      C lov = 0, hiv = 0;
      const bool has_lo = args.has(2), has_hi = args.has(3);
      if (!lo_t && has_lo) lov = static_cast<C>(args.get_double(2));
      if (!hi_t && has_hi) hiv = static_cast<C>(args.get_double(3));
      ternary_op<T, T, T, T>("clamp", out, x, lo, hi, [=](T v, T l, T h) -> T {
        C r = static_cast<C>(v);
        if (lo_t) r = mx(r, static_cast<C>(l));
        else if (has_lo) r = mx(r, lov);
        if (hi_t) r = mn(r, static_cast<C>(h));
        else if (has_hi) r = mn(r, hiv);
        return cvt<T>(r);
      });
      return;
    }
    const bool has_lo = args.has(2), has_hi = args.has(3);
    // scalar bounds: compare in double so e.g. an int tensor clamped to 2.5 behaves sensibly
    const double lo = has_lo ? args.get_double(2) : -INFINITY, hi = has_hi ? args.get_double(3) : INFINITY;
    if constexpr (is_fp_v<T>) {
      const C l = static_cast<C>(lo), h = static_cast<C>(hi);
      unary_op<T, T>("clamp", out, x, [=](T v) -> T { return cvt<T>(mn(mx(static_cast<C>(v), l), h)); });
    } else {
      constexpr double tmin = (double)std::numeric_limits<T>::lowest(), tmax = (double)std::numeric_limits<T>::max();
      const T l = lo <= tmin ? std::numeric_limits<T>::lowest() : (lo >= tmax ? std::numeric_limits<T>::max() : (T)std::ceil(lo));
      const T h = hi >= tmax ? std::numeric_limits<T>::max() : (hi <= tmin ? std::numeric_limits<T>::lowest() : (T)std::floor(hi));
      unary_op<T, T>("clamp", out, x, [=](T v) -> T {
        const T r = v < l ? l : v;
        return r > h ? h : r;  // lo > hi gives hi, as PyTorch
      });
    }
  });
}

}  // namespace

#define R(NAME) EMBER_KERNEL(#NAME, k_##NAME)
R(lerp); R(addcmul); R(addcdiv); R(clamp);
#undef R

}  // namespace ember
