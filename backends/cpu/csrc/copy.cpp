// copy (strided, any dtype -> any dtype), fill, arange, storage_copy.
#include "ember.h"

namespace ember {

namespace {

template <class T>
void copy_same(const ElemIter& it) {
  it.run([](char* const* p, const int64_t* s, int64_t n) {
    constexpr int64_t sz = sizeof(T);
    if (s[0] == sz && s[1] == sz) {
      std::memmove(p[0], p[1], (size_t)(n * sz));
    } else if (s[1] == 0) {
      const T v = *(const T*)p[1];
      for (int64_t i = 0; i < n; ++i) *(T*)(p[0] + i * s[0]) = v;
    } else if (s[0] == sz) {
      T* o = (T*)p[0];
      for (int64_t i = 0; i < n; ++i) o[i] = *(const T*)(p[1] + i * s[1]);
    } else {
      for (int64_t i = 0; i < n; ++i) *(T*)(p[0] + i * s[0]) = *(const T*)(p[1] + i * s[1]);
    }
  });
}

void copy_impl(const char* op, const Tensor& dst, const Tensor& src) {
  const Tensor* ts[2] = {&dst, &src};
  ElemIter it;
  it.build(ts, 2, op);
  if (it.numel == 0) return;
  NoGil g(it.numel >= kGilThreshold);
  if (dst.dtype == src.dtype) {
    dispatch_size(dst.itemsize, op, [&](auto tag) { copy_same<EMBER_T(tag)>(it); });
    return;
  }
  // (uint16 / uint32 / uint64 too: casts are among the few things PyTorch does with them)
  dispatch<M_ALL | M_BAREBONES>(dst.dtype, op, [&](auto to) {
    using To = EMBER_T(to);
    if (src.dtype == kBool) {  // any nonzero byte is true (see load_elem): read the bytes
      auto f = [](uint8_t v) { return cvt<To>(v != 0); };
      it.run([&](char* const* p, const int64_t* s, int64_t n) { unary_inner<To, uint8_t>(p, s, n, f); });
      return;
    }
    dispatch<M_ALL | M_BAREBONES>(src.dtype, op, [&](auto ti) {
      using Ti = EMBER_T(ti);
      auto f = [](Ti v) { return cvt<To>(v); };
      it.run([&](char* const* p, const int64_t* s, int64_t n) { unary_inner<To, Ti>(p, s, n, f); });
    });
  });
}

void k_copy(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("copy", a, n, kw, {"out", "src"}, 2);
  Tensor out = args.out(0);
  Tensor src = args.tensor(1);
  copy_impl("copy", out, src);
}
EMBER_KERNEL("copy", k_copy);

// A Python scalar converted to a C++ value of type T.
struct Scalar {
  bool is_int = false;
  int64_t i = 0;
  double d = 0;
  template <class T>
  T as() const {
    return is_int ? cvt<T>(i) : cvt<T>(d);
  }
};

Scalar get_scalar(const Args& args, int i) {
  PyObject* o = args.v[i];
  Scalar s;
  if (!o || o == Py_None) raise(PyExc_TypeError, "%s(): argument '%s' must be a number", args.op, args.names[i]);
  if (PyBool_Check(o) || PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow == 0) {
      s.is_int = true;
      s.i = v;
      return s;
    }
    // beyond int64: fall through to double
  }
  if (PyFloat_Check(o) || PyLong_Check(o)) {
    s.d = PyFloat_AsDouble(o);
    if (s.d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      raise(PyExc_OverflowError, "%s(): value out of range", args.op);
    }
    return s;
  }
  if (PyIndex_Check(o)) {
    PyObject* idx = PyNumber_Index(o);
    if (idx) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(idx, &overflow);
      Py_DECREF(idx);
      if (!overflow && !(v == -1 && PyErr_Occurred())) {
        s.is_int = true;
        s.i = v;
        return s;
      }
    }
    PyErr_Clear();
  }
  s.d = PyFloat_AsDouble(o);
  if (s.d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' must be a bool, int or float, got %s", args.op, args.names[i],
          Py_TYPE(o)->tp_name);
  }
  return s;
}

