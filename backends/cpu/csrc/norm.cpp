// Batch normalisation in training mode, forward and backward, one channel per task (its
// N x L values stay in cache across the passes):
//   batch_norm_train           out = (x - mean) * invstd * w + b with the channel's mean
//                              and biased variance (sums in double), which it returns too
//   batch_norm_train_backward  d_x = w invstd (g - mean(g) - xhat mean(g xhat)),
//                              d_w = sum(g xhat), d_b = sum(g), xhat = (x - mean) invstd
//   batch_norm_inference       out = x * scale + shift per channel with the running
//                              statistics: scale = w / sqrt(var + eps), shift = b - mean scale
// and layer normalisation's forward (one row per task: its mean and biased variance in
// double, then (x - mean) * rstd * w + b).
// Inputs are (N, C, *); the kernels work on contiguous (N, C, L) float or double copies
// where the tensors are not already contiguous of that type (work.h).
#include <cmath>
#include <limits>
#include <memory>

#include "ember.h"
#include "work.h"

namespace ember {

namespace {

struct NCL {
  int64_t N, C, L;
  int64_t at(int64_t n, int64_t c) const { return (n * C + c) * L; }  // the start of a run
};

NCL ncl_of(const char* op, const Tensor& x) {
  if (x.ndim < 2) raise(PyExc_ValueError, "%s(): expected input (N, C, *), got %s", op, shape_str(x).c_str());
  NCL g{x.shape[0], x.shape[1], 1};
  for (int d = 2; d < x.ndim; ++d) g.L *= x.shape[d];
  return g;
}

// out must have the input's rank and element count
void check_out_like(const char* op, const Tensor& out, const Tensor& x) {
  if (out.ndim != x.ndim || out.numel != x.numel)
    raise(PyExc_ValueError, "%s(): out %s does not match the input %s", op, shape_str(out).c_str(), shape_str(x).c_str());
}

void check_channels(const char* op, const Tensor& t, int64_t C, const char* what) {
  if (t.ndim != 1 || t.shape[0] != C)
    raise(PyExc_ValueError, "%s(): %s must be (%lld,), got %s", op, what, (long long)C, shape_str(t).c_str());
}

// the mean and the sum of squared deviations of channel c, in double
template <class W>
void channel_moments(const NCL& g, const W* x, int64_t c, double& mean, double& ssd) {
  double s = 0;
  for (int64_t n = 0; n < g.N; ++n) {
    const W* p = x + g.at(n, c);
    if constexpr (std::is_same_v<W, float>) s += row_sum(p, g.L);
    else for (int64_t l = 0; l < g.L; ++l) s += p[l];
  }
  mean = s / (double)(g.N * g.L);
  double q = 0;
  const W m = (W)mean;
  for (int64_t n = 0; n < g.N; ++n) {
    const W* p = x + g.at(n, c);
    W acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t l = 0;
    for (; l + 8 <= g.L; l += 8)
      for (int j = 0; j < 8; ++j) {
        const W d = p[l + j] - m;
        acc[j] += d * d;
      }
    double r = 0;
    for (int j = 0; j < 8; ++j) r += acc[j];
    for (; l < g.L; ++l) {
      const double d = (double)p[l] - mean;
      r += d * d;
    }
    q += r;
  }
  // the deviations were taken from the rounded mean: correct by the rounding's share
  const double e = (double)m - mean;
  ssd = std::max(0.0, q - (double)(g.N * g.L) * e * e);
}

int64_t channel_grain(const NCL& g) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, 4 * g.N * g.L)); }

