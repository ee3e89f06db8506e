// Convolution and pooling building blocks: im2col, col2im (its adjoint) and max pooling with
// indices. 1 to 3 spatial dims; shorter geometries are padded to 3 with size-1 leading dims.
//
//   im2col(out, x, kernel, dilation, padding, stride, blocks, value)
//       x (N, C, *sp) -> out (N, C, *kernel, *blocks), any strides of out (the dispatcher
//       passes a permuted view to get the (C*K, N*L) layout one GEMM wants). Positions outside
//       the input (left padding, or the right padding that `blocks` implies) read `value`.
//   col2im(out, cols, kernel, dilation, padding, stride, size)
//       cols (N, C, *kernel, *blocks) summed into out (N, C, *size); positions outside dropped.
//   max_pool(values, indices, x, kernel, dilation, padding, stride, blocks)
//       window maxima (NaN wins, as PyTorch) and flat indices into each input plane.
#include <cmath>
#include <cstring>
#include <limits>

#include "ember.h"

namespace ember {

namespace {

void get_ints(const Args& args, int i, int nd, int64_t* v) {
  PyObject* o = args.v[i];
  if (!o || o == Py_None) raise(PyExc_TypeError, "%s(): argument '%s' is required", args.op, args.names[i]);
  PyObject* seq = PySequence_Fast(o, "expected a sequence of ints");
  if (!seq) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' must be a sequence of ints", args.op, args.names[i]);
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n != nd) {
    Py_DECREF(seq);
    raise(PyExc_ValueError, "%s(): argument '%s' must have %d values (one per spatial dim), got %zd", args.op,
          args.names[i], nd, n);
  }
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, k);
    const long long x = PyLong_AsLongLong(item);
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      Py_DECREF(seq);
      raise(PyExc_TypeError, "%s(): argument '%s' must be a sequence of ints", args.op, args.names[i]);
    }
    v[k] = x;
  }
  Py_DECREF(seq);
}

// Geometry padded to 3 spatial dims (index 0 = depth, 1 = height, 2 = width).
struct Geom {
  int64_t N = 1, C = 1;
  int64_t I[3] = {1, 1, 1}, K[3] = {1, 1, 1}, D[3] = {1, 1, 1}, P[3] = {0, 0, 0}, S[3] = {1, 1, 1},
          B[3] = {1, 1, 1};
};

// Reads kernel/dilation/padding/stride at args[first..first+3] for `nd` spatial dims.
Geom read_geom(const Args& args, int first, int nd) {
  Geom g;
  int64_t k[3], d[3], p[3], s[3];
  get_ints(args, first, nd, k);
  get_ints(args, first + 1, nd, d);
  get_ints(args, first + 2, nd, p);
  get_ints(args, first + 3, nd, s);
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    if (k[i] <= 0 || d[i] <= 0 || s[i] <= 0 || p[i] < 0)
      raise(PyExc_ValueError, "%s(): kernel, dilation and stride must be positive and padding non-negative", args.op);
    g.K[j] = k[i];
    g.D[j] = d[i];
    g.P[j] = p[i];
    g.S[j] = s[i];
  }
  return g;
}

void spatial_dims(const char* op, const Tensor& t, int extra, int& nd) {
  nd = t.ndim - 2 - extra;
  if (nd < 1 || nd > 3)
    raise(PyExc_ValueError, "%s(): expected a tensor with 1 to 3 spatial dims, got %s", op, shape_str(t).c_str());
}

// Strides of an (N, C, *sp) tensor padded to 3 spatial dims.
void strides3(const Tensor& t, int first, int nd, int64_t* st) {
  for (int j = 0; j < 3; ++j) st[j] = 0;
  for (int i = 0; i < nd; ++i) st[3 - nd + i] = t.stride[first + i];
}
void shape3(const Tensor& t, int first, int nd, int64_t* sh) {
  for (int j = 0; j < 3; ++j) sh[j] = 1;
  for (int i = 0; i < nd; ++i) sh[3 - nd + i] = t.shape[first + i];
}

// The output positions b in [0, B) whose input coordinate b * S + off lies in [0, I).
inline void valid_range(int64_t off, int64_t S, int64_t I, int64_t B, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + S - 1) / S;
  hi = I - off <= 0 ? 0 : (I - off + S - 1) / S;
  if (hi > B) hi = B;
  if (lo > hi) lo = hi;
}

template <class T>
T fill_value(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= (double)std::numeric_limits<T>::lowest()) return std::numeric_limits<T>::lowest();
    if (v >= (double)std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
    return (T)v;
  } else {
    return cvt<T>(v);
  }
}

