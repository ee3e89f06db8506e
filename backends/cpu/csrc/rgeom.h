// Reduction geometry: split x's dims into kept dims (iterated over outputs) and reduced dims.
// Used by reductions, arg-reductions, logsumexp, softmax, cumsum/cumprod and sort.
#pragma once
#include "ember.h"

namespace ember {

struct RGeom {
  int nk = 0, nr = 0;
  int64_t ks[MAXD], kx[MAXD], ko[MAXD];  // kept dims: size, x / out byte strides (innermost first)
  int64_t rs[MAXD], rx[MAXD], ro[MAXD];  // reduced dims: size, x / out byte strides (out: scans only)
  int64_t nout = 1, nred = 1;
  char* xb = nullptr;
  char* ob = nullptr;
};

// `red` marks x's reduced dims.  `out` either has x's rank (size 1 on reduced dims, or the full
// size when same_shape, e.g. softmax/cumsum) or x's rank minus the reduced dims.
// merge_red: coalesce / reorder reduced dims by stride (order-insensitive reductions only).
inline void build_rgeom(RGeom& g, const char* op, const Tensor& out, const Tensor& x, const bool* red,
                        bool merge_red, bool same_shape = false) {
  int64_t ostr[MAXD];  // out strides (elements) aligned to x's dims
  int nred_dims = 0;
  for (int d = 0; d < x.ndim; ++d) nred_dims += red[d] ? 1 : 0;
  if (out.ndim == x.ndim) {
    for (int d = 0; d < x.ndim; ++d) {
      int64_t want = (red[d] && !same_shape) ? 1 : x.shape[d];
      if (out.shape[d] != want)
        raise(PyExc_ValueError, "%s(): output shape %s does not match the input shape %s for the reduced dims", op,
              shape_str(out).c_str(), shape_str(x).c_str());
      ostr[d] = out.stride[d];
    }
  } else if (!same_shape && out.ndim == x.ndim - nred_dims) {
    int j = 0;
    for (int d = 0; d < x.ndim; ++d) {
      if (red[d]) {
        ostr[d] = 0;
      } else {
        if (out.shape[j] != x.shape[d])
          raise(PyExc_ValueError, "%s(): output shape %s does not match the input shape %s", op,
                shape_str(out).c_str(), shape_str(x).c_str());
        ostr[d] = out.stride[j++];
      }
    }
  } else {
    raise(PyExc_ValueError, "%s(): output shape %s does not match the input shape %s", op, shape_str(out).c_str(),
          shape_str(x).c_str());
  }
  g = RGeom();
  g.xb = x.data;
  g.ob = out.data;
  const int64_t xi = x.itemsize, oi = out.itemsize;
  for (int d = x.ndim - 1; d >= 0; --d) {
    const int64_t sz = x.shape[d];
    if (red[d]) {
      g.nred *= sz;
      if (sz == 1) continue;
      g.rs[g.nr] = sz;
      g.rx[g.nr] = x.stride[d] * xi;
      g.ro[g.nr] = ostr[d] * oi;
      ++g.nr;
    } else {
      g.nout *= sz;
      if (sz == 1) continue;
      const int64_t sx = x.stride[d] * xi, so = ostr[d] * oi;
      if (g.nk > 0 && g.kx[g.nk - 1] * g.ks[g.nk - 1] == sx && g.ko[g.nk - 1] * g.ks[g.nk - 1] == so) {
        g.ks[g.nk - 1] *= sz;
      } else {
        g.ks[g.nk] = sz;
        g.kx[g.nk] = sx;
        g.ko[g.nk] = so;
        ++g.nk;
      }
    }
  }
  if (merge_red && g.nr > 1) {
    for (int i = 1; i < g.nr; ++i)
      for (int j = i; j > 0 && g.rx[j] < g.rx[j - 1]; --j) {
        std::swap(g.rs[j], g.rs[j - 1]);
        std::swap(g.rx[j], g.rx[j - 1]);
        std::swap(g.ro[j], g.ro[j - 1]);
      }
    int w = 0;
    for (int i = 1; i < g.nr; ++i) {
      if (g.rx[i] == g.rx[w] * g.rs[w]) {
        g.rs[w] *= g.rs[i];
      } else {
        ++w;
        g.rs[w] = g.rs[i];
        g.rx[w] = g.rx[i];
        g.ro[w] = g.ro[i];
      }
    }
    g.nr = w + 1;
  }
}

// Geometry of a reduction / scan along the one dim `dim` (not merged).
inline void build_rgeom_dim(RGeom& g, const char* op, const Tensor& out, const Tensor& x, int dim,
                            bool same_shape = false) {
  bool red[MAXD] = {false};
  if (x.ndim > 0) red[dim] = true;
  build_rgeom(g, op, out, x, red, false, same_shape);
}

// x / out addresses of index `outer` (row-major) of the kept dims outside the innermost one
inline void outer_offsets(const RGeom& g, int64_t outer, const char*& xp, char*& op) {
  xp = g.xb;
  op = g.ob;
  for (int d = 1; d < g.nk; ++d) {
    int64_t i = outer % g.ks[d];
    outer /= g.ks[d];
    xp += i * g.kx[d];
    op += i * g.ko[d];
  }
}

// f(const char* xp, char* op) for outputs [b, e) in kept-dims order
template <class F>
inline void for_outputs(const RGeom& g, int64_t b, int64_t e, F&& f) {
  int64_t idx[MAXD];
  char* xp = g.xb;
  char* op = g.ob;
  int64_t rem = b;
  for (int d = 0; d < g.nk; ++d) {
    idx[d] = rem % g.ks[d];
    rem /= g.ks[d];
    xp += idx[d] * g.kx[d];
    op += idx[d] * g.ko[d];
  }
  for (int64_t i = b; i < e; ++i) {
    f((const char*)xp, op);
    for (int d = 0; d < g.nk; ++d) {
      xp += g.kx[d];
      op += g.ko[d];
      if (++idx[d] < g.ks[d]) break;
      xp -= g.kx[d] * g.ks[d];
      op -= g.ko[d] * g.ks[d];
      idx[d] = 0;
    }
  }
}

// f(const char* p, int64_t stride_bytes, int64_t n): runs along the innermost reduced dim
template <class F>
inline void for_reduced_runs(const RGeom& g, const char* xp, F&& f) {
  if (g.nr == 0) { f(xp, (int64_t)0, (int64_t)1); return; }
  if (g.nr == 1) { f(xp, g.rx[0], g.rs[0]); return; }
  int64_t idx[MAXD];
  int64_t outer = 1;
  for (int d = 1; d < g.nr; ++d) { idx[d] = 0; outer *= g.rs[d]; }
  for (int64_t i = 0; i < outer; ++i) {
    f(xp, g.rx[0], g.rs[0]);
    for (int d = 1; d < g.nr; ++d) {
      xp += g.rx[d];
      if (++idx[d] < g.rs[d]) break;
      xp -= g.rx[d] * g.rs[d];
      idx[d] = 0;
    }
  }
}

}  // namespace ember