void k_batch_norm_train(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* op = "batch_norm_train";
  Args args(op, a, n, kw, {"out", "mean", "var", "input", "weight", "bias", "eps"}, 7);
  const Tensor out = args.out(0), mean = args.out(1), var = args.out(2), x = args.tensor(3);
  const bool hw = args.has(4), hb = args.has(5);
  const Tensor w = hw ? args.tensor(4) : Tensor(), b = hb ? args.tensor(5) : Tensor();
  const double eps = args.get_double(6);
  const NCL g = ncl_of(op, x);
  check_same_dtype(op, out, x);
  check_out_like(op, out, x);
  if (hw) { check_same_dtype(op, x, w); check_channels(op, w, g.C, "weight"); }
  if (hb) { check_same_dtype(op, x, b); check_channels(op, b, g.C, "bias"); }
  check_channels(op, mean, g.C, "mean");
  check_channels(op, var, g.C, "var");
  if (g.C == 0) return;
  NoGil nogil(x.numel >= kGilThreshold);
  working_dispatch(op, x.dtype, [&](auto w0) {
    using W = decltype(w0);
    Work<W> px(x, true), po(out, false), pm(mean, false), pv(var, false);
    std::unique_ptr<Work<W>> pw, pb;
    if (hw) pw.reset(new Work<W>(w, true));
    if (hb) pb.reset(new Work<W>(b, true));
    const int64_t M = g.N * g.L;
    parallel_for(0, g.C, channel_grain(g), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        if (M == 0) {  // PyTorch: NaN statistics, nothing to normalise
          pm.p[c] = pv.p[c] = std::numeric_limits<W>::quiet_NaN();
          continue;
        }
        double mu, ssd;
        channel_moments(g, px.p, c, mu, ssd);
        const double v = ssd / (double)M;
        pm.p[c] = (W)mu;
        pv.p[c] = (W)v;
        const W scale = (W)((hw ? (double)pw->p[c] : 1.0) / std::sqrt(v + eps));
        const W shift = hb ? pb->p[c] : W(0), m = (W)mu;
        for (int64_t nn = 0; nn < g.N; ++nn) {
          const W* xp = px.p + g.at(nn, c);
          W* op_ = po.p + g.at(nn, c);
          for (int64_t l = 0; l < g.L; ++l) op_[l] = (xp[l] - m) * scale + shift;
        }
      }
    });
    po.store();
    pm.store();
    pv.store();
  });
}
EMBER_KERNEL("batch_norm_train", k_batch_norm_train);

void k_batch_norm_train_backward(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* op = "batch_norm_train_backward";
  Args args(op, a, n, kw, {"d_input", "d_weight", "d_bias", "grad", "input", "weight", "mean", "var", "eps"}, 9);
  const Tensor dx = args.out(0), dw = args.out(1), db = args.out(2), gr = args.tensor(3), x = args.tensor(4);
  const bool hw = args.has(5);
  const Tensor w = hw ? args.tensor(5) : Tensor(), mean = args.tensor(6), var = args.tensor(7);
  const double eps = args.get_double(8);
  const NCL g = ncl_of(op, x);
  for (const Tensor* t : {&dx, &dw, &db, &gr}) check_same_dtype(op, x, *t);
  if (gr.ndim != x.ndim || gr.numel != x.numel || dx.ndim != x.ndim || dx.numel != x.numel)
    raise(PyExc_ValueError, "%s(): grad %s and d_input %s must match the input %s", op, shape_str(gr).c_str(),
          shape_str(dx).c_str(), shape_str(x).c_str());
  if (hw) { check_same_dtype(op, x, w); check_channels(op, w, g.C, "weight"); }
  for (const Tensor* t : {&dw, &db, &mean, &var}) check_channels(op, *t, g.C, "a statistic or gradient");
  if (mean.dtype != var.dtype) raise(PyExc_TypeError, "%s(): mean and var must have one dtype", op);
  if (g.C == 0) return;
  NoGil nogil(x.numel >= kGilThreshold);
  working_dispatch(op, x.dtype, [&](auto w0) {
    using W = decltype(w0);
    Work<W> px(x, true), pg(gr, true), pdx(dx, false), pdw(dw, false), pdb(db, false), pm(mean, true),
        pv(var, true);
    std::unique_ptr<Work<W>> pw;
    if (hw) pw.reset(new Work<W>(w, true));
    const int64_t M = g.N * g.L;
    parallel_for(0, g.C, channel_grain(g), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const W m = pm.p[c];
        const double invstd = 1.0 / std::sqrt((double)pv.p[c] + eps);
        double sg = 0, sgx = 0;  // sum(g), sum(g (x - mean))
        for (int64_t nn = 0; nn < g.N; ++nn) {
          const W* xp = px.p + g.at(nn, c);
          const W* gp = pg.p + g.at(nn, c);
          W a1[8] = {0, 0, 0, 0, 0, 0, 0, 0}, a2[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          int64_t l = 0;
          for (; l + 8 <= g.L; l += 8)
            for (int j = 0; j < 8; ++j) {
              a1[j] += gp[l + j];
              a2[j] += gp[l + j] * (xp[l + j] - m);
            }
          double r1 = 0, r2 = 0;
          for (int j = 0; j < 8; ++j) { r1 += a1[j]; r2 += a2[j]; }
          for (; l < g.L; ++l) { r1 += gp[l]; r2 += (double)gp[l] * ((double)xp[l] - (double)m); }
          sg += r1;
          sgx += r2;
        }
        pdb.p[c] = (W)sg;
        pdw.p[c] = (W)(sgx * invstd);
        if (M == 0) continue;
        const double wc = hw ? (double)pw->p[c] : 1.0;
        // d_x = k (g - sg / M) - k2 (x - mean), k = w invstd, k2 = w invstd^3 sgx / M
        const W k = (W)(wc * invstd), k2 = (W)(wc * invstd * invstd * invstd * sgx / (double)M);
        const W gm = (W)(sg / (double)M);
        for (int64_t nn = 0; nn < g.N; ++nn) {
          const W* xp = px.p + g.at(nn, c);
          const W* gp = pg.p + g.at(nn, c);
          W* dp = pdx.p + g.at(nn, c);
          for (int64_t l = 0; l < g.L; ++l) dp[l] = k * (gp[l] - gm) - k2 * (xp[l] - m);
        }
      }
    });
    pdx.store();
    pdw.store();
    pdb.store();
  });
}
EMBER_KERNEL("batch_norm_train_backward", k_batch_norm_train_backward);

