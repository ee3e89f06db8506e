// ember CUDA backend: host-side infrastructure shared by every file (no device code), on top
// of ember's shared kernel library (<ember/python.h>, <ember/dtype.h>: dtypes, errors, kernel
// tensors, Args, registration).
//
//  * CUDA error checks
//  * the runtime: devices, current streams, the caching allocators (runtime.cpp)
//  * the Storage type
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include <ember/dtype.h>
#include <ember/python.h>

#include "allocator_policy.h"

namespace ember {

// max tensor rank on cuda: shapes and strides travel to kernels by value (Geom, RGeom...)
constexpr int MAXD = 16;
using Tensor = TensorT<MAXD>;
using Args = ArgsT<MAXD>;

// raises RuntimeError naming the op and CUDA's message when err != cudaSuccess
void check_cuda(cudaError_t err, const char* what);
// after a launch: raises if the launch failed (no synchronisation)
void check_launch(const char* op);

// ---- runtime (runtime.cpp) ------------------------------------------------------------
int device_count();                    // never throws; 0 without a usable GPU
const std::string& device_init_error();  // why device_count() is 0
void set_device(int index);            // cheap when already current (thread-local cache)
cudaStream_t current_stream(int index);
void set_current_stream(int index, cudaStream_t s);
ember_cuda::CachingAllocator& allocator(int index);
// Scratch device memory for a kernel on the current stream (freed when it goes out of
// scope; stream order makes the reuse safe). Out of memory: sets ember.OutOfMemoryError and
// throws PyErrAlreadySet.
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
  PyObject* weakrefs;  // (ember.utils.offload keys its bookkeeping by storage, weakly)
};
extern PyTypeObject StorageType;
bool init_runtime(PyObject* module);

// the op definitions the generated elementwise kernels came from (elementwise.cu)
const char* generated_table_hash();

// copy between two tensors of the same shape on one device, any dtypes (copy.cu)
void copy_tensor(const Tensor& dst, const Tensor& src);

// ember.OutOfMemoryError (the dispatcher's class, with its attributes) for e
void set_oom_error(const ember_cuda::OutOfMemory& e);

}  // namespace ember
