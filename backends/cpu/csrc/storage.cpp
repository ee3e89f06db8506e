// Storage: 64-byte aligned host memory (or a zero-copy wrapper around a buffer-protocol
// object), exposing itself as a 1-D uint8 buffer.  Implemented as a plain CPython type so
// kernels can reach the data pointer with a type check and a struct access.
#include <sys/mman.h>

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ember.h"

namespace ember {

namespace {

constexpr int64_t kHugeThreshold = 4 << 20;  // madvise(MADV_HUGEPAGE) allocations >= 4 MiB
constexpr int64_t kHugeAlign = 2 << 20;

// Host block cache. Freed blocks of at least 64 KiB are kept by exact (aligned) size and
// handed to the next allocation of that size, so a training step that allocates the same
// shapes every iteration stops paying mmap/munmap and first-touch page faults each time
// (glibc serves such sizes with fresh mappings). Bounded at 512 MiB; _C.empty_cache()
// returns it; EMBER_CPU_CACHE=0 turns it off.
constexpr size_t kCacheMin = 64 << 10;
constexpr size_t kCacheLimit = size_t(512) << 20;
std::mutex g_cache_mu;
std::unordered_map<size_t, std::vector<void*>> g_cache;
size_t g_cached = 0;

bool cache_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_CPU_CACHE");
    return !(e && e[0] == '0');
  }();
  return on;
}

void* cache_take(size_t size) {
  if (size < kCacheMin || !cache_enabled()) return nullptr;
  std::lock_guard<std::mutex> lock(g_cache_mu);
  auto it = g_cache.find(size);
  if (it == g_cache.end() || it->second.empty()) return nullptr;
  void* p = it->second.back();
  it->second.pop_back();
  g_cached -= size;
  return p;
}

bool cache_put(void* p, size_t size) {
  if (size < kCacheMin || !cache_enabled()) return false;
  std::lock_guard<std::mutex> lock(g_cache_mu);
  if (g_cached + size > kCacheLimit) return false;
  g_cache[size].push_back(p);
  g_cached += size;
  return true;
}

bool huge_pages_requested() {
  // Transparent huge pages are opt-in (EMBER_CPU_HUGEPAGES=1): where the kernel's THP
  // defrag policy is "madvise", a fault in an madvised region compacts memory
  // synchronously, which was seen to stall training steps for seconds.
  static const bool on = [] {
    const char* e = std::getenv("EMBER_CPU_HUGEPAGES");
    return e && e[0] == '1';
  }();
  return on;
}

// alignment and rounded size of an allocation of nbytes (the same on free)
void block_geometry(long long nbytes, size_t& align, size_t& size, bool& huge) {
  huge = huge_pages_requested() && nbytes >= kHugeThreshold;
  align = huge ? (size_t)kHugeAlign : (size_t)64;
  size = ((size_t)(nbytes > 0 ? nbytes : 1) + align - 1) / align * align;
}

PyObject* storage_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  static const char* kwlist[] = {"nbytes", nullptr};
  long long nbytes = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "L:Storage", (char**)kwlist, &nbytes)) return nullptr;
  if (nbytes < 0) {
    PyErr_SetString(PyExc_ValueError, "Storage(): nbytes must be non-negative");
    return nullptr;
  }
  StorageObject* self = (StorageObject*)type->tp_alloc(type, 0);
  if (!self) return nullptr;
  size_t align, size;
  bool huge;
  block_geometry(nbytes, align, size, huge);
  void* p = cache_take(size);
  if (!p) {
    if (posix_memalign(&p, align, size) != 0 || !p) {
      Py_DECREF(self);
      return PyErr_Format(PyExc_MemoryError, "Storage(): failed to allocate %lld bytes", nbytes);
    }
#ifdef MADV_HUGEPAGE
    if (huge) madvise(p, size, MADV_HUGEPAGE);
#endif
  }
  self->data = (char*)p;
  self->nbytes = nbytes;
  self->readonly = 0;
  self->has_view = 0;
  return (PyObject*)self;
}

void storage_dealloc(PyObject* o) {
  StorageObject* self = (StorageObject*)o;
  if (self->has_view) {
    PyBuffer_Release(&self->view);
  } else {
    size_t align, size;
    bool huge;
    block_geometry(self->nbytes, align, size, huge);
    if (!cache_put(self->data, size)) std::free(self->data);
  }
  Py_TYPE(o)->tp_free(o);
}

