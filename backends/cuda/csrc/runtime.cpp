// The CUDA runtime side of the backend: CUDA error checks, devices, current streams, the
// caching allocator's real device (cudaMalloc / cudaFree / events), the Storage type (and
// what <ember/python.h> asks of a backend: storage_ref), host<->device copies through
// pinned staging buffers, and the counter of host synchronisations.
#include <cstring>
#include <mutex>
#include <memory>

#include "common.h"

namespace ember {

using ember_cuda::Block;
using ember_cuda::CachingAllocator;
using ember_cuda::DeviceInterface;
using ember_cuda::EventId;
using ember_cuda::StreamId;

int64_t g_host_syncs = 0;

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

// ---- devices --------------------------------------------------------------------------

namespace {
constexpr int kMaxDevices = 64;
int g_count = -1;
std::string g_count_error;
std::once_flag g_count_once;
thread_local int tl_device = -1;
thread_local cudaStream_t tl_stream[kMaxDevices] = {};
}  // namespace

int device_count() {
  std::call_once(g_count_once, [] {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      cudaGetLastError();
      g_count = 0;
      g_count_error = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    } else {
      g_count = n < kMaxDevices ? n : kMaxDevices;
      if (n == 0) g_count_error = "cudaGetDeviceCount() reports no CUDA device";
    }
  });
  return g_count;
}

const std::string& device_init_error() {
  device_count();
  return g_count_error;
}

static void check_index(int index) {
  const int n = device_count();
  if (index < 0 || index >= n) {
    if (n == 0)
      raise(PyExc_RuntimeError, "cuda:%d is not available: no usable CUDA device (%s)", index,
            device_init_error().c_str());
    raise(PyExc_RuntimeError, "cuda:%d: invalid device ordinal (%d CUDA device(s))", index, n);
  }
}

void set_device(int index) {
  if (tl_device == index) return;
  check_cuda(cudaSetDevice(index), "cudaSetDevice");
  tl_device = index;
}

cudaStream_t current_stream(int index) { return tl_stream[index]; }
void set_current_stream(int index, cudaStream_t s) { tl_stream[index] = s; }

// ---- the allocator's device -----------------------------------------------------------

namespace {

struct CudaDevice : DeviceInterface {
  int index;
  std::vector<cudaEvent_t> event_pool;
  explicit CudaDevice(int i) : index(i) {}
  std::string name() const override { return "cuda:" + std::to_string(index); }
  void* alloc(size_t n) override {
    set_device(index);
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, n);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    check_cuda(err, "cudaMalloc");
    return p;
  }
  void free(void* p) override {
    set_device(index);
    cudaFree(p);  // synchronises the device, as in PyTorch (only empty_cache / OOM get here)
  }
  bool mem_get_info(size_t* f, size_t* t) override {
    set_device(index);
    return cudaMemGetInfo(f, t) == cudaSuccess;
  }
  EventId record_event(StreamId s) override {
    set_device(index);
    cudaEvent_t e;
    if (!event_pool.empty()) {
      e = event_pool.back();
      event_pool.pop_back();
    } else {
      check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    }
    check_cuda(cudaEventRecord(e, (cudaStream_t)s), "cudaEventRecord");
    return (EventId)e;
  }
  bool event_done(EventId e) override {
    cudaError_t err = cudaEventQuery((cudaEvent_t)e);
    if (err == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    return true;
  }
  void event_synchronize(EventId e) override {
    ++g_host_syncs;
    cudaEventSynchronize((cudaEvent_t)e);
  }
  void event_release(EventId e) override { event_pool.push_back((cudaEvent_t)e); }
};

std::mutex g_alloc_mu;
std::unique_ptr<CudaDevice> g_devices[kMaxDevices];
std::unique_ptr<CachingAllocator> g_allocators[kMaxDevices];

}  // namespace

CachingAllocator& allocator(int index) {
  CachingAllocator* a = g_allocators[index >= 0 && index < kMaxDevices ? index : 0].get();
  if (a) return *a;
  check_index(index);
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  if (!g_allocators[index]) {
    g_devices[index] = std::make_unique<CudaDevice>(index);
    g_allocators[index] = std::make_unique<CachingAllocator>(g_devices[index].get());
  }
  return *g_allocators[index];
}

Scratch::Scratch(int dev, size_t nbytes) : device(dev) {
  try {
    block = allocator(dev).malloc(nbytes, (StreamId)current_stream(dev));
  } catch (const ember_cuda::OutOfMemory& e) {
    set_oom_error(e);  // the kernel's caller (py_wrap) knows only ember's errors
    throw PyErrAlreadySet{};
  }
  ptr = block ? block->ptr() : nullptr;
}
Scratch::~Scratch() {
  if (block) allocator(device).free(block);
}

