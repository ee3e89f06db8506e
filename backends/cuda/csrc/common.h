// ember CUDA backend: host-side infrastructure shared by every file (no device code).
//
//  * dtypes, errors (C++ exceptions carrying a Python exception type), CUDA error checks
//  * Tensor: a parsed kernel tensor (device pointer, shape, element strides, dtype, device)
//  * Args: vectorcall argument parsing, as in the CPU backend
//  * the runtime: devices, current streams, the caching allocators (runtime.cpp)
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "allocator_policy.h"

namespace ember {

constexpr int MAXD = 16;  // max tensor rank on cuda

enum : int {
  kBool = 0, kUInt8 = 1, kInt8 = 2, kInt16 = 3, kInt32 = 4, kInt64 = 5,
  kFloat16 = 6, kBFloat16 = 7, kFloat32 = 8, kFloat64 = 9, kNumDTypes = 10
};
extern const char* const kDTypeNames[kNumDTypes];
extern const int kDTypeSizes[kNumDTypes];
inline const char* dtype_name(int c) { return (c >= 0 && c < kNumDTypes) ? kDTypeNames[c] : "<invalid>"; }
inline bool is_floating_code(int c) { return c >= kFloat16 && c <= kFloat64; }

struct Error {
  PyObject* type;
  std::string msg;
};
struct PyErrAlreadySet {};
[[noreturn]] void raise(PyObject* type, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
[[noreturn]] void raise_dtype(const char* op, int code);
// raises RuntimeError naming the op and CUDA's message when err != cudaSuccess
void check_cuda(cudaError_t err, const char* what);
// after a launch: raises if the launch failed (no synchronisation)
void check_launch(const char* op);

struct Tensor {
  char* data = nullptr;  // device address of element [0, ..., 0]
  int ndim = 0;
  int dtype = 0;
  int itemsize = 0;
  int device = 0;
  int64_t numel = 1;
  int64_t shape[MAXD];
  int64_t stride[MAXD];  // elements
  bool is_contiguous() const {
    int64_t expect = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && stride[d] != expect) return false;
      expect *= shape[d];
    }
    return true;
  }
};
std::string shape_str(const Tensor& t);
void check_same_shape(const char* op, const Tensor& a, const Tensor& b);
void check_dtype(const char* op, const Tensor& t, int code, const char* what);
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b);
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
bool is_tensor_like(PyObject* o);
Tensor contiguous_header(char* data, int dtype, int device, int ndim, const int64_t* shape);

struct Args {
  static constexpr int kMax = 12;
  const char* op;
  const char* names[kMax];
  int n;
  PyObject* v[kMax];
  Args(const char* op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
       std::initializer_list<const char*> names, int nrequired);
  bool has(int i) const { return v[i] != nullptr && v[i] != Py_None; }
  Tensor tensor(int i) const;  // also makes the tensor's device current
  Tensor out(int i) const { return tensor(i); }
  int64_t get_int(int i) const;
  double get_double(int i) const;
  uint64_t get_u64(int i) const;
  bool get_bool(int i, bool def) const;
  void get_dims(int i, int ndim, bool* mask) const;
  int get_dim(int i, int ndim) const;
  std::string get_str(int i) const;
  void get_ints(int i, int n, int64_t* out) const;  // a sequence of exactly n ints
};

// ---- runtime (runtime.cpp) ------------------------------------------------------------
int device_count();                    // never throws; 0 without a usable GPU
const std::string& device_init_error();  // why device_count() is 0
void set_device(int index);            // cheap when already current (thread-local cache)
cudaStream_t current_stream(int index);
void set_current_stream(int index, cudaStream_t s);
ember_cuda::CachingAllocator& allocator(int index);
// Scratch device memory for a kernel on the current stream (freed when it goes out of
// scope; stream order makes the reuse safe).
struct Scratch {
  ember_cuda::Block* block = nullptr;
  int device = 0;
  void* ptr = nullptr;
  Scratch(int device, size_t nbytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
};
extern int64_t g_host_syncs;  // times the host blocked on the device (tests: none in a step)

// Storage: device memory of one tensor storage (a CPython type, so kernels reach the
// pointer with a type check and a struct access).
struct StorageObject {
  PyObject_HEAD
  char* data;
  int64_t nbytes;
  int device;
  ember_cuda::Block* block;
};
extern PyTypeObject StorageType;
bool init_runtime(PyObject* module);
void init_strings();

// copy between two tensors of the same shape on one device, any dtypes (copy.cu)
void copy_tensor(const Tensor& dst, const Tensor& src);

// ---- registration ---------------------------------------------------------------------
using KernelFn = void (*)(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);
template <KernelFn F>
PyObject* py_wrap(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  try {
    F(args, nargs, kwnames);
  } catch (const Error& e) {
    PyErr_SetString(e.type, e.msg.c_str());
    return nullptr;
  } catch (const PyErrAlreadySet&) {
    return nullptr;
  } catch (const ember_cuda::OutOfMemory& e) {
    extern void set_oom_error(const ember_cuda::OutOfMemory& e);
    set_oom_error(e);
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}
#define EMBER_DEF(NAME, FN) \
  PyMethodDef { NAME, (PyCFunction)(void (*)(void)) & ::ember::py_wrap<FN>, METH_FASTCALL | METH_KEYWORDS, nullptr }
void set_oom_error(const ember_cuda::OutOfMemory& e);

void register_copy(std::vector<PyMethodDef>& defs);
void register_unary(std::vector<PyMethodDef>& defs);
void register_binary(std::vector<PyMethodDef>& defs);
void register_ternary(std::vector<PyMethodDef>& defs);
void register_reduce(std::vector<PyMethodDef>& defs);
void register_softmax(std::vector<PyMethodDef>& defs);
void register_index(std::vector<PyMethodDef>& defs);
void register_conv(std::vector<PyMethodDef>& defs);
void register_random(std::vector<PyMethodDef>& defs);
void register_sort(std::vector<PyMethodDef>& defs);
void register_matmul(std::vector<PyMethodDef>& defs);

}  // namespace ember
