// ember_cpu._C module definition: Storage type, kernels (vectorcall functions registered by
// each op-family file), thread and BLAS control.
#include <pybind11/pybind11.h>

#include "ember.h"

namespace py = pybind11;

namespace ember {
void load_blas(const std::string& path);
bool blas_loaded();
}  // namespace ember

PYBIND11_MODULE(_C, m) {
  m.doc() = "ember CPU backend kernels";
  ember::init_strings();
  if (!ember::init_storage_type(m.ptr())) throw py::error_already_set();

  static std::vector<PyMethodDef> defs;
  if (defs.empty()) {
    ember::register_copy(defs);
    ember::register_unary(defs);
    ember::register_binary(defs);
    ember::register_compare(defs);
    ember::register_reduce(defs);
    ember::register_scan(defs);
    ember::register_softmax(defs);
    ember::register_index(defs);
    ember::register_sort(defs);
    ember::register_matmul(defs);
    ember::register_random(defs);
    ember::register_ternary(defs);
    ember::register_conv(defs);
    defs.push_back(PyMethodDef{nullptr, nullptr, 0, nullptr});
  }
  if (PyModule_AddFunctions(m.ptr(), defs.data()) < 0) throw py::error_already_set();

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ember::Error& e) {
      PyErr_SetString(e.type, e.msg.c_str());
    }
  });

  m.def("set_num_threads", [](int n) { ember::set_num_threads(n); }, py::arg("n"),
        "Set the number of threads used by ember's pool (and OpenBLAS).");
  m.def("get_num_threads", []() { return ember::get_num_threads(); });
  m.def("empty_cache", []() { return ember::storage_empty_cache(); },
        "Free the host blocks kept for reuse; returns the number of bytes released.");
  m.def("cached_bytes", []() { return ember::storage_cached_bytes(); });
  m.def("load_blas", [](const std::string& path) { ember::load_blas(path); }, py::arg("path"),
        "dlopen the scipy-openblas32 shared library and use it for float32/float64 bmm.");
  m.def("_set_stream_threshold", [](int64_t b) { ember::g_stream_bytes = b; },
        "Output size (bytes) from which elementwise kernels use non-temporal stores (tuning).");
  m.def("blas_loaded", []() { return ember::blas_loaded(); });
  py::list names;
  for (const auto& d : defs)
    if (d.ml_name) names.append(d.ml_name);
  m.attr("KERNELS") = py::tuple(names);
}
