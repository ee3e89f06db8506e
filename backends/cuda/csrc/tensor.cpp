// Argument parsing and the kernel-tensor protocol (adapted from the CPU backend's
// tensor.cpp): a tensor's _storage must be an ember_cuda Storage; reading a tensor makes
// its device current.
#include <cstdarg>

#include "common.h"

namespace ember {

const char* const kDTypeNames[kNumDTypes] = {"bool",  "uint8",   "int8",     "int16",   "int32",
                                             "int64", "float16", "bfloat16", "float32", "float64"};
const int kDTypeSizes[kNumDTypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};

void raise(PyObject* type, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  throw Error{type, std::string(buf)};
}

void raise_dtype(const char* op, int code) {
  raise(PyExc_TypeError, "%s(): not implemented for dtype %s on cuda", op, dtype_name(code));
}

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear a non-sticky error
    raise(PyExc_RuntimeError, "%s: CUDA error %d (%s): %s", what, (int)err, cudaGetErrorName(err),
          cudaGetErrorString(err));
  }
}

void check_launch(const char* op) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    raise(PyExc_RuntimeError, "%s(): CUDA kernel launch failed: %s (%s)", op, cudaGetErrorName(err),
          cudaGetErrorString(err));
}

static PyObject* s_storage;
static PyObject* s_shape;
static PyObject* s_stride;
static PyObject* s_offset;
static PyObject* s_dtype;
static PyObject* s_code;
static PyObject* s_itemsize;

void init_strings() {
  s_storage = PyUnicode_InternFromString("_storage");
  s_shape = PyUnicode_InternFromString("shape");
  s_stride = PyUnicode_InternFromString("_stride");
  s_offset = PyUnicode_InternFromString("_offset");
  s_dtype = PyUnicode_InternFromString("dtype");
  s_code = PyUnicode_InternFromString("code");
  s_itemsize = PyUnicode_InternFromString("itemsize");
}

namespace {

struct Ref {
  PyObject* p;
  explicit Ref(PyObject* o) : p(o) {}
  ~Ref() { Py_XDECREF(p); }
  Ref(const Ref&) = delete;
};

struct DTypeCacheEntry {
  PyObject* obj;
  int code, itemsize;
};
DTypeCacheEntry g_dtype_cache[32];
int g_dtype_cache_n = 0;

inline int64_t as_int64(PyObject* o, const char* op, const char* what) {
  int64_t v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): %s must be an int", op, what);
  }
  return v;
}

void read_dtype(PyObject* dt, const char* op, const char* arg, int& code, int& itemsize) {
  for (int i = 0; i < g_dtype_cache_n; ++i)
    if (g_dtype_cache[i].obj == dt) {
      code = g_dtype_cache[i].code;
      itemsize = g_dtype_cache[i].itemsize;
      return;
    }
  Ref c(PyObject_GetAttr(dt, s_code));
  Ref is(PyObject_GetAttr(dt, s_itemsize));
  if (!c.p || !is.p) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' has a dtype without .code/.itemsize", op, arg);
  }
  code = (int)as_int64(c.p, op, "dtype.code");
  itemsize = (int)as_int64(is.p, op, "dtype.itemsize");
  if (code < 0 || code >= kNumDTypes || itemsize != kDTypeSizes[code])
    raise(PyExc_TypeError, "%s(): argument '%s' has an unknown dtype (code %d)", op, arg, code);
  if (g_dtype_cache_n < 32) {
    Py_INCREF(dt);
    g_dtype_cache[g_dtype_cache_n++] = {dt, code, itemsize};
  }
}