// The number of elements of normalized_shape (argument i), checked against x's trailing dims.
int64_t normalized_size(const char* op, const Args& args, int i, const Tensor& x) {
  PyObject* ns = PySequence_Fast(args.v[i], "normalized_shape must be a sequence of ints");
  if (!ns) throw PyErrAlreadySet();
  const int nd = (int)PySequence_Fast_GET_SIZE(ns);
  int64_t D = 1;
  bool ok = nd <= x.ndim;
  for (int k = 0; ok && k < nd; ++k) {
    const int64_t s = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(ns, k));
    ok = s == x.shape[x.ndim - nd + k];
    D *= s;
  }
  Py_DECREF(ns);
  if (PyErr_Occurred()) throw PyErrAlreadySet();
  if (!ok) raise(PyExc_ValueError, "%s(): normalized_shape does not match the trailing dims of %s", op, shape_str(x).c_str());
  return D;
}

// A row's mean and 1 / sqrt(biased variance + eps), as layer_norm's forward computes them.
template <class W>
void row_stats(const W* xr, int64_t D, double eps, W& m, W& rstd) {
  m = (W)(row_sum(xr, D) / (double)D);
  const W mm = m;
  const double ssd = row_sum_of(xr, D, [mm](W v) { return (v - mm) * (v - mm); });
  rstd = (W)(1.0 / std::sqrt(ssd / (double)D + eps));
}

