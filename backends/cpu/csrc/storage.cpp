// Storage: 64-byte aligned host memory (or a zero-copy wrapper around a buffer-protocol
// object, or a mapping of shared memory), exposing itself as a 1-D uint8 buffer.
// Implemented as a plain CPython type so kernels can reach the data pointer with a type
// check and a struct access.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
// (glibc serves such sizes with fresh mappings). Bounded at 512 MiB: a block that does not
// fit frees the blocks of the sizes least recently used first (the shapes of a model that
// no longer runs; refusing new blocks instead left a later model paying the page faults on
// every step: an LSTM step 1.45x slower after five other models had filled the cache).
// _C.empty_cache() returns it; EMBER_CPU_CACHE=0 turns it off.
constexpr size_t kCacheMin = 64 << 10;
constexpr size_t kCacheLimit = size_t(512) << 20;
struct SizeClass {
  std::vector<void*> blocks;
  uint64_t used = 0;  // the tick of the last take or put
};
std::mutex g_cache_mu;
std::unordered_map<size_t, SizeClass> g_cache;
size_t g_cached = 0;
uint64_t g_tick = 0;

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
  if (it == g_cache.end() || it->second.blocks.empty()) return nullptr;
  void* p = it->second.blocks.back();
  it->second.blocks.pop_back();
  it->second.used = ++g_tick;
  g_cached -= size;
  return p;
}

// Frees cached blocks of the least recently used sizes other than `keep` until
// `need` more bytes fit (the caller holds the lock).
void cache_evict(size_t need, size_t keep) {
  std::vector<std::pair<uint64_t, size_t>> order;
  for (auto& kv : g_cache)
    if (kv.first != keep && !kv.second.blocks.empty()) order.emplace_back(kv.second.used, kv.first);
  std::sort(order.begin(), order.end());
  for (const auto& o : order) {
    if (g_cached + need <= kCacheLimit) break;
    SizeClass& c = g_cache[o.second];
    while (!c.blocks.empty() && g_cached + need > kCacheLimit) {
      std::free(c.blocks.back());
      c.blocks.pop_back();
      g_cached -= o.second;
    }
  }
}

bool cache_put(void* p, size_t size) {
  if (size < kCacheMin || size > kCacheLimit || !cache_enabled()) return false;
  std::lock_guard<std::mutex> lock(g_cache_mu);
  if (g_cached + size > kCacheLimit) cache_evict(size, size);
  if (g_cached + size > kCacheLimit) return false;
  SizeClass& c = g_cache[size];
  c.blocks.push_back(p);
  c.used = ++g_tick;
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
  // (before any failure path: the dealloc of a half-built storage must neither close
  // descriptor 0 — tp_alloc zero-fills — nor free a null block)
  self->shm_fd = -1;
  self->data = nullptr;
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
  self->shm_fd = -1;
  return (PyObject*)self;
}

void free_block(void* p, int64_t nbytes) {
  size_t align, size;
  bool huge;
  block_geometry(nbytes, align, size, huge);
  if (!cache_put(p, size)) std::free(p);
}

// Memory a storage no longer uses but buffer exports made earlier still point at: share_()
// parks it here (owned by a capsule the storage holds) instead of freeing it under them.
struct Retired {
  char* data;
  int64_t nbytes;
  int has_view;
  Py_buffer view;
};

void retired_destructor(PyObject* capsule) {
  Retired* r = (Retired*)PyCapsule_GetPointer(capsule, "ember_cpu.retired");
  if (!r) return;
  if (r->has_view) PyBuffer_Release(&r->view);
  else free_block(r->data, r->nbytes);
  delete r;
}

// Release (or park, while exports remain) the memory self->data points at now.
bool retire_memory(StorageObject* self) {
  if (self->exports > 0) {
    Retired* r = new Retired{self->data, self->nbytes, self->has_view, self->view};
    PyObject* cap = PyCapsule_New(r, "ember_cpu.retired", retired_destructor);
    if (!cap) {
      delete r;
      return false;
    }
    Py_XDECREF(self->retired);  // a storage is moved to shared memory once, so this is NULL
    self->retired = cap;
  } else if (self->has_view) {
    PyBuffer_Release(&self->view);
  } else {
    free_block(self->data, self->nbytes);
  }
  self->has_view = 0;
  return true;
}

void storage_dealloc(PyObject* o) {
  StorageObject* self = (StorageObject*)o;
  if (self->weakreflist) PyObject_ClearWeakRefs(o);
  if (self->has_view) {
    PyBuffer_Release(&self->view);
  } else if (self->data == nullptr) {
    // a storage whose construction failed: nothing to release
  } else if (self->shm_fd >= 0) {
    munmap(self->data, self->map_size);
    close(self->shm_fd);
  } else {
    free_block(self->data, self->nbytes);
  }
  Py_XDECREF(self->retired);
  Py_TYPE(o)->tp_free(o);
}

