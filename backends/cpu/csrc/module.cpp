// ember_cpu._C module definition: Storage type, kernels (vectorcall functions each op-family
// file registers with EMBER_KERNEL), thread and BLAS control.
#include <pybind11/pybind11.h>

#include "ember.h"
#include "onednn.h"
#include "vecmath.h"

namespace py = pybind11;

namespace ember {
void load_blas(const std::string& path);
bool blas_loaded();
const char* generated_table_hash();  // elementwise.cpp
}  // namespace ember

// ember.compile's generated kernels run their loops on the pool through this C entry
// (their libraries get its address from parallel_address()): fn(ctx, b, e) over
// sub-ranges of [begin, end), inline below two grains, with the GIL as the caller left it
extern "C" void ember_cpu_parallel(int64_t begin, int64_t end, int64_t grain,
                                   void (*fn)(void*, int64_t, int64_t), void* ctx) {
  auto body = [&](int64_t b, int64_t e) { fn(ctx, b, e); };
  ember::parallel_for(begin, end, grain, body);
}

PYBIND11_MODULE(_C, m) {
  m.doc() = "ember CPU backend kernels";
  if (!ember::init_storage_type(m.ptr())) throw py::error_already_set();
  // the kernels each op-family file registered (EMBER_KERNEL), and their names as KERNELS
  if (!ember::add_kernels(m.ptr())) throw py::error_already_set();
  py::register_exception_translator(&ember::translate_exception);
  // the op definitions the generated kernels came from (the plugin checks it on load)
  m.attr("OPS_TABLE_HASH") = ember::generated_table_hash();

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
  m.def("load_onednn", [](const std::string& path) { ember::load_onednn(path); }, py::arg("path"),
        "dlopen oneDNN (libdnnl.so.3, v3 C API) and use it for float32 convolution and matrix products.");
  m.def("onednn_loaded", []() { return ember::onednn_loaded(); });
  m.def("set_onednn_enabled", [](bool on) { ember::set_onednn_enabled(on); }, py::arg("on"),
        "Switch the oneDNN paths on or off (ember's own kernels run when off).");
  m.def("onednn_enabled", []() { return ember::onednn_enabled(); });
  m.def("onednn_calls", []() { return ember::onednn_calls(); });
  m.def("parallel_address", []() { return (uintptr_t)&ember_cpu_parallel; },
        "The address of ember_cpu_parallel(begin, end, grain, fn, ctx): the thread pool "
        "for kernels generated at run time (ember.compile).");
  m.def("sum_addresses", []() {
          py::dict d;
          d["float32"] = (uintptr_t)&ember::vsum_f32;
          d["float64"] = (uintptr_t)&ember::vsum_f64;
          return d;
        },
        "The addresses of the contiguous sums the sum and mean kernels use, by dtype: "
        "double f(const T* p, int64_t n). ember.compile's fused reductions call them, "
        "so a fused sum adds in eager mode's order.");
}