void k_im2col(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("im2col", a, n, kw, {"out", "x", "kernel", "dilation", "padding", "stride", "blocks", "value"}, 7);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_same_dtype("im2col", out, x);
  int nd;
  spatial_dims("im2col", x, 0, nd);
  Geom g = read_geom(args, 2, nd);
  int64_t blocks[3];
  get_ints(args, 6, nd, blocks);
  const double value = args.has(7) ? args.get_double(7) : 0.0;
  if (out.ndim != 2 + 2 * nd || out.shape[0] != x.shape[0] || out.shape[1] != x.shape[1])
    raise(PyExc_ValueError, "im2col(): out %s does not match input %s", shape_str(out).c_str(), shape_str(x).c_str());
  for (int i = 0; i < nd; ++i)
    if (out.shape[2 + i] != g.K[3 - nd + i] || out.shape[2 + nd + i] != blocks[i])
      raise(PyExc_ValueError, "im2col(): out %s must be (N, C, *kernel, *blocks)", shape_str(out).c_str());
  g.N = x.shape[0];
  g.C = x.shape[1];
  shape3(x, 2, nd, g.I);
  for (int i = 0; i < nd; ++i) g.B[3 - nd + i] = blocks[i];
  if (out.numel == 0) return;
  int64_t xs[3], ok[3], ob[3];
  strides3(x, 2, nd, xs);
  strides3(out, 2, nd, ok);
  strides3(out, 2 + nd, nd, ob);
  const int64_t xn = x.stride[0], xc = x.stride[1], on = out.stride[0], oc = out.stride[1];
  const int64_t rows = g.N * g.C * g.K[0] * g.K[1] * g.K[2] * g.B[0] * g.B[1];
  const int64_t W = g.B[2];
  NoGil nogil(out.numel >= kGilThreshold);
  dispatch<M_ALL>(x.dtype, "im2col", [&](auto tag) {
    using T = EMBER_T(tag);
    const T fill = fill_value<T>(value);
    const T* px = (const T*)x.data;
    T* po = (T*)out.data;
    const int64_t ow = ob[2], xw = xs[2], SW = g.S[2];
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, W)), [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        int64_t q = r;
        const int64_t b1 = q % g.B[1]; q /= g.B[1];
        const int64_t b0 = q % g.B[0]; q /= g.B[0];
        const int64_t k2 = q % g.K[2]; q /= g.K[2];
        const int64_t k1 = q % g.K[1]; q /= g.K[1];
        const int64_t k0 = q % g.K[0]; q /= g.K[0];
        const int64_t c = q % g.C;
        const int64_t nn = q / g.C;
        T* o = po + nn * on + c * oc + k0 * ok[0] + k1 * ok[1] + k2 * ok[2] + b0 * ob[0] + b1 * ob[1];
        const int64_t i0 = b0 * g.S[0] - g.P[0] + k0 * g.D[0];
        const int64_t i1 = b1 * g.S[1] - g.P[1] + k1 * g.D[1];
        int64_t lo = 0, hi = 0;
        const int64_t off = k2 * g.D[2] - g.P[2];
        if (i0 >= 0 && i0 < g.I[0] && i1 >= 0 && i1 < g.I[1]) valid_range(off, SW, g.I[2], W, lo, hi);
        for (int64_t b = 0; b < lo; ++b) o[b * ow] = fill;
        if (hi > lo) {
          const T* xr = px + nn * xn + c * xc + i0 * xs[0] + i1 * xs[1] + off * xw;
          const int64_t step = SW * xw;
          if (ow == 1 && step == 1) {
            for (int64_t b = lo; b < hi; ++b) o[b] = xr[b];
          } else {
            for (int64_t b = lo; b < hi; ++b) o[b * ow] = xr[b * step];
          }
        }
        for (int64_t b = hi; b < W; ++b) o[b * ow] = fill;
      }
    });
  });
}

