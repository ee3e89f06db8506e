// Convolution and pooling building blocks (1 to 3 spatial dims, padded to 3), with the
// CPU backend's semantics (backends/cpu/csrc/conv.cpp):
//   im2col(out, x, kernel, dilation, padding, stride, blocks, value): x (N, C, *sp) ->
//       out (N, C, *kernel, *blocks), any strides of out; positions outside x read `value`.
//   col2im(out, cols, kernel, dilation, padding, stride, size): the adjoint, as a gather
//       (each output element sums the columns that read it: deterministic, no atomics).
//   max_pool(values, indices, x, ...): window maxima (NaN wins) and flat plane indices.
#include <limits>

#include "kernels.cuh"

namespace ember {

namespace {

struct Strides5 {
  int64_t s[5];
};

struct G3 {
  int64_t N, C, I[3], K[3], D[3], P[3], S[3], B[3];
  int64_t xs[5], os[5];            // strides of the (N, C, *sp3) operand and the output
  int64_t ok[3], ob[3];            // im2col out / col2im cols: kernel and block strides
};

void read_geom(const Args& args, int first, int nd, G3& g) {
  int64_t k[3], d[3], p[3], s[3];
  args.get_ints(first, nd, k);
  args.get_ints(first + 1, nd, d);
  args.get_ints(first + 2, nd, p);
  args.get_ints(first + 3, nd, s);
  for (int j = 0; j < 3; ++j) g.K[j] = g.D[j] = g.S[j] = 1, g.P[j] = 0, g.I[j] = g.B[j] = 1;
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    if (k[i] <= 0 || d[i] <= 0 || s[i] <= 0 || p[i] < 0)
      raise(PyExc_ValueError, "%s(): kernel, dilation and stride must be positive and padding non-negative", args.op);
    g.K[j] = k[i], g.D[j] = d[i], g.P[j] = p[i], g.S[j] = s[i];
  }
}
void pad3(const Tensor& t, int first, int nd, int64_t* st, int64_t* sh) {
  for (int j = 0; j < 3; ++j) st[j] = 0, sh[j] = 1;
  for (int i = 0; i < nd; ++i) st[3 - nd + i] = t.stride[first + i], sh[3 - nd + i] = t.shape[first + i];
}
int spatial(const char* op, const Tensor& t) {
  const int nd = t.ndim - 2;
  if (nd < 1 || nd > 3) raise(PyExc_ValueError, "%s(): expected 1 to 3 spatial dims, got %s", op, shape_str(t).c_str());
  return nd;
}

template <class T>
__global__ void im2col_kernel(int64_t total, G3 g, const T* __restrict__ x, T* out, T fill) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t q = e;
    const int64_t b2 = q % g.B[2]; q /= g.B[2];
    const int64_t b1 = q % g.B[1]; q /= g.B[1];
    const int64_t b0 = q % g.B[0]; q /= g.B[0];
    const int64_t k2 = q % g.K[2]; q /= g.K[2];
    const int64_t k1 = q % g.K[1]; q /= g.K[1];
    const int64_t k0 = q % g.K[0]; q /= g.K[0];
    const int64_t c = q % g.C, n = q / g.C;
    const int64_t i0 = b0 * g.S[0] - g.P[0] + k0 * g.D[0];
    const int64_t i1 = b1 * g.S[1] - g.P[1] + k1 * g.D[1];
    const int64_t i2 = b2 * g.S[2] - g.P[2] + k2 * g.D[2];
    const bool in = i0 >= 0 && i0 < g.I[0] && i1 >= 0 && i1 < g.I[1] && i2 >= 0 && i2 < g.I[2];
    T v = fill;
    if (in) v = x[n * g.xs[0] + c * g.xs[1] + i0 * g.xs[2] + i1 * g.xs[3] + i2 * g.xs[4]];
    out[n * g.os[0] + c * g.os[1] + k0 * g.ok[0] + k1 * g.ok[1] + k2 * g.ok[2] + b0 * g.ob[0] + b1 * g.ob[1] +
        b2 * g.ob[2]] = v;
  }
}

