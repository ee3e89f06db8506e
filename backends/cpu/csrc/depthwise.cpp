// Depthwise convolution (groups == channels, one filter per channel), 1 to 3 spatial dims,
// computed directly: no im2col matrix K times the input's size, no GEMMs of one row. Three
// kernels, each the adjoint pair of the others (the schema's gradient formulas chain them):
//   depthwise_conv         out (N, C, *B) = sum_k w[c, k] x[n, c, b*S - P + k*D]
//   depthwise_conv_input   out (N, C, *I) = the same sum sent back to the input positions
//   depthwise_conv_weight  out (C, 1, *K) = sum over n, b of g[n, c, b] x[n, c, b*S - P + k*D]
// Kernel arguments: (out, a, b, kernel, dilation, padding, stride, sizes), the convention
// of im2col (<ember/ops.h>). Sums run in the compute type (float for half types); the
// weight gradient, a sum over the whole batch, in double.
#include <vector>

#include <ember/ops.h>

#include "ember.h"

namespace ember {

namespace {

struct DwArgs {
  Tensor out, a, b;
  int nd;
  ConvGeom g;
};

// Parse and check; ``geom_of`` is the (N, C, *I) tensor giving the input sizes, ``blocks_of``
// the (N, C, *B) tensor giving the output blocks, ``weight`` the (C, 1, *K) filter.
DwArgs parse(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw, int geom_of,
             int blocks_of, int weight) {
  Args args(op, a, n, kw, {"out", "a", "b", "kernel", "dilation", "padding", "stride", "sizes"}, 8);
  DwArgs r{args.out(0), args.tensor(1), args.tensor(2), 0, {}};
  const Tensor* t[3] = {&r.out, &r.a, &r.b};
  check_same_dtype(op, r.out, r.a);
  check_same_dtype(op, r.out, r.b);
  int64_t sizes[3];
  r.g = detail::read_conv_geom(args, 3, *t[geom_of], r.nd, sizes);
  const int nd = r.nd;
  const Tensor& bl = *t[blocks_of];
  const Tensor& w = *t[weight];
  if (bl.ndim != 2 + nd || bl.shape[0] != r.g.N || bl.shape[1] != r.g.C)
    raise(PyExc_ValueError, "%s(): %s does not match the input %s", op, shape_str(bl).c_str(),
          shape_str(*t[geom_of]).c_str());
  if (w.ndim != 2 + nd || w.shape[0] != r.g.C || w.shape[1] != 1)
    raise(PyExc_ValueError, "%s(): the filter %s must be (C, 1, *kernel) with C = %lld", op,
          shape_str(w).c_str(), (long long)r.g.C);
  for (int i = 0; i < nd; ++i)
    if (w.shape[2 + i] != r.g.K[3 - nd + i])
      raise(PyExc_ValueError, "%s(): the filter %s does not match the kernel size", op,
            shape_str(w).c_str());
  shape3(bl, 2, nd, r.g.B);
  return r;
}

// out (N, C, *B) = depthwise convolution of x (N, C, *I) with w (C, 1, *K)
void k_depthwise_conv(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const DwArgs r = parse("depthwise_conv", a, n, kw, 1, 0, 2);
  const Tensor &out = r.out, &x = r.a, &w = r.b;
  const ConvGeom& g = r.g;
  if (out.numel == 0) return;
  int64_t xs[3], os[3], ws[3];
  strides3(x, 2, r.nd, xs);
  strides3(out, 2, r.nd, os);
  strides3(w, 2, r.nd, ws);
  const int64_t W = g.B[2], rows = g.N * g.C * g.B[0] * g.B[1];
  const int64_t work = W * g.K[0] * g.K[1] * g.K[2];
  NoGil nogil(out.numel * g.K[0] * g.K[1] * g.K[2] >= kGilThreshold);
  dispatch<M_FLOAT>(x.dtype, "depthwise_conv", [&](auto tag) {
    using T = EMBER_T(tag);
    using A = compute_t<T>;
    const T* px = (const T*)x.data;
    const T* pw = (const T*)w.data;
    T* po = (T*)out.data;
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work)), [&](int64_t s, int64_t e) {
      std::vector<A> acc((size_t)W);
      for (int64_t r0 = s; r0 < e; ++r0) {
        int64_t q = r0;
        const int64_t b1 = q % g.B[1]; q /= g.B[1];
        const int64_t b0 = q % g.B[0]; q /= g.B[0];
        const int64_t c = q % g.C, nn = q / g.C;
        std::fill(acc.begin(), acc.end(), A(0));
        const T* xp = px + nn * x.stride[0] + c * x.stride[1];
        const T* wp = pw + c * w.stride[0];
        for (int64_t k0 = 0; k0 < g.K[0]; ++k0) {
          const int64_t i0 = conv_in(g, 0, b0, k0);
          if (i0 < 0 || i0 >= g.I[0]) continue;
          for (int64_t k1 = 0; k1 < g.K[1]; ++k1) {
            const int64_t i1 = conv_in(g, 1, b1, k1);
            if (i1 < 0 || i1 >= g.I[1]) continue;
            for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
              const int64_t off = k2 * g.D[2] - g.P[2];
              int64_t lo, hi;
              valid_range(off, g.S[2], g.I[2], W, lo, hi);
              if (hi <= lo) continue;
              const A wv = (A)wp[k0 * ws[0] + k1 * ws[1] + k2 * ws[2]];
              const T* xr = xp + i0 * xs[0] + i1 * xs[1] + off * xs[2];
              const int64_t step = g.S[2] * xs[2];
              if (step == 1) {
                for (int64_t b = lo; b < hi; ++b) acc[b] += wv * (A)xr[b];
              } else {
                for (int64_t b = lo; b < hi; ++b) acc[b] += wv * (A)xr[b * step];
              }
            }
          }
        }
        T* o = po + nn * out.stride[0] + c * out.stride[1] + b0 * os[0] + b1 * os[1];
        for (int64_t b = 0; b < W; ++b) o[b * os[2]] = cvt<T>(acc[b]);
      }
    });
  });
}
EMBER_KERNEL("depthwise_conv", k_depthwise_conv);