// ---- shared memory (ember.multiprocessing) ----------------------------------------------
// A storage moves into an anonymous shared-memory file: memfd_create on Linux, which has no
// name anywhere, or else shm_open of a unique name unlinked at once. Either way nothing can
// be left behind in /dev/shm: the memory lives exactly as long as some process holds a
// descriptor or a mapping of it, and the kernel drops those when a process dies, SIGKILL
// included. Other processes receive the descriptor (SCM_RIGHTS) and map it.

int open_anonymous_shm() {
#if defined(__linux__) && defined(MFD_CLOEXEC)
  int fd = memfd_create("ember_shm", MFD_CLOEXEC);
  if (fd >= 0 || errno != ENOSYS) return fd;
#endif
  static std::atomic<unsigned> counter{0};
  char name[64];
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::snprintf(name, sizeof name, "/ember_%d_%u", (int)getpid(), counter++);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      shm_unlink(name);
      fcntl(fd, F_SETFD, FD_CLOEXEC);
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  return -1;
}

size_t shm_size(int64_t nbytes) { return (size_t)(nbytes > 0 ? nbytes : 1); }  // mmap needs > 0

PyObject* os_error(const char* what, int64_t nbytes) {
  int e = errno;
  return PyErr_Format(PyExc_OSError, "%s of %lld bytes failed: %s%s", what, (long long)nbytes,
                      std::strerror(e),
                      e == ENOSPC || e == ENOMEM ? " (not enough shared memory: check the size of "
                                                   "/dev/shm and the memory limit)"
                      : e == EMFILE ? " (too many open files: raise `ulimit -n`; every shared "
                                      "storage holds one descriptor)"
                                    : "");
}

// storage.share_() -> fd: move the bytes into shared memory in place (every tensor viewing
// this storage object sees the move) and return the descriptor, which the storage owns.
// Idempotent.
PyObject* storage_share(PyObject* o, PyObject*) {
  StorageObject* self = (StorageObject*)o;
  if (self->shm_fd >= 0) return PyLong_FromLong(self->shm_fd);
  size_t size = shm_size(self->nbytes);
  int fd = open_anonymous_shm();
  if (fd < 0) return os_error("Storage.share_(): creating shared memory", self->nbytes);
  // fallocate, not just ftruncate: a full tmpfs then fails here with ENOSPC instead of
  // killing the process with SIGBUS at the first write
  int err = posix_fallocate(fd, 0, (off_t)size);
  if (err == EINVAL || err == EOPNOTSUPP) err = ftruncate(fd, (off_t)size) == 0 ? 0 : errno;
  if (err != 0) {
    close(fd);
    errno = err;
    return os_error("Storage.share_(): reserving shared memory", self->nbytes);
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    errno = e;
    return os_error("Storage.share_(): mapping shared memory", self->nbytes);
  }
  if (self->nbytes > 0) std::memcpy(p, self->data, (size_t)self->nbytes);
  if (!retire_memory(self)) {
    munmap(p, size);
    close(fd);
    return nullptr;
  }
  self->data = (char*)p;
  self->shm_fd = fd;
  self->map_size = size;
  return PyLong_FromLong(fd);
}

// Storage.from_shared_fd(fd, nbytes): map the shared memory behind fd (another process's
// shared storage, received over a socket) without copying. The storage keeps its own
// duplicate of fd, so the caller still owns and closes fd.
PyObject* storage_from_shared_fd(PyObject* cls, PyObject* args) {
  int fd;
  long long nbytes;
  if (!PyArg_ParseTuple(args, "iL:Storage.from_shared_fd", &fd, &nbytes)) return nullptr;
  if (nbytes < 0) {
    PyErr_SetString(PyExc_ValueError, "Storage.from_shared_fd(): nbytes must be non-negative");
    return nullptr;
  }
  size_t size = shm_size(nbytes);
  struct stat st;
  if (fstat(fd, &st) != 0) return os_error("Storage.from_shared_fd(): fstat", nbytes);
  if ((size_t)st.st_size < size)
    return PyErr_Format(PyExc_ValueError,
                        "Storage.from_shared_fd(): the shared memory holds %lld bytes, fewer "
                        "than the %lld expected", (long long)st.st_size, nbytes);
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return os_error("Storage.from_shared_fd(): dup", nbytes);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(own);
    errno = e;
    return os_error("Storage.from_shared_fd(): mapping shared memory", nbytes);
  }
  StorageObject* self = (StorageObject*)((PyTypeObject*)cls)->tp_alloc((PyTypeObject*)cls, 0);
  if (!self) {
    munmap(p, size);
    close(own);
    return nullptr;
  }
  self->data = (char*)p;
  self->nbytes = nbytes;
  self->shm_fd = own;
  self->map_size = size;
  return (PyObject*)self;
}