// Batch norm with running statistics: the statistics folded into a scale and shift per
// channel (computed in the working type), then one (n, c) plane per task.
void k_batch_norm_inference(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* op = "batch_norm_inference";
  Args args(op, a, n, kw, {"out", "input", "weight", "bias", "running_mean", "running_var", "eps"}, 7);
  const Tensor out = args.out(0), x = args.tensor(1), mean = args.tensor(4), var = args.tensor(5);
  const bool hw = args.has(2), hb = args.has(3);
  const Tensor w = hw ? args.tensor(2) : Tensor(), b = hb ? args.tensor(3) : Tensor();
  const double eps = args.get_double(6);
  const NCL g = ncl_of(op, x);
  check_out_like(op, out, x);
  check_channels(op, mean, g.C, "running_mean");
  check_channels(op, var, g.C, "running_var");
  if (hw) check_channels(op, w, g.C, "weight");
  if (hb) check_channels(op, b, g.C, "bias");
  if (x.numel == 0) return;
  NoGil nogil(x.numel >= kGilThreshold);
  working_dispatch(op, out.dtype, [&](auto w0) {
    using W = decltype(w0);
    Work<W> px(x, true), po(out, false), pm(mean, true), pv(var, true);
    std::unique_ptr<Work<W>> pw, pb;
    if (hw) pw.reset(new Work<W>(w, true));
    if (hb) pb.reset(new Work<W>(b, true));
    std::vector<W> scale((size_t)g.C), shift((size_t)g.C);
    for (int64_t c = 0; c < g.C; ++c) {
      W s = W(1) / std::sqrt(pv.p[c] + (W)eps);
      if (hw) s = s * pw->p[c];
      W sh = -(pm.p[c] * s);
      if (hb) sh = sh + pb->p[c];
      scale[(size_t)c] = s;
      shift[(size_t)c] = sh;
    }
    parallel_for(0, g.N * g.C, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.L)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const W s = scale[(size_t)(r % g.C)], sh = shift[(size_t)(r % g.C)];
        const W* xr = px.p + r * g.L;
        W* orow = po.p + r * g.L;
        for (int64_t l = 0; l < g.L; ++l) orow[l] = sh + xr[l] * s;
      }
    });
    po.store();
  });
}
EMBER_KERNEL("batch_norm_inference", k_batch_norm_inference);

void k_layer_norm(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* op = "layer_norm";
  Args args(op, a, n, kw, {"out", "input", "weight", "bias", "normalized_shape", "eps"}, 6);
  const Tensor out = args.out(0), x = args.tensor(1);
  const bool hw = args.has(2), hb = args.has(3);
  const Tensor w = hw ? args.tensor(2) : Tensor(), b = hb ? args.tensor(3) : Tensor();
  const double eps = args.get_double(5);
  const int64_t D = normalized_size(op, args, 4, x);
  check_same_dtype(op, out, x);
  check_out_like(op, out, x);
  for (const Tensor* t : {hw ? &w : nullptr, hb ? &b : nullptr}) {
    if (!t) continue;
    check_same_dtype(op, x, *t);
    if (t->numel != D)
      raise(PyExc_ValueError, "%s(): weight and bias must have normalized_shape's %lld elements, got %s", op,
            (long long)D, shape_str(*t).c_str());
  }
  if (x.numel == 0) return;
  const int64_t R = x.numel / D;
  NoGil nogil(x.numel >= kGilThreshold);
  working_dispatch(op, x.dtype, [&](auto w0) {
    using W = decltype(w0);
    Work<W> px(x, true), po(out, false);
    std::unique_ptr<Work<W>> pw, pb;
    if (hw) pw.reset(new Work<W>(w, true));
    if (hb) pb.reset(new Work<W>(b, true));
    const W* wp = hw ? pw->p : nullptr;
    const W* bp = hb ? pb->p : nullptr;
    parallel_for(0, R, std::max<int64_t>(1, kGrain / (4 * D)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const W* xr = px.p + r * D;
        W* orow = po.p + r * D;
        W m, rstd;
        row_stats(xr, D, eps, m, rstd);
        if (wp && bp) for (int64_t l = 0; l < D; ++l) orow[l] = (xr[l] - m) * rstd * wp[l] + bp[l];
        else if (wp) for (int64_t l = 0; l < D; ++l) orow[l] = (xr[l] - m) * rstd * wp[l];
        else if (bp) for (int64_t l = 0; l < D; ++l) orow[l] = (xr[l] - m) * rstd + bp[l];
        else for (int64_t l = 0; l < D; ++l) orow[l] = (xr[l] - m) * rstd;
      }
    });
    po.store();
  });
}
EMBER_KERNEL("layer_norm", k_layer_norm);