// out (N, C, *I) = the gradient of depthwise_conv's input: grad (N, C, *B), w (C, 1, *K)
void k_depthwise_conv_input(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const DwArgs r = parse("depthwise_conv_input", a, n, kw, 0, 1, 2);
  const Tensor &out = r.out, &gr = r.a, &w = r.b;
  const ConvGeom& g = r.g;
  if (out.numel == 0) return;
  int64_t gs[3], os[3], ws[3];
  strides3(gr, 2, r.nd, gs);
  strides3(out, 2, r.nd, os);
  strides3(w, 2, r.nd, ws);
  const int64_t plane = g.I[0] * g.I[1] * g.I[2], W = g.B[2];
  const int64_t work = g.B[0] * g.B[1] * W * g.K[0] * g.K[1] * g.K[2];
  NoGil nogil(out.numel >= kGilThreshold);
  dispatch<M_FLOAT>(out.dtype, "depthwise_conv_input", [&](auto tag) {
    using T = EMBER_T(tag);
    using A = compute_t<T>;
    const T* pg = (const T*)gr.data;
    const T* pw = (const T*)w.data;
    T* po = (T*)out.data;
    // one task per (n, c) plane, summed in a buffer of the compute type
    parallel_for(0, g.N * g.C, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work)), [&](int64_t s, int64_t e) {
      std::vector<A> buf((size_t)plane);
      for (int64_t p = s; p < e; ++p) {
        const int64_t nn = p / g.C, c = p % g.C;
        std::fill(buf.begin(), buf.end(), A(0));
        const T* gp = pg + nn * gr.stride[0] + c * gr.stride[1];
        const T* wp = pw + c * w.stride[0];
        for (int64_t b0 = 0; b0 < g.B[0]; ++b0)
          for (int64_t k0 = 0; k0 < g.K[0]; ++k0) {
            const int64_t i0 = conv_in(g, 0, b0, k0);
            if (i0 < 0 || i0 >= g.I[0]) continue;
            for (int64_t b1 = 0; b1 < g.B[1]; ++b1)
              for (int64_t k1 = 0; k1 < g.K[1]; ++k1) {
                const int64_t i1 = conv_in(g, 1, b1, k1);
                if (i1 < 0 || i1 >= g.I[1]) continue;
                const T* grow = gp + b0 * gs[0] + b1 * gs[1];
                A* brow = buf.data() + (i0 * g.I[1] + i1) * g.I[2];
                for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
                  const int64_t off = k2 * g.D[2] - g.P[2];
                  int64_t lo, hi;
                  valid_range(off, g.S[2], g.I[2], W, lo, hi);
                  const A wv = (A)wp[k0 * ws[0] + k1 * ws[1] + k2 * ws[2]];
                  for (int64_t b = lo; b < hi; ++b) brow[off + b * g.S[2]] += wv * (A)grow[b * gs[2]];
                }
              }
          }
        T* op = po + nn * out.stride[0] + c * out.stride[1];
        for (int64_t i0 = 0; i0 < g.I[0]; ++i0)
          for (int64_t i1 = 0; i1 < g.I[1]; ++i1) {
            const A* brow = buf.data() + (i0 * g.I[1] + i1) * g.I[2];
            T* orow = op + i0 * os[0] + i1 * os[1];
            for (int64_t i2 = 0; i2 < g.I[2]; ++i2) orow[i2 * os[2]] = cvt<T>(brow[i2]);
          }
      }
    });
  });
}
EMBER_KERNEL("depthwise_conv_input", k_depthwise_conv_input);