void k_col2im(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("col2im", a, n, kw, {"out", "cols", "kernel", "dilation", "padding", "stride", "size"}, 7);
  Tensor out = args.out(0);
  Tensor cols = args.tensor(1);
  check_same_dtype("col2im", out, cols);
  int nd;
  spatial_dims("col2im", out, 0, nd);
  Geom g = read_geom(args, 2, nd);
  int64_t size[3];
  get_ints(args, 6, nd, size);
  if (cols.ndim != 2 + 2 * nd || cols.shape[0] != out.shape[0] || cols.shape[1] != out.shape[1])
    raise(PyExc_ValueError, "col2im(): cols %s must be (N, C, *kernel, *blocks) for out %s", shape_str(cols).c_str(),
          shape_str(out).c_str());
  for (int i = 0; i < nd; ++i)
    if (cols.shape[2 + i] != g.K[3 - nd + i] || out.shape[2 + i] != size[i])
      raise(PyExc_ValueError, "col2im(): cols %s / out %s do not match the kernel and size", shape_str(cols).c_str(),
            shape_str(out).c_str());
  g.N = out.shape[0];
  g.C = out.shape[1];
  shape3(out, 2, nd, g.I);
  shape3(cols, 2 + nd, nd, g.B);
  if (out.numel == 0) return;
  int64_t os[3], ck[3], cb[3];
  strides3(out, 2, nd, os);
  strides3(cols, 2, nd, ck);
  strides3(cols, 2 + nd, nd, cb);
  const int64_t on = out.stride[0], oc = out.stride[1], cn = cols.stride[0], cc = cols.stride[1];
  const int64_t plane = g.I[0] * g.I[1] * g.I[2];
  NoGil nogil(out.numel >= kGilThreshold);
  dispatch<M_NUM>(out.dtype, "col2im", [&](auto tag) {
    using T = EMBER_T(tag);
    T* po = (T*)out.data;
    const T* pc = (const T*)cols.data;
    const int64_t W = g.B[2], cw = cb[2], SW = g.S[2], ow = os[2];
    // one task per (n, c) plane: each plane is written by one thread only
    parallel_for(0, g.N * g.C, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, plane * 4)), [&](int64_t s, int64_t e) {
      for (int64_t p = s; p < e; ++p) {
        const int64_t nn = p / g.C, c = p % g.C;
        T* op = po + nn * on + c * oc;
        for (int64_t i0 = 0; i0 < g.I[0]; ++i0)
          for (int64_t i1 = 0; i1 < g.I[1]; ++i1) {
            T* row = op + i0 * os[0] + i1 * os[1];
            for (int64_t i2 = 0; i2 < g.I[2]; ++i2) row[i2 * ow] = T(0);
          }
        const T* cp = pc + nn * cn + c * cc;
        for (int64_t k0 = 0; k0 < g.K[0]; ++k0)
          for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
            for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
              const int64_t off = k2 * g.D[2] - g.P[2];
              int64_t lo, hi;
              valid_range(off, SW, g.I[2], W, lo, hi);
              if (hi <= lo) continue;
              for (int64_t b0 = 0; b0 < g.B[0]; ++b0) {
                const int64_t i0 = b0 * g.S[0] - g.P[0] + k0 * g.D[0];
                if (i0 < 0 || i0 >= g.I[0]) continue;
                for (int64_t b1 = 0; b1 < g.B[1]; ++b1) {
                  const int64_t i1 = b1 * g.S[1] - g.P[1] + k1 * g.D[1];
                  if (i1 < 0 || i1 >= g.I[1]) continue;
                  const T* src = cp + k0 * ck[0] + k1 * ck[1] + k2 * ck[2] + b0 * cb[0] + b1 * cb[1];
                  T* dst = op + i0 * os[0] + i1 * os[1] + off * ow;
                  const int64_t step = SW * ow;
                  if (cw == 1 && step == 1) {
                    for (int64_t b = lo; b < hi; ++b) dst[b] = add_elem(dst[b], src[b]);
                  } else {
                    for (int64_t b = lo; b < hi; ++b) dst[b * step] = add_elem(dst[b * step], src[b * cw]);
                  }
                }
              }
            }
      }
    });
  });
}

template <class T>
inline bool nan_or_greater(T v, T best) {
  if constexpr (is_fp_v<T>) {
    const auto fv = static_cast<compute_t<T>>(v);
    return (fv > static_cast<compute_t<T>>(best)) | (fv != fv);
  } else {
    return v > best;
  }
}

