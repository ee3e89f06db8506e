// The Python boundary of ember's C++ / CUDA kernels, shared by the cpu and cuda backends:
//
//  * errors: C++ exceptions carrying a Python exception type (raise), turned into Python
//    errors where a kernel returns to Python (py_wrap)
//  * kernel registration: EMBER_KERNEL next to a kernel, add_kernels() in the module init
//  * TensorT: a "kernel tensor" parsed from an ember Tensor (data pointer, shape, element
//    strides, dtype), with the backend's rank limit as template argument (the cuda backend
//    passes shapes to its kernels by value and keeps them small)
//  * ArgsT: vectorcall argument parsing (positional or keyword), the check_* helpers
//
// Header-only. A backend supplies, once, in one of its source files:
//
//    const char* const ember::kDeviceType = "mydevice";      // named in error messages
//    ember::StorageRef ember::storage_ref(PyObject* storage, const char* op, const char* arg);
//
// (the memory of a tensor's _storage; raising TypeError when it is not the backend's storage).
#pragma once
#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

#include <cstdarg>
#include <cstdio>
#include <exception>
#include <initializer_list>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "dtype.h"

#define EMBER_CONCAT_(a, b) a##b
#define EMBER_CONCAT(a, b) EMBER_CONCAT_(a, b)

// Every extension module built on these headers keeps its own kernel table and caches, even
// when two are loaded in one process and built without -fvisibility=hidden.
#pragma GCC visibility push(hidden)

namespace ember {

// ---- what the backend supplies ---------------------------------------------------------------
extern const char* const kDeviceType;
struct StorageRef {
  char* data;      // address of byte 0
  int64_t nbytes;  // capacity, for the bounds check of every tensor read
  bool readonly;   // outputs may not write it (host buffers exported read-only)
  int device;      // index of the device the memory lives on
};
StorageRef storage_ref(PyObject* storage, const char* op, const char* arg);

// ---- errors ------------------------------------------------------------------------------------
struct Error {
  PyObject* type;
  std::string msg;
};
struct PyErrAlreadySet {};  // a Python error is already set

[[noreturn]] inline void raise(PyObject* type, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
inline void raise(PyObject* type, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  throw Error{type, std::string(buf)};
}
inline void raise_dtype(const char* op, int code) {
  raise(PyExc_TypeError, "%s(): not implemented for dtype %s on %s", op, dtype_name(code), kDeviceType);
}
inline void raise_itemsize(const char* op, int itemsize) {
  raise(PyExc_TypeError, "%s(): unsupported element size %d", op, itemsize);
}

// Sets the Python error for the C++ exception being handled; call it inside a catch block.
inline void set_python_error() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    PyErr_SetString(e.type, e.msg.c_str());
  } catch (const PyErrAlreadySet&) {
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception in an ember kernel");
  }
}

// For pybind11-bound functions of the same module:
// py::register_exception_translator(&ember::translate_exception).
inline void translate_exception(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const Error& e) {
    PyErr_SetString(e.type, e.msg.c_str());
  } catch (const PyErrAlreadySet&) {
  }
}

// ---- kernel registration -----------------------------------------------------------------------
// A kernel is a vectorcall function: kernel(out, *inputs, **attrs) from Python.
using KernelFn = void (*)(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);
template <KernelFn F>
PyObject* py_wrap(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    F(args, nargs, kwnames);
  } catch (...) {
    set_python_error();
    return nullptr;
  }
  Py_RETURN_NONE;
}
#define EMBER_DEF(NAME, FN) \
  PyMethodDef { NAME, (PyCFunction)(void (*)(void)) & ::ember::py_wrap<FN>, METH_FASTCALL | METH_KEYWORDS, nullptr }

