// copy (with dtype conversion), fill, arange.
#include "kernels.cuh"

namespace ember {

struct Identity {
  template <class T> __device__ T operator()(T v) const { return v; }
};
template <class To, class From>
struct CastF {
  __device__ void operator()(char** p) const { *(To*)p[0] = cvt<To>(*(const From*)p[1]); }
};
template <class T>
struct FillF {
  T v;
  __device__ void operator()(char** p) const { *(T*)p[0] = v; }
};

void copy_tensor(const Tensor& dst, const Tensor& src) {
  const Tensor* ts[2] = {&dst, &src};
  if (dst.dtype == src.dtype) {
    dispatch_size(dst.itemsize, "copy", [&](auto tag) {
      using T = EMBER_T(tag);
      same_type_op<T, 1>("copy", ts, Identity{});
    });
    return;
  }
  Geom<2> g;
  const int64_t n = make_geom<2>(g, ts, "copy");
  // (uint16 / uint32 / uint64 too: casts are among the few things PyTorch does with them)
  dispatch<M_ALL | M_BAREBONES>(dst.dtype, "copy", [&](auto to) {
    using To = EMBER_T(to);
    dispatch<M_ALL | M_BAREBONES>(src.dtype, "copy", [&](auto from) {
      using From = EMBER_T(from);
      launch_elementwise<2>("copy", g, n, dst.device, CastF<To, From>{});
    });
  });
}

namespace {

void k_copy(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("copy", a, n, kw, {"out", "src"}, 2);
  Tensor out = args.out(0), src = args.tensor(1);
  check_same_shape("copy", out, src);
  if (out.numel == 0) return;
  if (out.data == src.data && out.dtype == src.dtype) {
    bool same = true;
    for (int d = 0; same && d < out.ndim; ++d) same = out.stride[d] == src.stride[d];
    if (same) return;
  }
  if (out.dtype == src.dtype && out.is_contiguous() && src.is_contiguous()) {
    check_cuda(cudaMemcpyAsync(out.data, src.data, (size_t)(out.numel * out.itemsize), cudaMemcpyDeviceToDevice,
                               current_stream(out.device)),
               "copy");
    return;
  }
  copy_tensor(out, src);
}
EMBER_KERNEL("copy", k_copy);

template <class T>
T scalar_as(PyObject* v, const char* op) {
  if (PyBool_Check(v)) return cvt<T>(v == Py_True);
  if (PyLong_Check(v)) {
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      unsigned long long u = PyLong_AsUnsignedLongLongMask(v);
      return (T)u;
    }
    if constexpr (is_half_v<T>) return cvt<T>((float)x);
    else if constexpr (std::is_same_v<T, bool>) return x != 0;
    else return (T)x;
  }
  double d = PyFloat_AsDouble(v);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): value must be a number", op);
  }
  return cvt<T>(d);
}

void k_fill(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("fill", a, n, kw, {"out", "value"}, 2);
  Tensor out = args.out(0);
  if (out.numel == 0) return;
  dispatch<M_ALL | M_BAREBONES>(out.dtype, "fill", [&](auto tag) {
    using T = EMBER_T(tag);
    const T v = scalar_as<T>(args.v[1], "fill");
    const Tensor* ts[1] = {&out};
    Geom<1> g;
    const int64_t cnt = make_geom<1>(g, ts, "fill");
    launch_elementwise<1>("fill", g, cnt, out.device, FillF<T>{v});
  });
}
EMBER_KERNEL("fill", k_fill);

template <class T, class S>
__global__ void arange_kernel(int64_t n, T* out, int64_t stride, S start, S step) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    out[i * stride] = cvt<T>(start + (S)i * step);
}

void k_arange(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("arange", a, n, kw, {"out", "start", "step"}, 3);
  Tensor out = args.out(0);
  if (out.ndim != 1) raise(PyExc_ValueError, "arange(): out must be 1-D, got %s", shape_str(out).c_str());
  if (out.numel == 0) return;
  const bool fp = is_floating_code(out.dtype) || PyFloat_Check(args.v[1]) || PyFloat_Check(args.v[2]);
  dispatch<M_NUM>(out.dtype, "arange", [&](auto tag) {
    using T = EMBER_T(tag);
    if (fp) {
      arange_kernel<T, double><<<grid_for(out.numel), kThreads, 0, current_stream(out.device)>>>(
          out.numel, (T*)out.data, out.stride[0], args.get_double(1), args.get_double(2));
    } else {
      arange_kernel<T, int64_t><<<grid_for(out.numel), kThreads, 0, current_stream(out.device)>>>(
          out.numel, (T*)out.data, out.stride[0], args.get_int(1), args.get_int(2));
    }
    check_launch("arange");
  });
}
EMBER_KERNEL("arange", k_arange);

}  // namespace

}  // namespace ember

namespace ember {

namespace {
__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
}  // namespace

// Queues a kernel that keeps the current stream busy for `cycles` GPU clock cycles (tests and
// scripts/gpu_check.sh use it to show that the host does not wait for the device).
void spin(int device, long long cycles) {
  set_device(device);
  spin_kernel<<<1, 1, 0, current_stream(device)>>>(cycles);
  check_launch("spin");
}

}  // namespace ember