PyObject* storage_from_buffer(PyObject* cls, PyObject* obj) {
  StorageObject* self = (StorageObject*)((PyTypeObject*)cls)->tp_alloc((PyTypeObject*)cls, 0);
  if (!self) return nullptr;
  self->shm_fd = -1;
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
  self->shm_fd = -1;
  self->data = (char*)self->view.buf;
  self->nbytes = (int64_t)self->view.len;
  self->readonly = ro || self->view.readonly;
  return (PyObject*)self;
}

int storage_getbuffer(PyObject* o, Py_buffer* view, int flags) {
  StorageObject* self = (StorageObject*)o;
  int r = PyBuffer_FillInfo(view, o, self->data, (Py_ssize_t)self->nbytes, self->readonly, flags);
  if (r == 0) self->exports++;
  return r;
}

void storage_releasebuffer(PyObject* o, Py_buffer*) { ((StorageObject*)o)->exports--; }

PyObject* get_nbytes(PyObject* o, void*) { return PyLong_FromLongLong(((StorageObject*)o)->nbytes); }
PyObject* get_data_ptr(PyObject* o, void*) {
  return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)((StorageObject*)o)->data);
}
PyObject* get_readonly(PyObject* o, void*) { return PyBool_FromLong(((StorageObject*)o)->readonly); }
PyObject* get_shared_fd(PyObject* o, void*) { return PyLong_FromLong(((StorageObject*)o)->shm_fd); }
PyObject* get_is_shared(PyObject* o, void*) { return PyBool_FromLong(((StorageObject*)o)->shm_fd >= 0); }

Py_ssize_t storage_len(PyObject* o) { return (Py_ssize_t)((StorageObject*)o)->nbytes; }

PyObject* storage_repr(PyObject* o) {
  StorageObject* self = (StorageObject*)o;
  return PyUnicode_FromFormat("<ember_cpu Storage nbytes=%lld%s%s>", (long long)self->nbytes,
                              self->readonly ? " readonly" : "", self->shm_fd >= 0 ? " shared" : "");
}

PyBufferProcs storage_as_buffer = {storage_getbuffer, storage_releasebuffer};

PyGetSetDef storage_getset[] = {
    {"nbytes", get_nbytes, nullptr, "size in bytes", nullptr},
    {"data_ptr", get_data_ptr, nullptr, "address of the first byte", nullptr},
    {"readonly", get_readonly, nullptr, "whether the memory is read-only", nullptr},
    {"shared_fd", get_shared_fd, nullptr,
     "descriptor of the shared memory holding the bytes (-1 when not shared)", nullptr},
    {"is_shared", get_is_shared, nullptr, "whether the bytes live in shared memory", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef storage_methods[] = {
    {"from_buffer", (PyCFunction)storage_from_buffer, METH_O | METH_CLASS,
     "Wrap a contiguous buffer-protocol object without copying (keeps it alive)."},
    {"from_shared_fd", (PyCFunction)storage_from_shared_fd, METH_VARARGS | METH_CLASS,
     "from_shared_fd(fd, nbytes): map shared memory received from another process (no copy)."},
    {"share_", (PyCFunction)storage_share, METH_NOARGS,
     "Move the bytes into shared memory in place (once); return its file descriptor."},
    {nullptr, nullptr, 0, nullptr}};

PySequenceMethods storage_as_sequence = {storage_len};

}  // namespace

size_t storage_empty_cache() {
  std::lock_guard<std::mutex> lock(g_cache_mu);
  size_t freed = g_cached;
  for (auto& kv : g_cache)
    for (void* p : kv.second.blocks) std::free(p);
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
      "Storage.from_buffer(obj): zero-copy view of a contiguous buffer.\n"
      "Storage.from_shared_fd(fd, nbytes): zero-copy mapping of shared memory.";
  StorageType.tp_new = storage_new;
  StorageType.tp_dealloc = storage_dealloc;
  StorageType.tp_as_buffer = &storage_as_buffer;
  StorageType.tp_as_sequence = &storage_as_sequence;
  StorageType.tp_getset = storage_getset;
  StorageType.tp_methods = storage_methods;
  StorageType.tp_repr = storage_repr;
  StorageType.tp_weaklistoffset = offsetof(StorageObject, weakreflist);
  if (PyType_Ready(&StorageType) < 0) return false;
  Py_INCREF(&StorageType);
  if (PyModule_AddObject(module, "Storage", (PyObject*)&StorageType) < 0) {
    Py_DECREF(&StorageType);
    return false;
  }
  return true;
}

}  // namespace ember