// The kernels of this extension module, in registration order (static initialisation). A
// generated registration function that fills a std::vector<PyMethodDef>& may append to it
// too, before add_kernels().
inline std::vector<PyMethodDef>& kernel_table() {
  static std::vector<PyMethodDef> defs;
  return defs;
}
struct KernelRegistration {
  explicit KernelRegistration(const PyMethodDef& def) { kernel_table().push_back(def); }
};
// Registers FN (a KernelFn) as the module's kernel NAME, at namespace scope next to FN:
//   void k_sort(PyObject* const* a, Py_ssize_t n, PyObject* kw) { ... }
//   EMBER_KERNEL("sort", k_sort);
#define EMBER_KERNEL(NAME, FN) \
  static const ::ember::KernelRegistration EMBER_CONCAT(ember_kernel_, __COUNTER__) { EMBER_DEF(NAME, FN) }

// Adds every registered kernel to `module` and lists their names in module.KERNELS (what the
// plugin turns into its kernel table). Returns false with a Python error set.
inline bool add_kernels(PyObject* module) {
  std::vector<PyMethodDef>& defs = kernel_table();
  // Python keeps pointers into the table: it is complete (and never grows) from here on
  if (defs.empty() || defs.back().ml_name) defs.push_back(PyMethodDef{nullptr, nullptr, 0, nullptr});
  if (PyModule_AddFunctions(module, defs.data()) < 0) return false;
  PyObject* names = PyTuple_New((Py_ssize_t)defs.size() - 1);
  if (!names) return false;
  for (size_t i = 0; i + 1 < defs.size(); ++i) {
    PyObject* s = PyUnicode_FromString(defs[i].ml_name);
    if (!s) { Py_DECREF(names); return false; }
    PyTuple_SET_ITEM(names, (Py_ssize_t)i, s);
  }
  const int rc = PyModule_AddObjectRef(module, "KERNELS", names);
  Py_DECREF(names);
  return rc == 0;
}

// ---- kernel tensors ----------------------------------------------------------------------------
template <int MaxDims>
struct TensorT {
  static constexpr int kMaxDims = MaxDims;
  char* data = nullptr;  // address of element [0, ..., 0]
  int ndim = 0;
  int dtype = 0;
  int itemsize = 0;
  int device = 0;
  bool readonly = false;
  int64_t numel = 1;
  PyObject* storage = nullptr;  // borrowed: the tensor's _storage
  int64_t shape[MaxDims];
  int64_t stride[MaxDims];  // in elements
  bool is_contiguous() const {
    int64_t expect = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && stride[d] != expect) return false;
      expect *= shape[d];
    }
    return true;
  }
  // A contiguous tensor header over raw memory (scratch buffers).
  static TensorT contiguous(char* data, int dtype, int ndim, const int64_t* shape, int device = 0) {
    TensorT t;
    t.data = data;
    t.dtype = dtype;
    t.itemsize = kDTypeSizes[dtype];
    t.device = device;
    t.ndim = ndim;
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      t.shape[d] = shape[d];
      t.stride[d] = s;
      s *= shape[d];
    }
    t.numel = s;
    return t;
  }
};

template <int N>
std::string shape_str(const TensorT<N>& t) {
  std::string s = "[";
  for (int d = 0; d < t.ndim; ++d) {
    if (d) s += ", ";
    s += std::to_string(t.shape[d]);
  }
  return s + "]";
}
template <int N>
void check_same_shape(const char* op, const TensorT<N>& a, const TensorT<N>& b) {
  bool ok = a.ndim == b.ndim;
  for (int d = 0; ok && d < a.ndim; ++d) ok = a.shape[d] == b.shape[d];
  if (!ok)
    raise(PyExc_ValueError, "%s(): shape mismatch: %s vs %s", op, shape_str(a).c_str(), shape_str(b).c_str());
}
template <int N>
void check_dtype(const char* op, const TensorT<N>& t, int code, const char* what) {
  if (t.dtype != code)
    raise(PyExc_TypeError, "%s(): expected %s to have dtype %s, got %s", op, what, dtype_name(code),
          dtype_name(t.dtype));
}
template <int N>
void check_same_dtype(const char* op, const TensorT<N>& a, const TensorT<N>& b) {
  if (a.dtype != b.dtype)
    raise(PyExc_TypeError, "%s(): expected tensors of the same dtype, got %s and %s", op, dtype_name(a.dtype),
          dtype_name(b.dtype));
}
template <int N>
void check_same_device(const char* op, const TensorT<N>& a, const TensorT<N>& b) {
  if (a.device != b.device)
    raise(PyExc_RuntimeError, "%s(): expected all tensors on the same device, got %s:%d and %s:%d", op,
          kDeviceType, a.device, kDeviceType, b.device);
}

