// The CPU side of the kernel-tensor protocol (what <ember/python.h> asks of a backend) and
// the elementwise iterator's builder.
#include "ember.h"

namespace ember {

const char* const kDeviceType = "cpu";
int64_t g_stream_bytes = 8 << 20;

// A tensor's _storage must be an ember_cpu Storage: host memory, possibly a read-only export.
StorageRef storage_ref(PyObject* storage, const char* op, const char* arg) {
  if (!PyObject_TypeCheck(storage, &StorageType))
    raise(PyExc_TypeError, "%s(): argument '%s' has a _storage that is not an ember_cpu Storage (%s)", op, arg,
          Py_TYPE(storage)->tp_name);
  const StorageObject* so = (const StorageObject*)storage;
  return {so->data, so->nbytes, so->readonly != 0, 0};
}

// ------------------------------------------------------------------------------------------------
void ElemIter::build(const Tensor* const* ts, int n, const char* op) {
  const Tensor& o = *ts[0];
  for (int k = 1; k < n; ++k) {
    const Tensor& t = *ts[k];
    bool ok = t.ndim == o.ndim;
    for (int d = 0; ok && d < o.ndim; ++d) ok = t.shape[d] == o.shape[d];
    if (!ok)
      raise(PyExc_ValueError, "%s(): operand shapes must match the output's (broadcast first): %s vs %s", op,
            shape_str(o).c_str(), shape_str(t).c_str());
  }
  build_shape(o.shape, o.ndim, ts, n);
}

void ElemIter::build_shape(const int64_t* shp, int nd_in, const Tensor* const* ts, int n) {
  nops = n;
  numel = 1;
  for (int d = 0; d < nd_in; ++d) numel *= shp[d];
  for (int k = 0; k < n; ++k) base[k] = ts[k]->data;
  int nd = 0;
  for (int d = nd_in - 1; d >= 0; --d) {
    if (shp[d] == 1) continue;
    shape[nd] = shp[d];
    for (int k = 0; k < n; ++k) strides[nd][k] = ts[k]->stride[d] * ts[k]->itemsize;
    ++nd;
  }
  // order dims so the output's strides increase from the innermost dim (stable insertion sort)
  for (int i = 1; i < nd; ++i) {
    for (int j = i; j > 0 && strides[j][0] < strides[j - 1][0]; --j) {
      std::swap(shape[j], shape[j - 1]);
      for (int k = 0; k < n; ++k) std::swap(strides[j][k], strides[j - 1][k]);
    }
  }
  // coalesce dims that are contiguous for every operand
  if (nd > 1) {
    int w = 0;
    for (int i = 1; i < nd; ++i) {
      bool ok = true;
      for (int k = 0; k < n; ++k)
        if (strides[i][k] != strides[w][k] * shape[w]) { ok = false; break; }
      if (ok) {
        shape[w] *= shape[i];
      } else {
        ++w;
        shape[w] = shape[i];
        for (int k = 0; k < n; ++k) strides[w][k] = strides[i][k];
      }
    }
    nd = w + 1;
  }
  // a tiny innermost dim under a long one (a broadcast over trailing pairs, RGB channels):
  // run the long one innermost, strided, instead of one inner-loop call per 2-4 elements
  if (nd >= 2 && shape[0] <= 4 && shape[1] >= 16 * shape[0]) {
    std::swap(shape[0], shape[1]);
    for (int k = 0; k < n; ++k) std::swap(strides[0][k], strides[1][k]);
  }
  if (nd == 0) {
    nd = 1;
    shape[0] = 1;
    for (int k = 0; k < n; ++k) strides[0][k] = 0;
  }
  ndim = nd;
}

}  // namespace ember
