// gather / scatter (int64 indices) along one dim; embedding lookups and index_select reach
// gather through their composites. Out-of-range indices cannot raise without a host sync:
// gather writes 0 for them and scatter skips them.
#include <ember/ops.h>

#include "kernels.cuh"

namespace ember {

namespace {

// t with index's shape and dim's stride zeroed (the dim is addressed by the index value)
Tensor along(const Tensor& t, const Tensor& index, int dim) {
  Tensor v = t;
  v.ndim = index.ndim;
  for (int d = 0; d < index.ndim; ++d) v.shape[d] = index.shape[d];
  if (v.ndim) v.stride[dim] = 0;
  v.numel = index.numel;
  return v;
}

template <class T>
struct GatherF {
  int64_t size, sd;
  __device__ void operator()(char** p) const {
    const int64_t i = *(const int64_t*)p[1];
    *(T*)p[0] = (i >= 0 && i < size) ? *(const T*)(p[2] + i * sd) : T(0);
  }
};
template <class T>
struct ScatterF {
  int64_t size, sd;
  __device__ void operator()(char** p) const {
    const int64_t i = *(const int64_t*)p[1];
    if (i >= 0 && i < size) *(T*)(p[0] + i * sd) = *(const T*)p[2];
  }
};

void k_gather(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const GatherArgs<MAXD> args = parse_gather<MAXD>(a, n, kw);
  const Tensor &out = args.out, &x = args.x, &index = args.index;
  const int dim = args.dim;
  if (index.numel == 0) return;
  const Tensor xv = along(x, index, dim);
  const Tensor* ts[3] = {&out, &index, &xv};
  Geom<3> g;
  const int64_t cnt = make_geom<3>(g, ts, "gather");
  const int64_t size = x.ndim ? x.shape[dim] : 1;
  const int64_t sd = (x.ndim ? x.stride[dim] : 0) * x.itemsize;
  dispatch_size(x.itemsize, "gather", [&](auto tag) {
    using T = EMBER_T(tag);
    launch_elementwise<3>("gather", g, cnt, out.device, GatherF<T>{size, sd});
  });
}
EMBER_KERNEL("gather", k_gather);

template <class T>
__device__ inline void atomic_add(T* p, T v) {
  // ember's 16-bit float types are the bits of CUDA's, whose atomics they borrow
  if constexpr (std::is_same_v<T, int64_t>) atomicAdd((unsigned long long*)p, (unsigned long long)v);
  else if constexpr (std::is_same_v<T, Half>) atomicAdd((__half*)p, __ushort_as_half(v.x));
  else if constexpr (std::is_same_v<T, BFloat16>) atomicAdd((__nv_bfloat16*)p, __ushort_as_bfloat16(v.x));
  else atomicAdd(p, v);
}

template <class T>
struct ScatterAddF {
  int64_t size, sd;
  __device__ void operator()(char** p) const {
    const int64_t i = *(const int64_t*)p[1];
    if (i >= 0 && i < size) atomic_add((T*)(p[0] + i * sd), *(const T*)p[2]);
  }
};

void k_scatter(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const ScatterArgs<MAXD> args = parse_scatter<MAXD>(a, n, kw);
  const Tensor &out = args.out, &index = args.index, &src = args.src;
  const int dim = args.dim;
  if (index.numel == 0) return;
  const Tensor ov = along(out, index, dim);
  Tensor sv = src;
  for (int d = 0; d < index.ndim; ++d) sv.shape[d] = index.shape[d];
  sv.numel = index.numel;
  const Tensor* ts[3] = {&ov, &index, &sv};
  Geom<3> g;
  const int64_t cnt = make_geom<3>(g, ts, "scatter");
  const int64_t size = out.ndim ? out.shape[dim] : 1;
  const int64_t sd = (out.ndim ? out.stride[dim] : 0) * out.itemsize;
  if (args.mode == kScatterAssign) {
    dispatch_size(out.itemsize, "scatter", [&](auto tag) {
      using T = EMBER_T(tag);
      launch_elementwise<3>("scatter", g, cnt, out.device, ScatterF<T>{size, sd});
    });
  } else if (args.mode == kScatterAdd) {
    dispatch<M_FLOAT | M_I32 | M_I64>(out.dtype, "scatter(reduce='add')", [&](auto tag) {
      using T = EMBER_T(tag);
      launch_elementwise<3>("scatter", g, cnt, out.device, ScatterAddF<T>{size, sd});
    });
  } else {
    raise(PyExc_ValueError, "scatter(): reduce must be None or 'add' on cuda, got '%s'", args.reduce.c_str());
  }
}
EMBER_KERNEL("scatter", k_scatter);

}  // namespace

}  // namespace ember