namespace detail {

struct Ref {  // owned reference
  PyObject* p;
  explicit Ref(PyObject* o) : p(o) {}
  ~Ref() { Py_XDECREF(p); }
  Ref(const Ref&) = delete;
};

// Interned attribute names of the tensor protocol (created at the first tensor read; the
// GIL is held there).
struct Names {
  PyObject *storage, *shape, *stride, *offset, *dtype, *code, *itemsize;
};
inline const Names& names() {
  static const Names n{PyUnicode_InternFromString("_storage"), PyUnicode_InternFromString("shape"),
                       PyUnicode_InternFromString("_stride"),  PyUnicode_InternFromString("_offset"),
                       PyUnicode_InternFromString("dtype"),    PyUnicode_InternFromString("code"),
                       PyUnicode_InternFromString("itemsize")};
  return n;
}

inline int64_t as_int64(PyObject* o, const char* op, const char* what) {
  int64_t v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): %s must be an int", op, what);
  }
  return v;
}

// dtype object -> (code, itemsize), cached by identity; the cache holds strong references so
// addresses stay unique.
inline void read_dtype(PyObject* dt, const char* op, const char* arg, int& code, int& itemsize) {
  struct Entry {
    PyObject* obj;
    int code, itemsize;
  };
  constexpr int kCache = 32;
  static Entry cache[kCache];
  static int cached = 0;
  for (int i = 0; i < cached; ++i)
    if (cache[i].obj == dt) {
      code = cache[i].code;
      itemsize = cache[i].itemsize;
      return;
    }
  Ref c(PyObject_GetAttr(dt, names().code));
  if (!c.p) { PyErr_Clear(); raise(PyExc_TypeError, "%s(): argument '%s' has a dtype without .code", op, arg); }
  Ref is(PyObject_GetAttr(dt, names().itemsize));
  if (!is.p) { PyErr_Clear(); raise(PyExc_TypeError, "%s(): argument '%s' has a dtype without .itemsize", op, arg); }
  code = (int)as_int64(c.p, op, "dtype.code");
  itemsize = (int)as_int64(is.p, op, "dtype.itemsize");
  if (code < 0 || code >= kNumDTypes || kDTypeSizes[code] == 0)
    raise(PyExc_TypeError, "%s(): argument '%s' has unknown dtype code %d", op, arg, code);
  if (itemsize != kDTypeSizes[code])
    raise(PyExc_TypeError, "%s(): argument '%s': dtype %s has itemsize %d, expected %d", op, arg,
          kDTypeNames[code], itemsize, kDTypeSizes[code]);
  if (cached < kCache) {
    Py_INCREF(dt);
    cache[cached++] = {dt, code, itemsize};
  }
}