// out (C, 1, *K) = the gradient of depthwise_conv's filter: grad (N, C, *B), x (N, C, *I)
void k_depthwise_conv_weight(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const DwArgs r = parse("depthwise_conv_weight", a, n, kw, 2, 1, 0);
  const Tensor &out = r.out, &gr = r.a, &x = r.b;
  const ConvGeom& g = r.g;
  if (out.numel == 0) return;
  int64_t gs[3], xs[3], os[3];
  strides3(gr, 2, r.nd, gs);
  strides3(x, 2, r.nd, xs);
  strides3(out, 2, r.nd, os);
  const int64_t W = g.B[2], Kn = g.K[0] * g.K[1] * g.K[2];
  const int64_t work = g.N * g.B[0] * g.B[1] * W * Kn;
  NoGil nogil(work >= kGilThreshold);
  dispatch<M_FLOAT>(out.dtype, "depthwise_conv_weight", [&](auto tag) {
    using T = EMBER_T(tag);
    using A = compute_t<T>;
    const T* pg = (const T*)gr.data;
    const T* px = (const T*)x.data;
    T* po = (T*)out.data;
    // one task per channel: its K sums over the batch and the output blocks
    parallel_for(0, g.C, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work)), [&](int64_t s, int64_t e) {
      std::vector<double> acc((size_t)Kn);
      for (int64_t c = s; c < e; ++c) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t nn = 0; nn < g.N; ++nn) {
          const T* gp = pg + nn * gr.stride[0] + c * gr.stride[1];
          const T* xp = px + nn * x.stride[0] + c * x.stride[1];
          for (int64_t b0 = 0; b0 < g.B[0]; ++b0)
            for (int64_t k0 = 0; k0 < g.K[0]; ++k0) {
              const int64_t i0 = conv_in(g, 0, b0, k0);
              if (i0 < 0 || i0 >= g.I[0]) continue;
              for (int64_t b1 = 0; b1 < g.B[1]; ++b1)
                for (int64_t k1 = 0; k1 < g.K[1]; ++k1) {
                  const int64_t i1 = conv_in(g, 1, b1, k1);
                  if (i1 < 0 || i1 >= g.I[1]) continue;
                  const T* grow = gp + b0 * gs[0] + b1 * gs[1];
                  const T* xrow = xp + i0 * xs[0] + i1 * xs[1];
                  for (int64_t k2 = 0; k2 < g.K[2]; ++k2) {
                    const int64_t off = k2 * g.D[2] - g.P[2];
                    int64_t lo, hi;
                    valid_range(off, g.S[2], g.I[2], W, lo, hi);
                    A sum = A(0);
                    const T* xr = xrow + off * xs[2];
                    const int64_t step = g.S[2] * xs[2];
                    if (gs[2] == 1 && step == 1) {
                      for (int64_t b = lo; b < hi; ++b) sum += (A)grow[b] * (A)xr[b];
                    } else {
                      for (int64_t b = lo; b < hi; ++b) sum += (A)grow[b * gs[2]] * (A)xr[b * step];
                    }
                    acc[(k0 * g.K[1] + k1) * g.K[2] + k2] += (double)sum;
                  }
                }
            }
        }
        T* op = po + c * out.stride[0];
        for (int64_t k0 = 0; k0 < g.K[0]; ++k0)
          for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
            for (int64_t k2 = 0; k2 < g.K[2]; ++k2)
              op[k0 * os[0] + k1 * os[1] + k2 * os[2]] = cvt<T>(acc[(k0 * g.K[1] + k1) * g.K[2] + k2]);
      }
    });
  });
}
EMBER_KERNEL("depthwise_conv_weight", k_depthwise_conv_weight);

}  // namespace

}  // namespace ember
