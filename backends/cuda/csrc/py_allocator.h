// Python views of the C++ caching allocator: statistics with PyTorch's keys (an
// OrderedDict, sorted), snapshots, OutOfMemoryError translation, and (for the policy
// tests) a CachingAllocator class with Block objects, in the API of
// ember.dispatcher.allocator.CachingAllocator.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "allocator_policy.h"

namespace ember_cuda {

namespace py = pybind11;

inline py::object stats_to_dict(CachingAllocator& a) {
  py::object od = py::module_::import("collections").attr("OrderedDict")();
  for (auto& kv : a.memory_stats()) od[py::str(kv.first)] = py::int_(kv.second);
  return od;
}

inline py::list snapshot_to_list(CachingAllocator& a) {
  py::list out;
  for (auto& s : a.memory_snapshot()) {
    py::list blocks;
    size_t allocated = 0, active = 0;
    for (auto& b : s.blocks) {
      py::dict d;
      d["offset"] = b.offset;
      d["size"] = b.size;
      d["requested_size"] = b.requested;
      d["state"] = b.state;
      blocks.append(d);
      if (std::string(b.state) == "active_allocated") allocated += b.size;
      if (std::string(b.state) != "inactive") active += b.size;
    }
    py::dict d;
    d["handle"] = s.handle;
    d["address"] = s.address;
    d["total_size"] = s.total_size;
    d["stream"] = s.stream;
    d["segment_type"] = s.small ? "small" : "large";
    d["allocated_size"] = allocated;
    d["active_size"] = active;
    d["blocks"] = blocks;
    out.append(d);
  }
  return out;
}

// Raise ember.OutOfMemoryError (the dispatcher's class) with its attributes.
[[noreturn]] inline void raise_oom(const OutOfMemory& e) {
  py::object cls = py::module_::import("ember.dispatcher.allocator").attr("OutOfMemoryError");
  py::object err = cls(py::str(e.what()));
  err.attr("nbytes") = e.nbytes;
  err.attr("alloc_size") = e.alloc_size;
  err.attr("device") = e.device;
  PyErr_SetObject(cls.ptr(), err.ptr());
  throw py::error_already_set();
}

// memory_summary(): the dispatcher's table, fed with these statistics.
inline std::string memory_summary(CachingAllocator& a, bool abbreviated) {
  py::object CA = py::module_::import("ember.dispatcher.allocator").attr("CachingAllocator");
  py::object types = py::module_::import("types");
  py::object memory = types.attr("SimpleNamespace")(py::arg("name") = a.device()->name());
  py::object stats = stats_to_dict(a);
  py::object self = types.attr("SimpleNamespace")(
      py::arg("memory_stats") = py::cpp_function([stats]() { return stats; }),
      py::arg("_memory") = memory);
  return CA.attr("memory_summary")(self, abbreviated).cast<std::string>();
}

// A block handed to Python (policy tests): its fields are fixed while it is allocated, and
// copied here so that they stay readable after free (the C++ block may be merged away).
struct PyBlock {
  Block* block;
  uintptr_t segment;
  size_t offset, size, requested;
  StreamId stream;
  bool freed = false;
};

struct PyCachingAllocator {
  py::object device_ref;  // keeps the device alive
  std::unique_ptr<CachingAllocator> a;
};

template <class Dev>
void bind_allocator(py::module_& m) {
  py::class_<PyBlock>(m, "Block")
      .def_readonly("segment", &PyBlock::segment)
      .def_readonly("offset", &PyBlock::offset)
      .def_readonly("size", &PyBlock::size)
      .def_readonly("requested", &PyBlock::requested)
      .def_readonly("stream", &PyBlock::stream)
      .def_property_readonly("allocated", [](const PyBlock& b) { return !b.freed; })
      .def("__repr__", [](const PyBlock& b) {
        return "Block(offset=" + std::to_string(b.offset) + ", size=" + std::to_string(b.size) +
               ", requested=" + std::to_string(b.requested) +
               ", stream=" + std::to_string(b.stream) + (b.freed ? ", freed)" : ")");
      });

  py::class_<PyCachingAllocator>(m, "CachingAllocator")
      .def(py::init([](py::object dev) {
             Dev& d = dev.cast<Dev&>();
             return PyCachingAllocator{dev, std::make_unique<CachingAllocator>(&d)};
           }),
           py::arg("device"))
      .def("malloc",
           [](PyCachingAllocator& self, py::object nbytes_obj, StreamId stream) -> py::object {
             py::int_ nb(py::reinterpret_steal<py::object>(PyNumber_Index(nbytes_obj.ptr())));
             if (!nb) throw py::error_already_set();
             long long n = nb.cast<long long>();
             if (n < 0)
               throw py::value_error("cannot allocate a negative number of bytes (" +
                                     std::to_string(n) + ")");
             Block* b;
             try {
               b = self.a->malloc((size_t)n, stream);
             } catch (const OutOfMemory& e) {
               raise_oom(e);
             }
             if (!b) return py::none();
             return py::cast(PyBlock{b, (uintptr_t)b->seg->handle, b->offset, b->size,
                                     b->requested, b->stream});
           },
           py::arg("nbytes"), py::arg("stream") = 0)
      .def("free",
           [](PyCachingAllocator& self, py::object obj) {
             if (obj.is_none()) return;
             PyBlock& b = obj.cast<PyBlock&>();
             if (b.freed)
               throw std::runtime_error(
                   "block is not allocated by this allocator (freed twice?)");
             b.freed = true;
             self.a->free(b.block);
           })
      .def("record_stream",
           [](PyCachingAllocator& self, py::object obj, StreamId stream) {
             if (obj.is_none()) return;
             PyBlock& b = obj.cast<PyBlock&>();
             if (b.freed) throw std::runtime_error("record_stream on a block which is not allocated");
             self.a->record_stream(b.block, stream);
           })
      .def("empty_cache", [](PyCachingAllocator& self) { self.a->empty_cache(); })
      .def("memory_stats", [](PyCachingAllocator& self) { return stats_to_dict(*self.a); })
      .def("memory_snapshot", [](PyCachingAllocator& self) { return snapshot_to_list(*self.a); })
      .def("memory_summary",
           [](PyCachingAllocator& self, bool abbreviated) {
             return memory_summary(*self.a, abbreviated);
           },
           py::arg("abbreviated") = false)
      .def("memory_allocated", [](PyCachingAllocator& s) { return s.a->memory_allocated(); })
      .def("max_memory_allocated", [](PyCachingAllocator& s) { return s.a->max_memory_allocated(); })
      .def("memory_reserved", [](PyCachingAllocator& s) { return s.a->memory_reserved(); })
      .def("max_memory_reserved", [](PyCachingAllocator& s) { return s.a->max_memory_reserved(); })
      .def("reset_peak_memory_stats", [](PyCachingAllocator& s) { s.a->reset_peak_memory_stats(); })
      .def("set_limit", [](PyCachingAllocator& s, int64_t bytes, double fraction) { s.a->set_limit(bytes, fraction); },
           py::arg("bytes"), py::arg("fraction"))
      .def("reset_accumulated_memory_stats",
           [](PyCachingAllocator& s) { s.a->reset_accumulated_memory_stats(); });
}

}  // namespace ember_cuda