template <int N>
void read_tensor(PyObject* obj, TensorT<N>& t, const char* op, const char* arg) {
  if (obj == nullptr || obj == Py_None) raise(PyExc_TypeError, "%s(): argument '%s' must be a tensor, got None", op, arg);
  Ref st(PyObject_GetAttr(obj, names().storage));
  if (!st.p) {
    if (PyErr_ExceptionMatches(PyExc_NotImplementedError)) {  // a sparse COO tensor
      PyErr_Clear();
      raise(PyExc_NotImplementedError,
            "%s(): argument '%s' is a sparse COO tensor (layout ember.sparse_coo), which this op "
            "does not support in ember; convert it with .to_dense() first", op, arg);
    }
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' must be a tensor (no _storage attribute), got %s", op, arg,
          Py_TYPE(obj)->tp_name);
  }
  const StorageRef mem = storage_ref(st.p, op, arg);
  Ref shp(PyObject_GetAttr(obj, names().shape));
  if (!shp.p || !PyTuple_Check(shp.p)) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' must have a tuple shape", op, arg);
  }
  Ref strd(PyObject_GetAttr(obj, names().stride));
  if (!strd.p || !PyTuple_Check(strd.p)) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' must have a tuple _stride", op, arg);
  }
  Ref off(PyObject_GetAttr(obj, names().offset));
  if (!off.p) { PyErr_Clear(); raise(PyExc_TypeError, "%s(): argument '%s' has no _offset", op, arg); }
  Ref dt(PyObject_GetAttr(obj, names().dtype));
  if (!dt.p) { PyErr_Clear(); raise(PyExc_TypeError, "%s(): argument '%s' has no dtype", op, arg); }
  read_dtype(dt.p, op, arg, t.dtype, t.itemsize);

  Py_ssize_t nd = PyTuple_GET_SIZE(shp.p);
  if (nd > N)
    raise(PyExc_ValueError, "%s(): argument '%s' has %d dims; at most %d are supported on %s", op, arg, (int)nd, N,
          kDeviceType);
  if (PyTuple_GET_SIZE(strd.p) != nd)
    raise(PyExc_ValueError, "%s(): argument '%s' has %d sizes but %d strides", op, arg, (int)nd,
          (int)PyTuple_GET_SIZE(strd.p));
  t.ndim = (int)nd;
  __int128 numel = 1, maxoff = 0;  // 128-bit: absurd shapes cannot overflow past the checks
  bool huge = false;
  for (Py_ssize_t d = 0; d < nd; ++d) {
    int64_t s = as_int64(PyTuple_GET_ITEM(shp.p, d), op, "shape entries");
    int64_t st_ = as_int64(PyTuple_GET_ITEM(strd.p, d), op, "stride entries");
    if (s < 0) raise(PyExc_ValueError, "%s(): argument '%s' has a negative size", op, arg);
    if (st_ < 0)
      raise(PyExc_ValueError, "%s(): argument '%s' has a negative stride (not supported on %s)", op, arg, kDeviceType);
    t.shape[d] = s;
    t.stride[d] = st_;
    numel *= s;
    if (s > 0) maxoff += (__int128)(s - 1) * st_;
    if (numel > ((__int128)1 << 62) || maxoff > ((__int128)1 << 62)) huge = true;
  }
  if (numel == 0) huge = false;
  t.numel = (int64_t)numel;
  int64_t offset = as_int64(off.p, op, "_offset");
  if (offset < 0) raise(PyExc_ValueError, "%s(): argument '%s' has a negative offset", op, arg);
  if (huge || (numel > 0 && ((__int128)offset + maxoff + 1) * t.itemsize > (__int128)mem.nbytes))
    raise(PyExc_ValueError, "%s(): argument '%s' (shape %s, offset %lld) does not fit its storage of %lld bytes", op,
          arg, shape_str(t).c_str(), (long long)offset, (long long)mem.nbytes);
  t.data = mem.data + offset * t.itemsize;
  t.readonly = mem.readonly;
  t.device = mem.device;
  t.storage = st.p;
}

inline int norm_dim(const char* op, int64_t d, int ndim) {
  int64_t nd = ndim == 0 ? 1 : ndim;  // 0-d tensors accept dim 0 / -1
  if (d < -nd || d >= nd)
    raise(PyExc_IndexError, "%s(): dimension %lld out of range (expected to be in range of [%lld, %lld])", op,
          (long long)d, (long long)-nd, (long long)(nd - 1));
  return (int)(d < 0 ? d + nd : d);
}

}  // namespace detail

