// Convolution and pooling building blocks: im2col, col2im (its adjoint) and max pooling with
// indices; their arguments and geometry (1 to 3 spatial dims, padded to 3) are ember's shared
// calling convention (<ember/ops.h>).
#include <cmath>
#include <cstring>
#include <limits>

#include <ember/ops.h>

#include "ember.h"

namespace ember {

namespace {

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
  const Im2colArgs<MAXD> args = parse_im2col<MAXD>(a, n, kw);
  const Tensor &out = args.out, &x = args.x;
  const int nd = args.nd;
  const ConvGeom& g = args.g;
  const double value = args.value;
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
        const ConvPos q = conv_pos<true, false>(g, r);  // row r: the width is walked below
        T* o = po + q.n * on + q.c * oc + q.k[0] * ok[0] + q.k[1] * ok[1] + q.k[2] * ok[2] + q.b[0] * ob[0] +
               q.b[1] * ob[1];
        const int64_t i0 = conv_in(g, 0, q.b[0], q.k[0]), i1 = conv_in(g, 1, q.b[1], q.k[1]);
        int64_t lo = 0, hi = 0;
        const int64_t off = conv_in(g, 2, 0, q.k[2]);  // the input column of block 0
        if (i0 >= 0 && i0 < g.I[0] && i1 >= 0 && i1 < g.I[1]) valid_range(off, SW, g.I[2], W, lo, hi);
        for (int64_t b = 0; b < lo; ++b) o[b * ow] = fill;
        if (hi > lo) {
          const T* xr = px + q.n * xn + q.c * xc + i0 * xs[0] + i1 * xs[1] + off * xw;
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
EMBER_KERNEL("im2col", k_im2col);

void k_col2im(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const Col2imArgs<MAXD> args = parse_col2im<MAXD>(a, n, kw);
  const Tensor &out = args.out, &cols = args.cols;
  const int nd = args.nd;
  const ConvGeom& g = args.g;
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
EMBER_KERNEL("col2im", k_col2im);

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
  const MaxPoolArgs<MAXD> args = parse_max_pool<MAXD>(a, n, kw);
  const Tensor &values = args.values, &indices = args.indices, &x = args.x;
  const int nd = args.nd;
  const ConvGeom& g = args.g;
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
        const ConvPos q = conv_pos<false, false>(g, r);  // row r: the width is walked below
        const T* xp = (const T*)x.data + q.n * x.stride[0] + q.c * x.stride[1];
        T* vp = (T*)values.data + q.n * values.stride[0] + q.c * values.stride[1] + q.b[0] * vs[0] + q.b[1] * vs[1];
        int64_t* ip =
            (int64_t*)indices.data + q.n * indices.stride[0] + q.c * indices.stride[1] + q.b[0] * is[0] + q.b[1] * is[1];
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
          for_window_rows(g, q.b[0], q.b[1], [&](int64_t i0, int64_t i1) {
            const T* xr = xp + i0 * xs[0] + i1 * xs[1];
            const int64_t flat = (i0 * g.I[1] + i1) * g.I[2];
            for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
              const int64_t off = conv_in(g, 2, c0, k2);  // the input column of output c0
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
          });
          for (int64_t j = 0; j < cn; ++j) {
            vp[(c0 + j) * vs[2]] = best[j];
            ip[(c0 + j) * is[2]] = bi[j] < 0 ? 0 : bi[j];
          }
        }
      }
    });
  });
}
EMBER_KERNEL("max_pool", k_max_pool);

}  // namespace

}  // namespace ember