PyObject* storage_from_buffer(PyObject* cls, PyObject* obj) {
  StorageObject* self = (StorageObject*)((PyTypeObject*)cls)->tp_alloc((PyTypeObject*)cls, 0);
  if (!self) return nullptr;
  int ro = 0;
  if (PyObject_GetBuffer(obj, &self->view, PyBUF_ANY_CONTIGUOUS | PyBUF_WRITABLE) != 0) {
    PyErr_Clear();
    if (PyObject_GetBuffer(obj, &self->view, PyBUF_ANY_CONTIGUOUS) != 0) {
      Py_DECREF(self);
      PyErr_Clear();
      return PyErr_Format(PyExc_TypeError,
                          "Storage.from_buffer(): expected a contiguous buffer-protocol object, got %s",
                          Py_TYPE(obj)->tp_name);
    }
    ro = 1;
  }
  self->has_view = 1;
  self->data = (char*)self->view.buf;
  self->nbytes = (int64_t)self->view.len;
  self->readonly = ro || self->view.readonly;
  return (PyObject*)self;
}

int storage_getbuffer(PyObject* o, Py_buffer* view, int flags) {
  StorageObject* self = (StorageObject*)o;
  return PyBuffer_FillInfo(view, o, self->data, (Py_ssize_t)self->nbytes, self->readonly, flags);
}

PyObject* get_nbytes(PyObject* o, void*) { return PyLong_FromLongLong(((StorageObject*)o)->nbytes); }
PyObject* get_data_ptr(PyObject* o, void*) {
  return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)((StorageObject*)o)->data);
}
PyObject* get_readonly(PyObject* o, void*) { return PyBool_FromLong(((StorageObject*)o)->readonly); }

Py_ssize_t storage_len(PyObject* o) { return (Py_ssize_t)((StorageObject*)o)->nbytes; }

PyObject* storage_repr(PyObject* o) {
  StorageObject* self = (StorageObject*)o;
  return PyUnicode_FromFormat("<ember_cpu Storage nbytes=%lld%s>", (long long)self->nbytes,
                              self->readonly ? " readonly" : "");
}

PyBufferProcs storage_as_buffer = {storage_getbuffer, nullptr};

PyGetSetDef storage_getset[] = {
    {"nbytes", get_nbytes, nullptr, "size in bytes", nullptr},
    {"data_ptr", get_data_ptr, nullptr, "address of the first byte", nullptr},
    {"readonly", get_readonly, nullptr, "whether the memory is read-only", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef storage_methods[] = {
    {"from_buffer", (PyCFunction)storage_from_buffer, METH_O | METH_CLASS,
     "Wrap a contiguous buffer-protocol object without copying (keeps it alive)."},
    {nullptr, nullptr, 0, nullptr}};

PySequenceMethods storage_as_sequence = {storage_len};

}  // namespace

size_t storage_empty_cache() {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  size_t freed = g_cached;
  for (auto& kv : g_cache)
    for (void* p : kv.second) std::free(p);
  g_cache.clear();
  g_cached = 0;
  return freed;
}

size_t storage_cached_bytes() {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  return g_cached;
}

PyTypeObject StorageType = {PyVarObject_HEAD_INIT(nullptr, 0)};

bool init_storage_type(PyObject* module) {
  StorageType.tp_name = "ember_cpu._C.Storage";
  StorageType.tp_basicsize = sizeof(StorageObject);
  StorageType.tp_flags = Py_TPFLAGS_DEFAULT;
  StorageType.tp_doc =
      "Storage(nbytes): 64-byte aligned uninitialised host memory.\n"
      "Storage.from_buffer(obj): zero-copy view of a contiguous buffer.";
  StorageType.tp_new = storage_new;
  StorageType.tp_dealloc = storage_dealloc;
  StorageType.tp_as_buffer = &storage_as_buffer;
  StorageType.tp_as_sequence = &storage_as_sequence;
  StorageType.tp_getset = storage_getset;
  StorageType.tp_methods = storage_methods;
  StorageType.tp_repr = storage_repr;
  if (PyType_Ready(&StorageType) < 0) return false;
  Py_INCREF(&StorageType);
  if (PyModule_AddObject(module, "Storage", (PyObject*)&StorageType) < 0) {
    Py_DECREF(&StorageType);
    return false;
  }
  return true;
}

}  // namespace ember
