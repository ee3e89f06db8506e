// Convolution and pooling building blocks, with ember's shared calling convention and
// semantics (<ember/ops.h>: im2col, col2im, max_pool over 1 to 3 spatial dims, padded to 3).
// col2im is a gather here (each output element sums the columns that read it:
// deterministic, no atomics).
#include <limits>

#include <ember/ops.h>

#include "kernels.cuh"

namespace ember {

namespace {

struct Strides5 {
  int64_t s[5];
};

// the shared geometry plus the element strides the kernels address memory with
struct G3 : ConvGeom {
  int64_t xs[5], os[5];  // strides of the (N, C, *sp3) operand and the output
  int64_t ok[3], ob[3];  // im2col out / col2im cols: kernel and block strides
};

// strides of an (N, C, *sp) tensor with nd spatial dims, padded to (N, C, *sp3)
void strides5(const Tensor& t, int nd, int64_t* st) {
  st[0] = t.stride[0];
  st[1] = t.stride[1];
  strides3(t, 2, nd, st + 2);
}

template <class T>
__global__ void im2col_kernel(int64_t total, G3 g, const T* __restrict__ x, T* out, T fill) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const ConvPos q = conv_pos<true, true>(g, e);
    const int64_t i0 = conv_in(g, 0, q.b[0], q.k[0]), i1 = conv_in(g, 1, q.b[1], q.k[1]),
                  i2 = conv_in(g, 2, q.b[2], q.k[2]);
    const bool in = i0 >= 0 && i0 < g.I[0] && i1 >= 0 && i1 < g.I[1] && i2 >= 0 && i2 < g.I[2];
    T v = fill;
    if (in) v = x[q.n * g.xs[0] + q.c * g.xs[1] + i0 * g.xs[2] + i1 * g.xs[3] + i2 * g.xs[4]];
    out[q.n * g.os[0] + q.c * g.os[1] + q.k[0] * g.ok[0] + q.k[1] * g.ok[1] + q.k[2] * g.ok[2] + q.b[0] * g.ob[0] +
        q.b[1] * g.ob[1] + q.b[2] * g.ob[2]] = v;
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
      const int64_t t0 = i[0] + g.P[0] - k0 * g.D[0];  // = b0 * S[0] when (k0, b0) reads i[0]
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
    const ConvPos q = conv_pos<false, true>(g, e);
    const T* xp = x + q.n * g.xs[0] + q.c * g.xs[1];
    C best = C(0);
    int64_t bi = -1;
    for_window_rows(g, q.b[0], q.b[1], [&](int64_t i0, int64_t i1) {
      for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
        const int64_t i2 = conv_in(g, 2, q.b[2], k2);
        if (i2 < 0 || i2 >= g.I[2]) continue;
        const C v = static_cast<C>(xp[i0 * g.xs[2] + i1 * g.xs[3] + i2 * g.xs[4]]);
        bool take = bi < 0 || v > best;  // the first valid position, then strictly greater
        if constexpr (is_fp_v<T>) take = take || v != v;  // or NaN (as the CPU backend)
        if (take) {
          best = v;
          bi = (i0 * g.I[1] + i1) * g.I[2] + i2;
        }
      }
    });
    const int64_t vo = q.n * g.os[0] + q.c * g.os[1] + q.b[0] * g.os[2] + q.b[1] * g.os[3] + q.b[2] * g.os[4];
    const int64_t io = q.n * is_[0] + q.c * is_[1] + q.b[0] * is_[2] + q.b[1] * is_[3] + q.b[2] * is_[4];
    if (bi < 0) {
      if constexpr (is_fp_v<T>) best = -(C)INFINITY;
      else best = std::numeric_limits<C>::lowest();
    }
    values[vo] = cvt<T>(best);
    indices[io] = bi < 0 ? 0 : bi;
  }
}

void k_im2col(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Im2colArgs<MAXD> args = parse_im2col<MAXD>(a, n, kw);
  const Tensor &out = args.out, &x = args.x;
  const int nd = args.nd;
  const double value = args.value;
  G3 g;
  static_cast<ConvGeom&>(g) = args.g;
  strides5(x, nd, g.xs);
  g.os[0] = out.stride[0], g.os[1] = out.stride[1];
  strides3(out, 2, nd, g.ok);
  strides3(out, 2 + nd, nd, g.ob);
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
EMBER_KERNEL("im2col", k_im2col);

void k_col2im(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Col2imArgs<MAXD> args = parse_col2im<MAXD>(a, n, kw);
  const Tensor &out = args.out, &cols = args.cols;
  const int nd = args.nd;
  G3 g;
  static_cast<ConvGeom&>(g) = args.g;
  strides5(out, nd, g.os);
  g.xs[0] = cols.stride[0], g.xs[1] = cols.stride[1];
  strides3(cols, 2, nd, g.ok);
  strides3(cols, 2 + nd, nd, g.ob);
  if (out.numel == 0) return;
  dispatch<M_NUM>(out.dtype, "col2im", [&](auto tag) {
    using T = EMBER_T(tag);
    col2im_kernel<T><<<grid_for(out.numel), kThreads, 0, current_stream(out.device)>>>(out.numel, g,
                                                                                     (const T*)cols.data, (T*)out.data);
    check_launch("col2im");
  });
}
EMBER_KERNEL("col2im", k_col2im);

void k_max_pool(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const MaxPoolArgs<MAXD> args = parse_max_pool<MAXD>(a, n, kw);
  const Tensor &values = args.values, &indices = args.indices, &x = args.x;
  const int nd = args.nd;
  G3 g;
  static_cast<ConvGeom&>(g) = args.g;
  strides5(x, nd, g.xs);
  strides5(values, nd, g.os);
  if (values.numel == 0) return;
  Strides5 is;
  strides5(indices, nd, is.s);
  dispatch<M_NUM>(x.dtype, "max_pool", [&](auto tag) {
    using T = EMBER_T(tag);
    max_pool_kernel<T><<<grid_for(values.numel), kThreads, 0, current_stream(x.device)>>>(
        values.numel, g, (const T*)x.data, (T*)values.data, (int64_t*)indices.data, is);
    check_launch("max_pool");
  });
}
EMBER_KERNEL("max_pool", k_max_pool);

}  // namespace

}  // namespace ember
