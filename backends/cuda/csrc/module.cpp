// ember_cuda._C: the Storage type, the kernels (vectorcall functions each op-family .cu
// file registers with EMBER_KERNEL), devices, streams, events, copies, the caching
// allocator's statistics and cuBLAS loading.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>

#include "common.h"
#include "py_allocator.h"

namespace py = pybind11;

namespace ember {
PyObject* make_allocator_fn(int index);
void copy_from_host(StorageObject* dst, size_t byte_offset, const void* src, size_t n, bool src_pinned);
void copy_to_host(StorageObject* src, size_t byte_offset, void* dst, size_t n);
bool is_pinned(const void* p);
bool load_cublas(const std::string& path);
bool cublas_loaded();
const std::string& cublas_path();
void spin(int device, long long cycles);
}  // namespace ember

namespace {

using namespace ember;

StorageObject* as_storage(py::handle h) {
  if (!PyObject_TypeCheck(h.ptr(), &StorageType))
    throw py::type_error(std::string("expected an ember_cuda Storage, got ") + Py_TYPE(h.ptr())->tp_name);
  return (StorageObject*)h.ptr();
}

// Page-locked host memory with the buffer protocol: what Tensor.pin_memory() wraps.
struct PinnedBuffer {
  void* ptr = nullptr;
  size_t nbytes = 0;
  explicit PinnedBuffer(size_t n) : nbytes(n) {
    if (n) check_cuda(cudaHostAlloc(&ptr, n, cudaHostAllocDefault), "cudaHostAlloc");
  }
  ~PinnedBuffer() {
    if (ptr) cudaFreeHost(ptr);
  }
};

// host buffers still read by queued async copies from pinned memory: released once done
std::vector<std::pair<cudaEvent_t, py::object>> g_pending;

void poll_pending() {
  for (size_t i = 0; i < g_pending.size();) {
    if (cudaEventQuery(g_pending[i].first) == cudaSuccess) {
      cudaEventDestroy(g_pending[i].first);
      g_pending.erase(g_pending.begin() + (long)i);
    } else {
      ++i;
    }
  }
  cudaGetLastError();
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "ember CUDA backend kernels and runtime";
  if (!init_runtime(m.ptr())) throw py::error_already_set();
  // the kernels each op-family file registered (EMBER_KERNEL), and their names as KERNELS
  if (!add_kernels(m.ptr())) throw py::error_already_set();
  py::register_exception_translator(&translate_exception);
  // the op definitions the generated kernels came from (the plugin checks it on load)
  m.attr("OPS_TABLE_HASH") = generated_table_hash();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ember_cuda::OutOfMemory& e) {
      set_oom_error(e);
    }
  });

  // ---- devices
  m.def("device_count", []() { return device_count(); }, "Number of usable CUDA devices (0, never raises).");
  m.def("device_init_error", []() { return device_init_error(); });
  m.def("device_name", ([](int i) {
          if (i < 0 || i >= device_count()) raise(PyExc_RuntimeError, "cuda:%d: invalid device", i);
          cudaDeviceProp p;
          check_cuda(cudaGetDeviceProperties(&p, i), "cudaGetDeviceProperties");
          return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
                 std::to_string(p.totalGlobalMem >> 20) + " MiB)";
        }));
  m.def("runtime_version", []() {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return v;
  });
  m.def("synchronize", ([](int i) {
          set_device(i);
          ++g_host_syncs;
          cudaError_t err;
          Py_BEGIN_ALLOW_THREADS err = cudaDeviceSynchronize();
          Py_END_ALLOW_THREADS check_cuda(err, "synchronize");
        }));
  m.def("host_sync_count", []() { return g_host_syncs; },
        "How many times the host has waited for a device (copies to host, synchronize, events).");

  // ---- memory
  m.def("allocator", ([](int i) {
          allocator(i);  // validates the index
          return py::reinterpret_steal<py::object>(make_allocator_fn(i));
        }),
        "alloc(nbytes) -> Storage for device i, on the thread's current stream.");
  m.def("copy_from_host", ([](py::object storage, size_t offset, py::object host) {
          StorageObject* s = as_storage(storage);
          Py_buffer view;
          if (PyObject_GetBuffer(host.ptr(), &view, PyBUF_SIMPLE) < 0) throw py::error_already_set();
          const bool pinned = is_pinned(view.buf);
          try {
            poll_pending();
            copy_from_host(s, offset, view.buf, (size_t)view.len, pinned);
            if (pinned && view.len) {  // keep the source alive until the DMA has read it
              cudaEvent_t e;
              check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
              check_cuda(cudaEventRecord(e, current_stream(s->device)), "cudaEventRecord");
              g_pending.emplace_back(e, host);
            }
          } catch (...) {
            PyBuffer_Release(&view);
            throw;
          }
          PyBuffer_Release(&view);
        }),
        "Queue an async copy of a host buffer into storage at byte offset (staged through pinned memory "
        "unless the buffer is pinned already).");
  m.def("copy_to_host", ([](py::object storage, size_t offset, size_t nbytes) {
          StorageObject* s = as_storage(storage);
          py::bytearray out(nullptr, 0);
          PyByteArray_Resize(out.ptr(), (Py_ssize_t)nbytes);
          copy_to_host(s, offset, PyByteArray_AS_STRING(out.ptr()), nbytes);
          return out;
        }),
        "Copy device bytes to a new bytearray; waits for the current stream (the one host sync).");
  m.def("copy_device", ([](py::object dst, size_t doff, py::object src, size_t soff, size_t n) {
          StorageObject* d = as_storage(dst);
          StorageObject* s = as_storage(src);
          set_device(d->device);
          if (d->device == s->device)
            check_cuda(cudaMemcpyAsync(d->data + doff, s->data + soff, n, cudaMemcpyDeviceToDevice,
                                       current_stream(d->device)),
                       "copy_device");
          else
            check_cuda(cudaMemcpyPeerAsync(d->data + doff, d->device, s->data + soff, s->device, n,
                                           current_stream(d->device)),
                       "copy_device");
        }));
  m.def("copy_async", ([](py::object storage, size_t offset, PinnedBuffer& host, size_t nbytes,
                          bool to_host, uintptr_t stream) {
          // (activation offloading) device <-> page-locked host bytes on the given stream; the
          // caller keeps both alive and orders the streams with events
          StorageObject* s = as_storage(storage);
          if (nbytes > host.nbytes || offset + nbytes > (size_t)s->nbytes)
            throw py::value_error("copy_async: " + std::to_string(nbytes) + " bytes at offset " +
                                  std::to_string(offset) + " do not fit a storage of " +
                                  std::to_string(s->nbytes) + " bytes and a host buffer of " +
                                  std::to_string(host.nbytes));
          if (!nbytes) return;
          set_device(s->device);
          if (to_host)
            check_cuda(cudaMemcpyAsync(host.ptr, s->data + offset, nbytes, cudaMemcpyDeviceToHost,
                                       (cudaStream_t)stream),
                       "copy_async");
          else
            check_cuda(cudaMemcpyAsync(s->data + offset, host.ptr, nbytes, cudaMemcpyHostToDevice,
                                       (cudaStream_t)stream),
                       "copy_async");
        }),
        py::arg("storage"), py::arg("offset"), py::arg("host"), py::arg("nbytes"), py::arg("to_host"),
        py::arg("stream"),
        "Queue a copy of nbytes between storage (at byte offset) and a PinnedBuffer on a stream.");
  py::class_<PinnedBuffer>(m, "PinnedBuffer", py::buffer_protocol())
      .def(py::init(([](size_t n) { return new PinnedBuffer(n); })))
      .def_readonly("nbytes", &PinnedBuffer::nbytes)
      .def_buffer([](PinnedBuffer& b) {
        return py::buffer_info(b.ptr, 1, py::format_descriptor<uint8_t>::format(), 1, {(py::ssize_t)b.nbytes},
                               {(py::ssize_t)1});
      });
  m.def("is_pinned", [](py::buffer b) {
    py::buffer_info info = b.request();
    return is_pinned(info.ptr);
  });
  m.def("memory_stats", ([](int i) { return ember_cuda::stats_to_dict(allocator(i)); }));
  m.def("memory_snapshot", ([](int i) { return ember_cuda::snapshot_to_list(allocator(i)); }));
  m.def("memory_summary", ([](int i, bool abbreviated) {
          return ember_cuda::memory_summary(allocator(i), abbreviated);
        }));
  m.def("empty_cache", ([](int i) { allocator(i).empty_cache(); }));
  m.def("reset_peak_memory_stats", ([](int i) { allocator(i).reset_peak_memory_stats(); }));
  m.def("set_memory_limit", ([](int i, int64_t bytes, double fraction) { allocator(i).set_limit(bytes, fraction); }),
        "The most device i's caching allocator may reserve (-1: no limit).");
  m.def("reset_accumulated_memory_stats", ([](int i) { allocator(i).reset_accumulated_memory_stats(); }));
  m.def("mem_get_info", ([](int i) {
          set_device(i);
          size_t f = 0, t = 0;
          check_cuda(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
          return py::make_tuple(f, t);
        }));

  // ---- streams and events (handles are integers; 0 is the default stream)
  m.def("current_stream", [](int i) { return (uintptr_t)current_stream(i); });
  m.def("set_stream", [](int i, uintptr_t s) { set_current_stream(i, (cudaStream_t)s); });
  m.def("stream_create", ([](int i, int priority) {
          set_device(i);
          cudaStream_t s;
          check_cuda(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority), "cudaStreamCreate");
          return (uintptr_t)s;
        }));
  m.def("stream_destroy", [](uintptr_t s) {
    if (s) cudaStreamDestroy((cudaStream_t)s);
  });
  m.def("stream_query", ([](uintptr_t s) {
          cudaError_t err = cudaStreamQuery((cudaStream_t)s);
          if (err == cudaErrorNotReady) {
            cudaGetLastError();
            return false;
          }
          check_cuda(err, "cudaStreamQuery");
          return true;
        }));
  m.def("stream_synchronize", ([](uintptr_t s) {
          ++g_host_syncs;
          cudaError_t err;
          Py_BEGIN_ALLOW_THREADS err = cudaStreamSynchronize((cudaStream_t)s);
          Py_END_ALLOW_THREADS check_cuda(err, "cudaStreamSynchronize");
        }));
  m.def("stream_wait_event", ([](uintptr_t s, uintptr_t e) {
          check_cuda(cudaStreamWaitEvent((cudaStream_t)s, (cudaEvent_t)e, 0), "cudaStreamWaitEvent");
        }));
  m.def("event_create", ([](int i, bool timing) {
          set_device(i);
          cudaEvent_t e;
          check_cuda(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming),
                     "cudaEventCreate");
          return (uintptr_t)e;
        }));
  m.def("event_destroy", [](uintptr_t e) {
    if (e) cudaEventDestroy((cudaEvent_t)e);
  });
  m.def("event_record", ([](uintptr_t e, uintptr_t s) {
          check_cuda(cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s), "cudaEventRecord");
        }));
  m.def("event_query", ([](uintptr_t e) {
          cudaError_t err = cudaEventQuery((cudaEvent_t)e);
          if (err == cudaErrorNotReady) {
            cudaGetLastError();
            return false;
          }
          check_cuda(err, "cudaEventQuery");
          return true;
        }));
  m.def("event_synchronize", ([](uintptr_t e) {
          ++g_host_syncs;
          cudaError_t err;
          Py_BEGIN_ALLOW_THREADS err = cudaEventSynchronize((cudaEvent_t)e);
          Py_END_ALLOW_THREADS check_cuda(err, "cudaEventSynchronize");
        }));
  m.def("event_elapsed_time", ([](uintptr_t a, uintptr_t b) {
          float ms = 0;
          check_cuda(cudaEventElapsedTime(&ms, (cudaEvent_t)a, (cudaEvent_t)b), "cudaEventElapsedTime");
          return ms;
        }));
  m.def("spin", ([](int i, long long cycles) { spin(i, cycles); }),
        "Keep the current stream busy for `cycles` GPU clocks (tests).");

  // ---- cuBLAS
  m.def("load_cublas", [](const std::string& path) { return load_cublas(path); });
  m.def("cublas_loaded", []() { return cublas_loaded(); });
  m.def("cublas_path", []() { return cublas_path(); });
}