template <class T>
__global__ void col2im_kernel(int64_t total, G3 g, const T* __restrict__ cols, T* out) {
  using A = acc_t<T>;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t q = e;
    int64_t i[3];
    i[2] = q % g.I[2]; q /= g.I[2];
    i[1] = q % g.I[1]; q /= g.I[1];
    i[0] = q % g.I[0]; q /= g.I[0];
    const int64_t c = q % g.C, n = q / g.C;
    A acc = 0;
    const T* cp = cols + n * g.xs[0] + c * g.xs[1];
    for (int64_t k0 = 0; k0 < g.K[0]; ++k0) {
      const int64_t t0 = i[0] + g.P[0] - k0 * g.D[0];
      if (t0 < 0 || t0 % g.S[0]) continue;
      const int64_t b0 = t0 / g.S[0];
      if (b0 >= g.B[0]) continue;
      for (int64_t k1 = 0; k1 < g.K[1]; ++k1) {
        const int64_t t1 = i[1] + g.P[1] - k1 * g.D[1];
        if (t1 < 0 || t1 % g.S[1]) continue;
        const int64_t b1 = t1 / g.S[1];
        if (b1 >= g.B[1]) continue;
        for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
          const int64_t t2 = i[2] + g.P[2] - k2 * g.D[2];
          if (t2 < 0 || t2 % g.S[2]) continue;
          const int64_t b2 = t2 / g.S[2];
          if (b2 >= g.B[2]) continue;
          acc += (A)static_cast<compute_t<T>>(cp[k0 * g.ok[0] + k1 * g.ok[1] + k2 * g.ok[2] + b0 * g.ob[0] +
                                                  b1 * g.ob[1] + b2 * g.ob[2]]);
        }
      }
    }
    out[n * g.os[0] + c * g.os[1] + i[0] * g.os[2] + i[1] * g.os[3] + i[2] * g.os[4]] = cvt<T>(acc);
  }
}

template <class T>
__global__ void max_pool_kernel(int64_t total, G3 g, const T* __restrict__ x, T* values, int64_t* indices,
                                Strides5 ist) {
  const int64_t* is_ = ist.s;
  using C = compute_t<T>;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t q = e;
    const int64_t b2 = q % g.B[2]; q /= g.B[2];
    const int64_t b1 = q % g.B[1]; q /= g.B[1];
    const int64_t b0 = q % g.B[0]; q /= g.B[0];
    const int64_t c = q % g.C, n = q / g.C;
    const T* xp = x + n * g.xs[0] + c * g.xs[1];
    C best = C(0);
    int64_t bi = -1;
    for (int64_t k0 = 0; k0 < g.K[0]; ++k0) {
      const int64_t i0 = b0 * g.S[0] - g.P[0] + k0 * g.D[0];
      if (i0 < 0 || i0 >= g.I[0]) continue;
      for (int64_t k1 = 0; k1 < g.K[1]; ++k1) {
        const int64_t i1 = b1 * g.S[1] - g.P[1] + k1 * g.D[1];
        if (i1 < 0 || i1 >= g.I[1]) continue;
        for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
          const int64_t i2 = b2 * g.S[2] - g.P[2] + k2 * g.D[2];
          if (i2 < 0 || i2 >= g.I[2]) continue;
          const C v = static_cast<C>(xp[i0 * g.xs[2] + i1 * g.xs[3] + i2 * g.xs[4]]);
          bool take = bi < 0 || v > best;  // the first valid position, then strictly greater
          if constexpr (is_fp_v<T>) take = take || v != v;  // or NaN (as the CPU backend)
          if (take) {
            best = v;
            bi = (i0 * g.I[1] + i1) * g.I[2] + i2;
          }
        }
      }
    }
    const int64_t vo = n * g.os[0] + c * g.os[1] + b0 * g.os[2] + b1 * g.os[3] + b2 * g.os[4];
    const int64_t io = n * is_[0] + c * is_[1] + b0 * is_[2] + b1 * is_[3] + b2 * is_[4];
    if (bi < 0) {
      if constexpr (is_fp_v<T>) best = -(C)INFINITY;
      else best = std::numeric_limits<C>::lowest();
    }
    values[vo] = cvt<T>(best);
    indices[io] = bi < 0 ? 0 : bi;
  }
}