void read_tensor(PyObject* obj, Tensor& t, const char* op, const char* arg) {
  if (obj == nullptr || obj == Py_None) raise(PyExc_TypeError, "%s(): argument '%s' must be a tensor, got None", op, arg);
  Ref st(PyObject_GetAttr(obj, s_storage));
  if (!st.p) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' must be a tensor, got %s", op, arg, Py_TYPE(obj)->tp_name);
  }
  if (!PyObject_TypeCheck(st.p, &StorageType))
    raise(PyExc_TypeError,
          "%s(): argument '%s' is not a cuda tensor (its storage is %s); move it with .to('cuda')", op, arg,
          Py_TYPE(st.p)->tp_name);
  StorageObject* so = (StorageObject*)st.p;
  Ref shp(PyObject_GetAttr(obj, s_shape));
  Ref strd(PyObject_GetAttr(obj, s_stride));
  Ref off(PyObject_GetAttr(obj, s_offset));
  Ref dt(PyObject_GetAttr(obj, s_dtype));
  if (!shp.p || !strd.p || !off.p || !dt.p || !PyTuple_Check(shp.p) || !PyTuple_Check(strd.p)) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' lacks tuple shape/_stride, _offset or dtype", op, arg);
  }
  read_dtype(dt.p, op, arg, t.dtype, t.itemsize);
  Py_ssize_t nd = PyTuple_GET_SIZE(shp.p);
  if (nd > MAXD) raise(PyExc_ValueError, "%s(): argument '%s' has %d dims; at most %d are supported on cuda", op, arg, (int)nd, MAXD);
  if (PyTuple_GET_SIZE(strd.p) != nd) raise(PyExc_ValueError, "%s(): argument '%s' has mismatched sizes and strides", op, arg);
  t.ndim = (int)nd;
  __int128 numel = 1, maxoff = 0;
  bool huge = false;
  for (Py_ssize_t d = 0; d < nd; ++d) {
    int64_t s = as_int64(PyTuple_GET_ITEM(shp.p, d), op, "shape entries");
    int64_t st_ = as_int64(PyTuple_GET_ITEM(strd.p, d), op, "stride entries");
    if (s < 0 || st_ < 0) raise(PyExc_ValueError, "%s(): argument '%s' has a negative size or stride", op, arg);
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
  if (huge || (numel > 0 && ((__int128)offset + maxoff + 1) * t.itemsize > (__int128)so->nbytes))
    raise(PyExc_ValueError, "%s(): argument '%s' (shape %s, offset %lld) does not fit its storage of %lld bytes", op,
          arg, shape_str(t).c_str(), (long long)offset, (long long)so->nbytes);
  t.data = so->data + offset * t.itemsize;
  t.device = so->device;
}

}  // namespace

bool is_tensor_like(PyObject* o) {
  if (!o || o == Py_None || PyLong_Check(o) || PyFloat_Check(o)) return false;
  PyObject* st = PyObject_GetAttr(o, s_storage);
  if (!st) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(st);
  return true;
}

std::string shape_str(const Tensor& t) {
  std::string s = "[";
  for (int d = 0; d < t.ndim; ++d) {
    if (d) s += ", ";
    s += std::to_string(t.shape[d]);
  }
  return s + "]";
}

void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  bool ok = a.ndim == b.ndim;
  for (int d = 0; ok && d < a.ndim; ++d) ok = a.shape[d] == b.shape[d];
  if (!ok) raise(PyExc_ValueError, "%s(): shape mismatch: %s vs %s", op, shape_str(a).c_str(), shape_str(b).c_str());
}

void check_dtype(const char* op, const Tensor& t, int code, const char* what) {
  if (t.dtype != code)
    raise(PyExc_TypeError, "%s(): expected %s to have dtype %s, got %s", op, what, dtype_name(code), dtype_name(t.dtype));
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype != b.dtype)
    raise(PyExc_TypeError, "%s(): expected tensors of the same dtype, got %s and %s", op, dtype_name(a.dtype),
          dtype_name(b.dtype));
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device != b.device)
    raise(PyExc_RuntimeError, "%s(): expected all tensors on the same device, got cuda:%d and cuda:%d", op, a.device,
          b.device);
}