void k_max_pool(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("max_pool", a, n, kw, {"values", "indices", "x", "kernel", "dilation", "padding", "stride", "blocks"}, 8);
  Tensor values = args.out(0);
  Tensor indices = args.out(1);
  Tensor x = args.tensor(2);
  check_same_dtype("max_pool", values, x);
  check_dtype("max_pool", indices, kInt64, "indices");
  check_same_shape("max_pool", values, indices);
  int nd;
  spatial_dims("max_pool", x, 0, nd);
  Geom g = read_geom(args, 3, nd);
  int64_t blocks[3];
  get_ints(args, 7, nd, blocks);
  if (values.ndim != 2 + nd || values.shape[0] != x.shape[0] || values.shape[1] != x.shape[1])
    raise(PyExc_ValueError, "max_pool(): values %s do not match input %s", shape_str(values).c_str(),
          shape_str(x).c_str());
  for (int i = 0; i < nd; ++i)
    if (values.shape[2 + i] != blocks[i])
      raise(PyExc_ValueError, "max_pool(): values %s must be (N, C, *blocks)", shape_str(values).c_str());
  g.N = x.shape[0];
  g.C = x.shape[1];
  shape3(x, 2, nd, g.I);
  shape3(values, 2, nd, g.B);
  if (values.numel == 0) return;
  int64_t xs[3], vs[3], is[3];
  strides3(x, 2, nd, xs);
  strides3(values, 2, nd, vs);
  strides3(indices, 2, nd, is);
  const int64_t rows = g.N * g.C * g.B[0] * g.B[1];
  const int64_t W = g.B[2];
  NoGil nogil(values.numel >= kGilThreshold);
  dispatch<M_NUM>(x.dtype, "max_pool", [&](auto tag) {
    using T = EMBER_T(tag);
    T lowest;
    if constexpr (is_fp_v<T>) lowest = cvt<T>(-std::numeric_limits<double>::infinity());
    else lowest = std::numeric_limits<T>::lowest();
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, W * g.K[0] * g.K[1] * g.K[2])),
                 [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        int64_t q = r;
        const int64_t b1 = q % g.B[1]; q /= g.B[1];
        const int64_t b0 = q % g.B[0]; q /= g.B[0];
        const int64_t c = q % g.C;
        const int64_t nn = q / g.C;
        const T* xp = (const T*)x.data + nn * x.stride[0] + c * x.stride[1];
        T* vp = (T*)values.data + nn * values.stride[0] + c * values.stride[1] + b0 * vs[0] + b1 * vs[1];
        int64_t* ip = (int64_t*)indices.data + nn * indices.stride[0] + c * indices.stride[1] + b0 * is[0] + b1 * is[1];
        const int64_t s0 = b0 * g.S[0] - g.P[0], s1 = b1 * g.S[1] - g.P[1];
        // outputs of the row in chunks; the window loop is outside the output loop so each
        // output's running max is independent of its neighbours' (no serial dependency chain)
        constexpr int64_t kChunk = 256;
        T best[kChunk];
        int64_t bi[kChunk];
        for (int64_t c0 = 0; c0 < W; c0 += kChunk) {
          const int64_t cn = std::min(kChunk, W - c0);
          for (int64_t j = 0; j < cn; ++j) {
            best[j] = lowest;
            bi[j] = -1;
          }
          for (int64_t k0 = 0; k0 < g.K[0]; ++k0) {
            const int64_t i0 = s0 + k0 * g.D[0];
            if (i0 < 0 || i0 >= g.I[0]) continue;
            for (int64_t k1 = 0; k1 < g.K[1]; ++k1) {
              const int64_t i1 = s1 + k1 * g.D[1];
              if (i1 < 0 || i1 >= g.I[1]) continue;
              const T* xr = xp + i0 * xs[0] + i1 * xs[1];
              const int64_t flat = (i0 * g.I[1] + i1) * g.I[2];
              for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
                const int64_t off = k2 * g.D[2] - g.P[2] + c0 * g.S[2];
                int64_t lo, hi;
                valid_range(off, g.S[2], g.I[2], cn, lo, hi);
                for (int64_t j = lo; j < hi; ++j) {
                  const int64_t i2 = j * g.S[2] + off;
                  const T v = xr[i2 * xs[2]];
                  // PyTorch: the first valid position is the default index; then strictly
                  // greater (or NaN) wins. Selects, not branches (unpredictable on real data).
                  const bool take = nan_or_greater(v, best[j]) | (bi[j] < 0);
                  best[j] = select_bits(take, v, best[j]);
                  bi[j] = select_bits(take, flat + i2, bi[j]);
                }
              }
            }
          }
          for (int64_t j = 0; j < cn; ++j) {
            vp[(c0 + j) * vs[2]] = best[j];
            ip[(c0 + j) * is[2]] = bi[j] < 0 ? 0 : bi[j];
          }
        }
      }
    });
  });
}

}  // namespace

void register_conv(std::vector<PyMethodDef>& defs) {
  defs.push_back(EMBER_DEF("im2col", k_im2col));
  defs.push_back(EMBER_DEF("col2im", k_col2im));
  defs.push_back(EMBER_DEF("max_pool", k_max_pool));
}

}  // namespace ember