void k_fill(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("fill", a, n, kw, {"out", "value"}, 2);
  Tensor out = args.out(0);
  Scalar sv = get_scalar(args, 1);
  const Tensor* ts[1] = {&out};
  ElemIter it;
  it.build(ts, 1, "fill");
  if (it.numel == 0) return;
  NoGil g(it.numel >= kGilThreshold);
  // (a uint64 value above INT64_MAX arrives as the int64 of its bits: it converts back)
  dispatch<M_ALL | M_BAREBONES>(out.dtype, "fill", [&](auto tag) {
    using T = EMBER_T(tag);
    const T v = sv.as<T>();
    // fill through the same-size unsigned type (bit pattern) so loops vectorise
    using U = std::conditional_t<sizeof(T) == 1, uint8_t,
              std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    U bits;
    std::memcpy(&bits, &v, sizeof(T));
    it.run([bits](char* const* p, const int64_t* s, int64_t n) {
      if (s[0] == (int64_t)sizeof(U)) {
        U* o = (U*)p[0];
        for (int64_t i = 0; i < n; ++i) o[i] = bits;
      } else {
        for (int64_t i = 0; i < n; ++i) *(U*)(p[0] + i * s[0]) = bits;
      }
    });
  });
}
EMBER_KERNEL("fill", k_fill);

void k_arange(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("arange", a, n, kw, {"out", "start", "step"}, 3);
  Tensor out = args.out(0);
  Scalar start = get_scalar(args, 1);
  Scalar step = get_scalar(args, 2);
  if (out.ndim != 1) raise(PyExc_ValueError, "arange(): expected a 1-D output, got shape %s", shape_str(out).c_str());
  const int64_t len = out.shape[0];
  if (len == 0) return;
  const int64_t os = out.stride[0];
  NoGil g(len >= kGilThreshold);
  dispatch<M_ALL>(out.dtype, "arange", [&](auto tag) {
    using T = EMBER_T(tag);
    T* o = (T*)out.data;
    if (is_int_v<T> && start.is_int && step.is_int) {
      const uint64_t s0 = (uint64_t)start.i, st = (uint64_t)step.i;
      parallel_for(0, len, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i * os] = cvt<T>((int64_t)(s0 + (uint64_t)i * st));
      });
    } else {
      const double s0 = start.is_int ? (double)start.i : start.d;
      const double st = step.is_int ? (double)step.i : step.d;
      parallel_for(0, len, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i * os] = cvt<T>(s0 + (double)i * st);
      });
    }
  });
}
EMBER_KERNEL("arange", k_arange);

StorageObject* as_storage(PyObject* o, const char* what) {
  if (!o || !PyObject_TypeCheck(o, &StorageType))
    raise(PyExc_TypeError, "storage_copy(): %s must be a Storage", what);
  return (StorageObject*)o;
}

void k_storage_copy(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("storage_copy", a, n, kw, {"dst", "dst_byte_offset", "src", "src_byte_offset", "nbytes"}, 5);
  StorageObject* dst = as_storage(args.v[0], "dst");
  StorageObject* src = as_storage(args.v[2], "src");
  int64_t doff = args.get_int(1), soff = args.get_int(3), nb = args.get_int(4);
  if (doff < 0 || soff < 0 || nb < 0) raise(PyExc_ValueError, "storage_copy(): offsets and nbytes must be >= 0");
  if (doff > dst->nbytes || nb > dst->nbytes - doff)
    raise(PyExc_IndexError, "storage_copy(): destination range [%lld, %lld) is outside its %lld bytes",
          (long long)doff, (long long)(doff + nb), (long long)dst->nbytes);
  if (soff > src->nbytes || nb > src->nbytes - soff)
    raise(PyExc_IndexError, "storage_copy(): source range [%lld, %lld) is outside its %lld bytes", (long long)soff,
          (long long)(soff + nb), (long long)src->nbytes);
  if (nb == 0) return;
  if (dst->readonly) raise(PyExc_ValueError, "storage_copy(): destination storage is read-only");
  char* d = dst->data + doff;
  const char* s = src->data + soff;
  NoGil g(nb >= (1 << 16));
  const bool overlap = (d < s + nb) && (s < d + nb);
  if (overlap || nb < (1 << 22)) {
    std::memmove(d, s, (size_t)nb);
  } else {
    parallel_for(0, nb, 1 << 20, [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, (size_t)(e - b)); });
  }
}
EMBER_KERNEL("storage_copy", k_storage_copy);

}  // namespace

void copy_tensor(const Tensor& dst, const Tensor& src) { copy_impl("copy", dst, src); }

}  // namespace ember
