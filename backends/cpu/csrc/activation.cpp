// relu and hardtanh forward (clamp's values with number bounds, one select per bound), and
// the gradients of the kinked activations as one pass each (PyTorch's threshold_backward
// and hardtanh_backward): relu and hardtanh run clamp forward, and their backward keeps
// the output gradient where the input lies strictly inside the linear part:
//   threshold_backward  out = self <= threshold ? 0 : grad      (NaN inputs pass grad)
//   hardtanh_backward   out = min < self < max ? grad : 0       (NaN inputs give 0)
#include "ember.h"

namespace ember {

namespace {

template <class Keep>
void masked_grad(const char* op, const Tensor& out, const Tensor& g, const Tensor& x, Keep keep) {
  check_same_dtype(op, out, g);
  check_same_dtype(op, out, x);
  check_same_shape(op, out, g);
  check_same_shape(op, out, x);
  dispatch<M_FLOAT>(out.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    using A = compute_t<T>;
    const Tensor* ts[3] = {&out, &g, &x};
    ElemIter it;
    it.build(ts, 3, op);
    NoGil ng(it.numel >= kGilThreshold);
    it.run([&](char* const* p, const int64_t* s, int64_t n) {
      T* o = (T*)p[0];
      const T* gp = (const T*)p[1];
      const T* xp = (const T*)p[2];
      constexpr int64_t z = sizeof(T);
      if (s[0] == z && s[1] == z && s[2] == z) {
        // (branch-free: a select on a mask, which vectorises; the data decide the branch
        // at random, so a branch would mispredict about every other element)
        for (int64_t i = 0; i < n; ++i) {
          const A gv = (A)gp[i];
          o[i] = cvt<T>(keep((A)xp[i]) ? gv : A(0));
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          const T xv = *(const T*)((const char*)xp + i * s[2]);
          *(T*)((char*)o + i * s[0]) = keep((A)xv) ? *(const T*)((const char*)gp + i * s[1]) : T(0);
        }
      }
    });
  });
}

// out = f(self) elementwise (out may be self: each element is read before it is written)
template <unsigned Mask, class F>
void unary_map(const char* op, const Tensor& out, const Tensor& x, F f) {
  check_same_dtype(op, out, x);
  check_same_shape(op, out, x);
  dispatch<Mask>(out.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    using A = compute_t<T>;
    const Tensor* ts[2] = {&out, &x};
    ElemIter it;
    it.build(ts, 2, op);
    NoGil ng(it.numel >= kGilThreshold);
    it.run([&](char* const* p, const int64_t* s, int64_t n) {
      constexpr int64_t z = sizeof(T);
      if (s[0] == z && s[1] == z) {
        T* o = (T*)p[0];
        const T* xp = (const T*)p[1];
        for (int64_t i = 0; i < n; ++i) o[i] = cvt<T>(f((A)xp[i]));
      } else {
        for (int64_t i = 0; i < n; ++i)
          *(T*)(p[0] + i * s[0]) = cvt<T>(f((A) * (const T*)(p[1] + i * s[1])));
      }
    });
  });
}

void k_relu(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("relu", a, n, kw, {"out", "self"}, 2);
  // clamp(self, 0): NaN stays NaN, -0.0 stays -0.0 (a tie keeps self)
  unary_map<M_FLOAT | M_I8 | M_I16 | M_I32 | M_I64 | M_U8>(
      "relu", args.out(0), args.tensor(1), [](auto v) { return v < decltype(v)(0) ? decltype(v)(0) : v; });
}
EMBER_KERNEL("relu", k_relu);

void k_hardtanh(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("hardtanh", a, n, kw, {"out", "self", "min_val", "max_val"}, 4);
  const double lo = args.get_double(2), hi = args.get_double(3);
  constexpr unsigned kMask = M_FLOAT | M_I8 | M_I16 | M_I32 | M_I64 | M_U8;
  if (lo != lo || hi != hi) {  // a NaN bound gives NaN everywhere (clamp's values)
    unary_map<M_FLOAT>("hardtanh", args.out(0), args.tensor(1),
                       [](auto v) { return std::numeric_limits<decltype(v)>::quiet_NaN(); });
    return;
  }
  // (integer inputs: the dispatcher passes integer bounds)
  unary_map<kMask>("hardtanh", args.out(0), args.tensor(1), [lo, hi](auto v) {
    using A = decltype(v);
    const A r = v < (A)lo ? (A)lo : v;  // NaN compares false: stays NaN
    return r > (A)hi ? (A)hi : r;
  });
}
EMBER_KERNEL("hardtanh", k_hardtanh);

void k_threshold_backward(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("threshold_backward", a, n, kw, {"out", "grad", "self", "threshold"}, 3);
  const double t = args.has(3) ? args.get_double(3) : 0.0;
  masked_grad("threshold_backward", args.out(0), args.tensor(1), args.tensor(2),
              [t](auto v) { return !(v <= (decltype(v))t); });
}
EMBER_KERNEL("threshold_backward", k_threshold_backward);

void k_hardtanh_backward(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("hardtanh_backward", a, n, kw, {"out", "grad", "self", "min_val", "max_val"}, 5);
  const double lo = args.get_double(3), hi = args.get_double(4);
  masked_grad("hardtanh_backward", args.out(0), args.tensor(1), args.tensor(2),
              [lo, hi](auto v) { return (v > (decltype(v))lo) & (v < (decltype(v))hi); });
}
EMBER_KERNEL("hardtanh_backward", k_hardtanh_backward);

}  // namespace

}  // namespace ember