void set_oom_error(const ember_cuda::OutOfMemory& e) {
  PyObject* mod = PyImport_ImportModule("ember.dispatcher.allocator");
  PyObject* cls = mod ? PyObject_GetAttrString(mod, "OutOfMemoryError") : nullptr;
  Py_XDECREF(mod);
  if (!cls) {
    PyErr_Clear();
    PyErr_SetString(PyExc_MemoryError, e.what());
    return;
  }
  PyObject* err = PyObject_CallFunction(cls, "s", e.what());
  if (err) {
    PyObject* v;
    v = PyLong_FromSize_t(e.nbytes); PyObject_SetAttrString(err, "nbytes", v); Py_DECREF(v);
    v = PyLong_FromSize_t(e.alloc_size); PyObject_SetAttrString(err, "alloc_size", v); Py_DECREF(v);
    v = PyUnicode_FromString(e.device.c_str()); PyObject_SetAttrString(err, "device", v); Py_DECREF(v);
    PyErr_SetObject(cls, err);
    Py_DECREF(err);
  }
  Py_DECREF(cls);
}

// ---- Storage --------------------------------------------------------------------------

namespace {

void storage_dealloc(PyObject* self) {
  StorageObject* s = (StorageObject*)self;
  if (s->weakrefs) PyObject_ClearWeakRefs(self);
  if (s->block) {
    try {
      allocator(s->device).free(s->block);
    } catch (...) {
    }
    s->block = nullptr;
  }
  Py_TYPE(self)->tp_free(self);
}

PyObject* storage_repr(PyObject* self) {
  StorageObject* s = (StorageObject*)self;
  return PyUnicode_FromFormat("ember_cuda.Storage(nbytes=%lld, device=cuda:%d)", (long long)s->nbytes, s->device);
}

PyObject* storage_get_nbytes(PyObject* self, void*) { return PyLong_FromLongLong(((StorageObject*)self)->nbytes); }
PyObject* storage_get_device(PyObject* self, void*) { return PyLong_FromLong(((StorageObject*)self)->device); }
PyObject* storage_get_ptr(PyObject* self, void*) { return PyLong_FromVoidPtr(((StorageObject*)self)->data); }
PyObject* storage_get_stream(PyObject* self, void*) {
  StorageObject* s = (StorageObject*)self;
  return PyLong_FromSize_t(s->block ? (size_t)s->block->stream : 0);
}

PyObject* storage_record_stream(PyObject* self, PyObject* arg) {
  StorageObject* s = (StorageObject*)self;
  size_t stream = PyLong_AsSize_t(arg);
  if (stream == (size_t)-1 && PyErr_Occurred()) return nullptr;
  try {
    if (s->block) allocator(s->device).record_stream(s->block, (StreamId)stream);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyGetSetDef storage_getset[] = {
    {"nbytes", storage_get_nbytes, nullptr, "bytes asked for", nullptr},
    {"device", storage_get_device, nullptr, "the device index", nullptr},
    {"data_ptr", storage_get_ptr, nullptr, "device address", nullptr},
    {"stream", storage_get_stream, nullptr, "the stream the memory was allocated on", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};
PyMethodDef storage_methods[] = {
    {"record_stream", storage_record_stream, METH_O,
     "record_stream(stream_handle): the memory is also used by that stream; when freed it is reused only after "
     "the work queued there by then completes."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

PyTypeObject StorageType = {PyVarObject_HEAD_INIT(nullptr, 0)};

const char* const kDeviceType = "cuda";

// A tensor's _storage must be an ember_cuda Storage; reading a tensor makes its device current
// (kernels launch on the current device).
StorageRef storage_ref(PyObject* storage, const char* op, const char* arg) {
  if (!PyObject_TypeCheck(storage, &StorageType))
    raise(PyExc_TypeError,
          "%s(): argument '%s' is not a cuda tensor (its storage is %s); move it with .to('cuda')", op, arg,
          Py_TYPE(storage)->tp_name);
  const StorageObject* so = (const StorageObject*)storage;
  set_device(so->device);
  return {so->data, so->nbytes, false, so->device};
}

// alloc(nbytes) for the device in `self` (an int): the dispatcher's allocation hot path.
static PyObject* storage_alloc(PyObject* self, PyObject* arg) {
  const int dev = (int)PyLong_AsLong(self);
  const long long nbytes = PyLong_AsLongLong(arg);
  if (nbytes == -1 && PyErr_Occurred()) return nullptr;
  if (nbytes < 0) {
    PyErr_Format(PyExc_ValueError, "cannot allocate a negative number of bytes (%lld)", nbytes);
    return nullptr;
  }
  StorageObject* s = PyObject_New(StorageObject, &StorageType);
  if (!s) return nullptr;
  s->data = nullptr;
  s->nbytes = nbytes;
  s->device = dev;
  s->block = nullptr;
  s->weakrefs = nullptr;
  try {
    CachingAllocator& a = allocator(dev);
    s->block = a.malloc((size_t)nbytes, (StreamId)current_stream(dev));
    if (s->block) s->data = (char*)s->block->ptr();
  } catch (const ember_cuda::OutOfMemory& e) {
    Py_DECREF(s);
    set_oom_error(e);
    return nullptr;
  } catch (const Error& e) {
    Py_DECREF(s);
    PyErr_SetString(e.type, e.msg.c_str());
    return nullptr;
  } catch (const std::exception& e) {
    Py_DECREF(s);
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  return (PyObject*)s;
}
static PyMethodDef g_alloc_def = {"alloc", storage_alloc, METH_O, "alloc(nbytes) -> Storage on this device"};

PyObject* make_allocator_fn(int index) {
  PyObject* idx = PyLong_FromLong(index);
  PyObject* f = PyCFunction_New(&g_alloc_def, idx);
  Py_DECREF(idx);
  return f;
}

bool init_runtime(PyObject* module) {
  StorageType.tp_name = "ember_cuda._C.Storage";
  StorageType.tp_basicsize = sizeof(StorageObject);
  StorageType.tp_weaklistoffset = offsetof(StorageObject, weakrefs);
  StorageType.tp_flags = Py_TPFLAGS_DEFAULT;
  StorageType.tp_doc = "Device memory of one tensor storage (a block of the caching allocator).";
  StorageType.tp_dealloc = storage_dealloc;
  StorageType.tp_repr = storage_repr;
  StorageType.tp_getset = storage_getset;
  StorageType.tp_methods = storage_methods;
  if (PyType_Ready(&StorageType) < 0) return false;
  Py_INCREF(&StorageType);
  return PyModule_AddObject(module, "Storage", (PyObject*)&StorageType) == 0;
}

// ---- pinned staging buffers for host -> device copies ----------------------------------

namespace {
struct Staging {
  void* ptr;
  size_t size;
  cudaEvent_t done;  // recorded after the copy that reads it
  int device;
};
std::vector<Staging> g_staging;
std::mutex g_staging_mu;
}  // namespace

// An async host->device copy: the bytes are copied into a pinned buffer (reused once the
// copy that last read it has completed) and the DMA is queued on the current stream.
void copy_from_host(StorageObject* dst, size_t byte_offset, const void* src, size_t n, bool src_pinned) {
  if (n == 0) return;
  if (byte_offset + n > (size_t)dst->nbytes)
    raise(PyExc_ValueError, "copy_from_host(): %zu bytes at offset %zu exceed the storage of %lld bytes", n,
          byte_offset, (long long)dst->nbytes);
  set_device(dst->device);
  cudaStream_t s = current_stream(dst->device);
  if (src_pinned) {
    check_cuda(cudaMemcpyAsync(dst->data + byte_offset, src, n, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    return;
  }
  std::lock_guard<std::mutex> lock(g_staging_mu);
  Staging* st = nullptr;
  for (auto& b : g_staging)
    if (b.size >= n && b.device == dst->device && cudaEventQuery(b.done) == cudaSuccess) {
      st = &b;
      break;
    }
  cudaGetLastError();
  if (!st) {
    size_t size = 1 << 16;
    while (size < n) size <<= 1;
    Staging b{nullptr, size, nullptr, dst->device};
    check_cuda(cudaHostAlloc(&b.ptr, size, cudaHostAllocDefault), "cudaHostAlloc");
    check_cuda(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming), "cudaEventCreate");
    g_staging.push_back(b);
    st = &g_staging.back();
  }
  std::memcpy(st->ptr, src, n);
  check_cuda(cudaMemcpyAsync(dst->data + byte_offset, st->ptr, n, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  check_cuda(cudaEventRecord(st->done, s), "cudaEventRecord");
}

// device -> host: the one place the host waits for the device (queued work on the current
// stream finishes first). The GIL is released while waiting.
void copy_to_host(StorageObject* src, size_t byte_offset, void* dst, size_t n) {
  if (n == 0) return;
  if (byte_offset + n > (size_t)src->nbytes)
    raise(PyExc_ValueError, "copy_to_host(): %zu bytes at offset %zu exceed the storage of %lld bytes", n,
          byte_offset, (long long)src->nbytes);
  set_device(src->device);
  cudaStream_t s = current_stream(src->device);
  ++g_host_syncs;
  cudaError_t err;
  Py_BEGIN_ALLOW_THREADS
  err = cudaMemcpyAsync(dst, src->data + byte_offset, n, cudaMemcpyDeviceToHost, s);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s);
  Py_END_ALLOW_THREADS
  check_cuda(err, "copy_to_host");
}

bool is_pinned(const void* p) {
  cudaPointerAttributes attr;
  cudaError_t err = cudaPointerGetAttributes(&attr, p);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

}  // namespace ember