// layer_norm's gradients: per row, d_x = rstd (gw - mean(gw) - xhat mean(gw xhat)) with
// gw = g w and xhat = (x - mean) rstd; then per column (in row order, whatever the thread
// count) d_weight = sum of g xhat and d_bias = sum of g over the rows.
void k_layer_norm_backward(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* op = "layer_norm_backward";
  Args args(op, a, n, kw, {"d_input", "d_weight", "d_bias", "grad", "input", "weight", "normalized_shape", "eps"}, 8);
  const Tensor dx = args.out(0), dw = args.out(1), db = args.out(2), gr = args.tensor(3), x = args.tensor(4);
  const bool hw = args.has(5);
  const Tensor w = hw ? args.tensor(5) : Tensor();
  const double eps = args.get_double(7);
  const int64_t D = normalized_size(op, args, 6, x);
  for (const Tensor* t : {&dx, &dw, &db, &gr, hw ? &w : nullptr})
    if (t) check_same_dtype(op, x, *t);
  if (gr.ndim != x.ndim || gr.numel != x.numel || dx.numel != x.numel || dw.numel != D || db.numel != D ||
      (hw && w.numel != D))
    raise(PyExc_ValueError, "%s(): grad %s, input %s, d_input %s, d_weight %s, d_bias %s do not match", op,
          shape_str(gr).c_str(), shape_str(x).c_str(), shape_str(dx).c_str(), shape_str(dw).c_str(),
          shape_str(db).c_str());
  for (int d = 0; d < x.ndim; ++d)
    if (gr.shape[d] != x.shape[d] || dx.shape[d] != x.shape[d])
      raise(PyExc_ValueError, "%s(): grad %s and d_input %s must have the input's shape %s", op,
            shape_str(gr).c_str(), shape_str(dx).c_str(), shape_str(x).c_str());
  const int64_t R = D ? x.numel / D : 0;
  NoGil nogil(x.numel >= kGilThreshold);
  working_dispatch(op, x.dtype, [&](auto w0) {
    using W = decltype(w0);
    Work<W> px(x, true), pg(gr, true), pdx(dx, false), pdw(dw, false), pdb(db, false);
    std::unique_ptr<Work<W>> pw;
    if (hw) pw.reset(new Work<W>(w, true));
    const W* wp = hw ? pw->p : nullptr;
    std::vector<W> mean((size_t)R), rstd((size_t)R);
    parallel_for(0, R, std::max<int64_t>(1, kGrain / (4 * std::max<int64_t>(D, 1))), [&](int64_t r0, int64_t r1) {
      std::vector<W> gw((size_t)D);
      for (int64_t r = r0; r < r1; ++r) {
        const W* xr = px.p + r * D;
        const W* gp = pg.p + r * D;
        W* dr = pdx.p + r * D;
        W m, rs;
        row_stats(xr, D, eps, m, rs);
        mean[(size_t)r] = m;
        rstd[(size_t)r] = rs;
        double sa = 0, sb = 0;  // sum(gw), sum(gw xhat)
        for (int64_t l = 0; l < D; ++l) {
          const W v = wp ? gp[l] * wp[l] : gp[l];
          gw[(size_t)l] = v;
          sa += (double)v;
          sb += (double)v * (double)((xr[l] - m) * rs);
        }
        const W ma = (W)(sa / (double)D), mb = (W)(sb / (double)D);
        for (int64_t l = 0; l < D; ++l) dr[l] = rs * (gw[(size_t)l] - ma - (xr[l] - m) * rs * mb);
      }
    });
    parallel_for(0, D, std::max<int64_t>(1, kGrain / std::max<int64_t>(R, 1)), [&](int64_t c0, int64_t c1) {
      std::vector<double> sw((size_t)(c1 - c0), 0.0), sbias((size_t)(c1 - c0), 0.0);
      for (int64_t r = 0; r < R; ++r) {
        const W* xr = px.p + r * D;
        const W* gp = pg.p + r * D;
        const W m = mean[(size_t)r], rs = rstd[(size_t)r];
        for (int64_t c = c0; c < c1; ++c) {
          sbias[(size_t)(c - c0)] += (double)gp[c];
          sw[(size_t)(c - c0)] += (double)gp[c] * (double)((xr[c] - m) * rs);
        }
      }
      for (int64_t c = c0; c < c1; ++c) {
        pdw.p[c] = (W)sw[(size_t)(c - c0)];
        pdb.p[c] = (W)sbias[(size_t)(c - c0)];
      }
    });
    pdx.store();
    pdw.store();
    pdb.store();
  });
}
EMBER_KERNEL("layer_norm_backward", k_layer_norm_backward);

}  // namespace

}  // namespace ember