Tensor contiguous_header(char* data, int dtype, int device, int ndim, const int64_t* shape) {
  Tensor t;
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

Args::Args(const char* op_, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
           std::initializer_list<const char*> nm, int nrequired)
    : op(op_), n((int)nm.size()) {
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
      if (found < 0) raise(PyExc_TypeError, "%s(): got an unexpected keyword argument '%s'", op, PyUnicode_AsUTF8(key));
      if (v[found]) raise(PyExc_TypeError, "%s(): got multiple values for argument '%s'", op, names[found]);
      v[found] = args[nargs + k];
    }
  }
  for (int j = 0; j < nrequired; ++j)
    if (!v[j]) raise(PyExc_TypeError, "%s(): missing required argument '%s'", op, names[j]);
}

Tensor Args::tensor(int i) const {
  Tensor t;
  read_tensor(v[i], t, op, names[i]);
  set_device(t.device);
  return t;
}

uint64_t Args::get_u64(int i) const {
  PyObject* o = v[i];
  if (!o || !PyLong_Check(o)) raise(PyExc_TypeError, "%s(): argument '%s' must be an int", op, names[i]);
  unsigned long long r = PyLong_AsUnsignedLongLongMask(o);
  if (r == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' must be an int", op, names[i]);
  }
  return (uint64_t)r;
}

void Args::get_ints(int i, int cnt, int64_t* out) const {
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
    raise(PyExc_ValueError, "%s(): argument '%s' must have %d values, got %zd", op, names[i], cnt, m);
  }
  for (Py_ssize_t k = 0; k < m; ++k) {
    long long x = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, k));
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      Py_DECREF(seq);
      raise(PyExc_TypeError, "%s(): argument '%s' must be a sequence of ints", op, names[i]);
    }
    out[k] = x;
  }
  Py_DECREF(seq);
}

int64_t Args::get_int(int i) const {
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

double Args::get_double(int i) const {
  PyObject* o = v[i];
  if (!o || o == Py_None) raise(PyExc_TypeError, "%s(): argument '%s' must be a number", op, names[i]);
  double r = PyFloat_AsDouble(o);
  if (r == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' must be a real number", op, names[i]);
  }
  return r;
}

bool Args::get_bool(int i, bool def) const {
  PyObject* o = v[i];
  if (!o || o == Py_None) return def;
  int r = PyObject_IsTrue(o);
  if (r < 0) { PyErr_Clear(); raise(PyExc_TypeError, "%s(): argument '%s' must be a bool", op, names[i]); }
  return r != 0;
}

static int norm_dim(const char* op, int64_t d, int ndim) {
  int64_t nd = ndim == 0 ? 1 : ndim;  // 0-d tensors accept dim 0 / -1
  if (d < -nd || d >= nd)
    raise(PyExc_IndexError, "%s(): dimension %lld out of range (expected to be in range of [%lld, %lld])", op,
          (long long)d, (long long)-nd, (long long)(nd - 1));
  return (int)(d < 0 ? d + nd : d);
}

int Args::get_dim(int i, int ndim) const { return norm_dim(op, get_int(i), ndim); }

void Args::get_dims(int i, int ndim, bool* mask) const {
  for (int d = 0; d < MAXD; ++d) mask[d] = false;
  PyObject* o = v[i];
  if (!o || o == Py_None) {  // all dims
    for (int d = 0; d < ndim; ++d) mask[d] = true;
    return;
  }
  if (PyLong_Check(o)) {
    int d = norm_dim(op, get_int(i), ndim);
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
      d = norm_dim(op, dv, ndim);
    } catch (...) {
      Py_DECREF(seq);
      throw;
    }
    if (ndim > 0) mask[d] = true;
  }
  Py_DECREF(seq);
}

std::string Args::get_str(int i) const {
  PyObject* o = v[i];
  if (!o || o == Py_None) return std::string();
  if (!PyUnicode_Check(o)) raise(PyExc_TypeError, "%s(): argument '%s' must be a string or None", op, names[i]);
  const char* s = PyUnicode_AsUTF8(o);
  if (!s) { PyErr_Clear(); raise(PyExc_TypeError, "%s(): bad string argument '%s'", op, names[i]); }
  return std::string(s);
}

}  // namespace ember