// Whether o looks like a tensor (has a _storage attribute); numbers never do.
inline bool is_tensor_like(PyObject* o) {
  if (!o || o == Py_None || PyLong_Check(o) || PyFloat_Check(o)) return false;
  PyObject* st = PyObject_GetAttr(o, detail::names().storage);
  if (!st) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(st);
  return true;
}

// ---- Args: the arguments of a vectorcall kernel, by position; keywords matched by name --------
template <int MaxDims>
struct ArgsT {
  using Tensor = TensorT<MaxDims>;
  static constexpr int kMax = 16;
  const char* op;
  const char* names[kMax];
  int n;
  PyObject* v[kMax];

  ArgsT(const char* op_, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
        std::initializer_list<const char*> nm, int nrequired)
      : op(op_), n((int)nm.size()) {
    if (n > kMax) raise(PyExc_RuntimeError, "%s(): too many parameters", op);
    { int j = 0; for (const char* s : nm) names[j++] = s; }
    if (nargs > n) raise(PyExc_TypeError, "%s(): takes at most %d arguments (%d given)", op, n, (int)nargs);
    int i = 0;
    for (; i < nargs; ++i) v[i] = args[i];
    for (; i < n; ++i) v[i] = nullptr;
    if (kwnames) {
      Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
      for (Py_ssize_t k = 0; k < nk; ++k) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int j = 0; j < n; ++j)
          if (PyUnicode_CompareWithASCIIString(key, names[j]) == 0) { found = j; break; }
        if (found < 0)
          raise(PyExc_TypeError, "%s(): got an unexpected keyword argument '%s'", op, PyUnicode_AsUTF8(key));
        if (v[found]) raise(PyExc_TypeError, "%s(): got multiple values for argument '%s'", op, names[found]);
        v[found] = args[nargs + k];
      }
    }
    for (int j = 0; j < nrequired; ++j)
      if (!v[j]) raise(PyExc_TypeError, "%s(): missing required argument '%s'", op, names[j]);
  }

  bool has(int i) const { return v[i] != nullptr && v[i] != Py_None; }
  Tensor tensor(int i) const {
    Tensor t;
    detail::read_tensor(v[i], t, op, names[i]);
    return t;
  }
  Tensor out(int i) const {  // a tensor the kernel writes
    Tensor t = tensor(i);
    if (t.readonly && t.numel > 0)
      raise(PyExc_ValueError, "%s(): output tensor '%s' is backed by a read-only buffer", op, names[i]);
    return t;
  }
  int64_t get_int(int i) const {
    PyObject* o = v[i];
    if (!o || o == Py_None) raise(PyExc_TypeError, "%s(): argument '%s' must be an int", op, names[i]);
    if (PyFloat_Check(o)) raise(PyExc_TypeError, "%s(): argument '%s' must be an int, got float", op, names[i]);
    int64_t r = PyLong_AsLongLong(o);
    if (r == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      PyObject* idx = PyNumber_Index(o);
      if (!idx) { PyErr_Clear(); raise(PyExc_TypeError, "%s(): argument '%s' must be an int", op, names[i]); }
      r = PyLong_AsLongLong(idx);
      Py_DECREF(idx);
      if (r == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        raise(PyExc_OverflowError, "%s(): argument '%s' does not fit in int64", op, names[i]);
      }
    }
    return r;
  }
  int64_t get_int(int i, int64_t def) const { return has(i) ? get_int(i) : def; }
  // an int taken modulo 2**64 (seeds, counters)
  uint64_t get_u64(int i) const {
    PyObject* o = v[i];
    if (!o || !PyLong_Check(o)) raise(PyExc_TypeError, "%s(): argument '%s' must be an int", op, names[i]);
    unsigned long long r = PyLong_AsUnsignedLongLongMask(o);
    if (r == (unsigned long long)-1 && PyErr_Occurred()) {
      PyErr_Clear();
      raise(PyExc_TypeError, "%s(): argument '%s' must be an int", op, names[i]);
    }
    return (uint64_t)r;
  }
  double get_double(int i) const {
    PyObject* o = v[i];
    if (!o || o == Py_None) raise(PyExc_TypeError, "%s(): argument '%s' must be a number", op, names[i]);
    double r = PyFloat_AsDouble(o);
    if (r == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      raise(PyExc_TypeError, "%s(): argument '%s' must be a real number", op, names[i]);
    }
    return r;
  }
  bool get_bool(int i, bool def) const {
    PyObject* o = v[i];
    if (!o || o == Py_None) return def;
    int r = PyObject_IsTrue(o);
    if (r < 0) { PyErr_Clear(); raise(PyExc_TypeError, "%s(): argument '%s' must be a bool", op, names[i]); }
    return r != 0;
  }
  // one dim, normalised to [0, ndim)
  int get_dim(int i, int ndim) const { return detail::norm_dim(op, get_int(i), ndim); }
  // dims: None (all), an int or a sequence of ints, normalised; sets mask[d] for each
  void get_dims(int i, int ndim, bool* mask) const {
    for (int d = 0; d < MaxDims; ++d) mask[d] = false;
    PyObject* o = v[i];
    if (!o || o == Py_None) {  // all dims
      for (int d = 0; d < ndim; ++d) mask[d] = true;
      return;
    }
    if (PyLong_Check(o)) {
      int d = detail::norm_dim(op, get_int(i), ndim);
      if (ndim > 0) mask[d] = true;
      return;
    }
    PyObject* seq = PySequence_Fast(o, "dims must be an int or a sequence of ints");
    if (!seq) { PyErr_Clear(); raise(PyExc_TypeError, "%s(): argument '%s' must be an int or a tuple of ints", op, names[i]); }
    Py_ssize_t n_ = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t k = 0; k < n_; ++k) {
      int64_t dv = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, k));
      if (dv == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_DECREF(seq);
        raise(PyExc_TypeError, "%s(): argument '%s' must contain ints", op, names[i]);
      }
      int d;
      try {
        d = detail::norm_dim(op, dv, ndim);
      } catch (...) {
        Py_DECREF(seq);
        throw;
      }
      if (ndim > 0) mask[d] = true;
    }
    Py_DECREF(seq);
  }
  // a sequence of exactly cnt ints; `each` names what one value is for in the error message
  void get_ints(int i, int cnt, int64_t* out, const char* each = nullptr) const {
    PyObject* o = v[i];
    if (!o || o == Py_None) raise(PyExc_TypeError, "%s(): argument '%s' is required", op, names[i]);
    PyObject* seq = PySequence_Fast(o, "expected a sequence of ints");
    if (!seq) {
      PyErr_Clear();
      raise(PyExc_TypeError, "%s(): argument '%s' must be a sequence of ints", op, names[i]);
    }
    const Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    if (m != cnt) {
      Py_DECREF(seq);
      raise(PyExc_ValueError, "%s(): argument '%s' must have %d values%s%s%s, got %zd", op, names[i], cnt,
            each ? " (one per " : "", each ? each : "", each ? ")" : "", m);
    }
    for (Py_ssize_t k = 0; k < m; ++k) {
      const long long x = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, k));
      if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_DECREF(seq);
        raise(PyExc_TypeError, "%s(): argument '%s' must be a sequence of ints", op, names[i]);
      }
      out[k] = x;
    }
    Py_DECREF(seq);
  }
  // a string, or "" for None
  std::string get_str(int i) const {
    PyObject* o = v[i];
    if (!o || o == Py_None) return std::string();
    if (!PyUnicode_Check(o)) raise(PyExc_TypeError, "%s(): argument '%s' must be a string or None", op, names[i]);
    const char* s = PyUnicode_AsUTF8(o);
    if (!s) { PyErr_Clear(); raise(PyExc_TypeError, "%s(): bad string argument '%s'", op, names[i]); }
    return std::string(s);
  }
};

}  // namespace ember

#pragma GCC visibility pop