void k_im2col(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("im2col", a, n, kw, {"out", "x", "kernel", "dilation", "padding", "stride", "blocks", "value"}, 7);
  Tensor out = args.out(0), x = args.tensor(1);
  check_same_dtype("im2col", out, x);
  const int nd = spatial("im2col", x);
  G3 g;
  read_geom(args, 2, nd, g);
  int64_t blocks[3];
  args.get_ints(6, nd, blocks);
  const double value = args.has(7) ? args.get_double(7) : 0.0;
  if (out.ndim != 2 + 2 * nd || out.shape[0] != x.shape[0] || out.shape[1] != x.shape[1])
    raise(PyExc_ValueError, "im2col(): out %s does not match input %s", shape_str(out).c_str(), shape_str(x).c_str());
  g.N = x.shape[0];
  g.C = x.shape[1];
  int64_t tmp[3];
  pad3(x, 2, nd, g.xs + 2, g.I);
  g.xs[0] = x.stride[0], g.xs[1] = x.stride[1];
  g.os[0] = out.stride[0], g.os[1] = out.stride[1];
  pad3(out, 2, nd, g.ok, tmp);
  pad3(out, 2 + nd, nd, g.ob, g.B);
  for (int i = 0; i < nd; ++i)
    if (g.B[3 - nd + i] != blocks[i] || g.K[3 - nd + i] != out.shape[2 + i])
      raise(PyExc_ValueError, "im2col(): out %s must be (N, C, *kernel, *blocks)", shape_str(out).c_str());
  if (out.numel == 0) return;
  dispatch<M_ALL>(x.dtype, "im2col", [&](auto tag) {
    using T = EMBER_T(tag);
    T fill;
    if constexpr (is_fp_v<T>) fill = cvt<T>(value);
    else fill = (T)(int64_t)value;
    im2col_kernel<T><<<grid_for(out.numel), kThreads, 0, current_stream(x.device)>>>(out.numel, g, (const T*)x.data,
                                                                                   (T*)out.data, fill);
    check_launch("im2col");
  });
}

void k_col2im(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("col2im", a, n, kw, {"out", "cols", "kernel", "dilation", "padding", "stride", "size"}, 7);
  Tensor out = args.out(0), cols = args.tensor(1);
  check_same_dtype("col2im", out, cols);
  const int nd = spatial("col2im", out);
  G3 g;
  read_geom(args, 2, nd, g);
  if (cols.ndim != 2 + 2 * nd || cols.shape[0] != out.shape[0] || cols.shape[1] != out.shape[1])
    raise(PyExc_ValueError, "col2im(): cols %s must be (N, C, *kernel, *blocks) for out %s", shape_str(cols).c_str(),
          shape_str(out).c_str());
  g.N = out.shape[0];
  g.C = out.shape[1];
  int64_t tmp[3];
  pad3(out, 2, nd, g.os + 2, g.I);
  g.os[0] = out.stride[0], g.os[1] = out.stride[1];
  g.xs[0] = cols.stride[0], g.xs[1] = cols.stride[1];
  pad3(cols, 2, nd, g.ok, tmp);
  pad3(cols, 2 + nd, nd, g.ob, g.B);
  if (out.numel == 0) return;
  dispatch<M_NUM>(out.dtype, "col2im", [&](auto tag) {
    using T = EMBER_T(tag);
    col2im_kernel<T><<<grid_for(out.numel), kThreads, 0, current_stream(out.device)>>>(out.numel, g,
                                                                                     (const T*)cols.data, (T*)out.data);
    check_launch("col2im");
  });
}

void k_max_pool(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("max_pool", a, n, kw, {"values", "indices", "x", "kernel", "dilation", "padding", "stride", "blocks"}, 8);
  Tensor values = args.out(0), indices = args.out(1), x = args.tensor(2);
  check_same_dtype("max_pool", values, x);
  check_dtype("max_pool", indices, kInt64, "indices");
  check_same_shape("max_pool", values, indices);
  const int nd = spatial("max_pool", x);
  G3 g;
  read_geom(args, 3, nd, g);
  g.N = x.shape[0];
  g.C = x.shape[1];
  pad3(x, 2, nd, g.xs + 2, g.I);
  g.xs[0] = x.stride[0], g.xs[1] = x.stride[1];
  pad3(values, 2, nd, g.os + 2, g.B);
  g.os[0] = values.stride[0], g.os[1] = values.stride[1];
  if (values.numel == 0) return;
  Strides5 is;
  int64_t tmp[3];
  pad3(indices, 2, nd, is.s + 2, tmp);
  is.s[0] = indices.stride[0], is.s[1] = indices.stride[1];
  dispatch<M_NUM>(x.dtype, "max_pool", [&](auto tag) {
    using T = EMBER_T(tag);
    max_pool_kernel<T><<<grid_for(values.numel), kThreads, 0, current_stream(x.device)>>>(
        values.numel, g, (const T*)x.data, (T*)values.data, (int64_t*)indices.data, is);
    check_launch("max_pool");
  });
}

}  // namespace

void register_conv(std::vector<PyMethodDef>& defs) {
  defs.push_back(EMBER_DEF("im2col", k_im2col));
  defs.push_back(EMBER_DEF("col2im", k_col2im));
  defs.push_back(EMBER_DEF("max_pool", k_max_pool));
}

}  // namespace ember
