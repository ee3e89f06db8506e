// Ternary elementwise ops: where, and the fused optimizer-update building blocks lerp,
// addcmul, addcdiv, clamp (Adam / SGD steps are a handful of these on cuda).
#include <cmath>

#include "kernels.cuh"

namespace ember {

namespace {

template <class T>
struct WhereF {
  __device__ void operator()(char** p) const { *(T*)p[0] = *(const bool*)p[1] ? *(const T*)p[2] : *(const T*)p[3]; }
};

void k_where(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args("where", a_, n_, kw_, {"out", "cond", "a", "b"}, 4);
  Tensor out = args.out(0), c = args.tensor(1), a = args.tensor(2), b = args.tensor(3);
  check_dtype("where", c, kBool, "condition");
  check_same_dtype("where", out, a);
  check_same_dtype("where", out, b);
  const Tensor* ts[4] = {&out, &c, &a, &b};
  Geom<4> g;
  const int64_t n = make_geom<4>(g, ts, "where");
  dispatch_size(out.itemsize, "where", [&](auto tag) {
    using T = EMBER_T(tag);
    launch_elementwise<4>("where", g, n, out.device, WhereF<T>{});
  });
}

template <class Make>
void ternary_float(const char* name, const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, Make make) {
  check_same_dtype(name, out, a);
  check_same_dtype(name, out, b);
  check_same_dtype(name, out, c);
  const Tensor* ts[4] = {&out, &a, &b, &c};
  dispatch<M_NUM>(out.dtype, name, [&](auto tag) {
    using T = EMBER_T(tag);
    same_type_op<T, 3>(name, ts, make(tag));
  });
}

// lerp(a, b, w) = a + w * (b - a), PyTorch's two-sided formula for accuracy
struct Lerp {
  template <class T> __device__ T operator()(T a, T b, T w) const {
    using C = compute_t<T>;
    const C x = static_cast<C>(a), y = static_cast<C>(b), t = static_cast<C>(w);
    const C absw = t < 0 ? -t : t;
    return cvt<T>(absw < C(0.5) ? x + t * (y - x) : y - (y - x) * (C(1) - t));
  }
};
template <class C>
struct AddcMul {
  C value;
  template <class T> __device__ T operator()(T a, T x, T y) const {
    using K = compute_t<T>;
    return cvt<T>(static_cast<K>(a) + (K)value * static_cast<K>(x) * static_cast<K>(y));
  }
};
template <class C>
struct AddcDiv {
  C value;
  template <class T> __device__ T operator()(T a, T x, T y) const {
    using K = compute_t<T>;
    return cvt<T>(static_cast<K>(a) + (K)value * (static_cast<K>(x) / static_cast<K>(y)));
  }
};

void k_lerp(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args("lerp", a_, n_, kw_, {"out", "a", "b", "w"}, 4);
  Tensor out = args.out(0), a = args.tensor(1), b = args.tensor(2), w = args.tensor(3);
  if (!is_floating_code(out.dtype)) raise_dtype("lerp", out.dtype);
  ternary_float("lerp", out, a, b, w, [](auto) { return Lerp{}; });
}

template <template <class> class Op>
void addc(const char* name, PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args(name, a_, n_, kw_, {"out", "a", "t1", "t2", "value"}, 4);
  Tensor out = args.out(0), a = args.tensor(1), t1 = args.tensor(2), t2 = args.tensor(3);
  const double value = args.has(4) ? args.get_double(4) : 1.0;
  ternary_float(name, out, a, t1, t2, [value](auto tag) {
    using T = EMBER_T(tag);
    using K = std::conditional_t<is_fp_v<T>, compute_t<T>, int64_t>;
    return Op<K>{(K)value};
  });
}
void k_addcmul(PyObject* const* a, Py_ssize_t n, PyObject* kw) { addc<AddcMul>("addcmul", a, n, kw); }
void k_addcdiv(PyObject* const* a, Py_ssize_t n, PyObject* kw) { addc<AddcDiv>("addcdiv", a, n, kw); }

// clamp(out, x, lo, hi): lo / hi are numbers (or None), or tensors broadcast to x.
template <class K>
struct ClampS {
  K lo, hi;
  bool has_lo, has_hi;
  template <class T> __device__ T operator()(T v) const {
    const K x = static_cast<K>(static_cast<compute_t<T>>(v));
    if constexpr (std::is_floating_point_v<K>) {
      if (x != x) return v;
    }
    K r = x;
    if (has_lo && r < lo) r = lo;
    if (has_hi && r > hi) r = hi;
    return cvt<T>(static_cast<compute_t<T>>(r));
  }
};
struct ClampT {
  template <class T> __device__ T operator()(T v, T lo, T hi) const {
    using C = compute_t<T>;
    const C x = static_cast<C>(v), l = static_cast<C>(lo), h = static_cast<C>(hi);
    if constexpr (is_fp_v<T>) {
      if (x != x || l != l || h != h) return cvt<T>(x != x ? x : (l != l ? l : h));
    }
    C r = x < l ? l : x;
    return cvt<T>(r > h ? h : r);
  }
};

void k_clamp(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  Args args("clamp", a_, n_, kw_, {"out", "x", "lo", "hi"}, 2);
  Tensor out = args.out(0), x = args.tensor(1);
  check_same_dtype("clamp", out, x);
  const bool lo_t = args.has(2) && is_tensor_like(args.v[2]);
  const bool hi_t = args.has(3) && is_tensor_like(args.v[3]);
  if (lo_t && hi_t) {
    Tensor lo = args.tensor(2), hi = args.tensor(3);
    const Tensor* ts[4] = {&out, &x, &lo, &hi};
    check_same_dtype("clamp", out, lo);
    check_same_dtype("clamp", out, hi);
    dispatch<M_NUM>(out.dtype, "clamp", [&](auto tag) { same_type_op<EMBER_T(tag), 3>("clamp", ts, ClampT{}); });
    return;
  }
  if (lo_t || hi_t)
    raise(PyExc_TypeError, "clamp(): pass both bounds as tensors or both as numbers / None");
  const Tensor* ts[2] = {&out, &x};
  dispatch<M_NUM>(out.dtype, "clamp", [&](auto tag) {
    using T = EMBER_T(tag);
    using K = std::conditional_t<is_fp_v<T>, double, int64_t>;
    ClampS<K> op{K(0), K(0), args.has(2), args.has(3)};
    if (op.has_lo) op.lo = std::is_floating_point_v<K> ? (K)args.get_double(2) : (K)std::floor(args.get_double(2));
    if (op.has_hi) op.hi = std::is_floating_point_v<K> ? (K)args.get_double(3) : (K)std::floor(args.get_double(3));
    same_type_op<T, 1>("clamp", ts, op);
  });
}

}  // namespace

#define R(NAME) EMBER_KERNEL(#NAME, k_##NAME);
R(where) R(lerp) R(addcmul) R(addcdiv) R(clamp)
#undef R

}  // namespace ember
