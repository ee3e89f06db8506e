// ember_cuda._policy_test: the C++ allocator policy core over a fake device (host memory,
// test-controlled streams and events), so the policy tests run on machines without a GPU.
// Built whether or not CUDA is available.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <map>
#include <memory>

#include "allocator_policy.h"
#include "py_allocator.h"

namespace py = pybind11;
using namespace ember_cuda;

namespace {

// Host memory with a capacity; streams are small integers (0 = default stream) whose
// recorded events complete when the test calls complete(stream).
struct FakeDevice : DeviceInterface {
  std::string dev_name = "fake:0";
  size_t capacity;
  bool report_capacity = true;
  std::map<uintptr_t, size_t> live;  // handle -> size
  std::vector<size_t> alloc_calls;
  std::vector<uintptr_t> freed;
  std::map<EventId, std::pair<StreamId, bool>> events;  // id -> (stream, done)
  std::vector<StreamId> event_streams;                   // streams of recorded events, in order
  int synchronized = 0;
  EventId next_event = 1;

  explicit FakeDevice(size_t cap) : capacity(cap) {}
  ~FakeDevice() override {
    for (auto& kv : live) std::free((void*)kv.first);
  }
  size_t used() const {
    size_t u = 0;
    for (auto& kv : live) u += kv.second;
    return u;
  }
  std::string name() const override { return dev_name; }
  void* alloc(size_t n) override {
    alloc_calls.push_back(n);
    if (used() + n > capacity) return nullptr;
    void* p = std::malloc(n);  // untouched host pages: cheap even for large segments
    if (p) live[(uintptr_t)p] = n;
    return p;
  }
  void free(void* p) override {
    auto it = live.find((uintptr_t)p);
    if (it == live.end()) throw std::logic_error("fake device: free of an unknown handle");
    live.erase(it);
    freed.push_back((uintptr_t)p);
    std::free(p);
  }
  bool mem_get_info(size_t* f, size_t* t) override {
    if (!report_capacity) return false;
    *f = capacity - used();
    *t = capacity;
    return true;
  }
  EventId record_event(StreamId s) override {
    EventId e = next_event++;
    events[e] = {s, false};
    event_streams.push_back(s);
    return e;
  }
  bool event_done(EventId e) override { return events.at(e).second; }
  void event_synchronize(EventId e) override {
    events.at(e).second = true;
    synchronized += 1;
  }
  void complete(StreamId s) {
    for (auto& kv : events)
      if (kv.second.first == s) kv.second.second = true;
  }
};

}  // namespace

PYBIND11_MODULE(_policy_test, m) {
  m.doc() = "The CUDA backend's C++ caching-allocator policy over a fake host-memory device";
  py::class_<FakeDevice>(m, "FakeDevice")
      .def(py::init<size_t>(), py::arg("capacity") = size_t(1) << 30)
      .def_readwrite("name", &FakeDevice::dev_name)
      .def_readwrite("capacity", &FakeDevice::capacity)
      .def_readwrite("report_capacity", &FakeDevice::report_capacity)
      .def_property_readonly("used", &FakeDevice::used)
      .def_property_readonly("live", [](const FakeDevice& d) {
        py::dict out;
        for (auto& kv : d.live) out[py::int_(kv.first)] = kv.second;
        return out;
      })
      .def_readonly("alloc_calls", &FakeDevice::alloc_calls)
      .def_readonly("freed", &FakeDevice::freed)
      .def_readonly("event_streams", &FakeDevice::event_streams)
      .def_readonly("synchronized", &FakeDevice::synchronized)
      .def("complete", &FakeDevice::complete, py::arg("stream"));

  bind_allocator<FakeDevice>(m);
}
