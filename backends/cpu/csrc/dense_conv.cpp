// Dense (grouped) convolution, 1 to 3 spatial dims, as im2col + GEMM per chunk of samples:
// the column matrix of a chunk stays in cache instead of one matrix of the whole batch, and
// the GEMMs write the NCHW output directly. A 1x1 convolution with unit stride and no
// padding multiplies the input itself. Three kernels, each the adjoint pair of the others:
//   dense_conv         out (N, O, *B) = W (O, C/G * K) @ cols, per group
//   dense_conv_input   out (N, C, *I) = col2im(W^T @ grad), per group
//   dense_conv_weight  out (O, C/G, *K) = sum over samples of grad @ cols^T, per group
// Kernel arguments: (out, a, b, kernel, dilation, padding, stride, sizes, groups), the
// convention of depthwise_conv. Computed in float (float16/bfloat16 widened) or double.
#include <cstring>
#include <vector>

#include <ember/ops.h>

#include "blas.h"
#include "ember.h"
#include "onednn.h"
#include "work.h"

namespace ember {

namespace {

struct Dense {
  ConvGeom g;
  int nd;
  int64_t G, Cg, O, Og, Kn, L, In, CgK;
  int64_t nb;  // samples per chunk
  bool pointwise;  // 1x1 kernel, unit stride, no padding: the input is its own column matrix
};

Dense parse_dense(const char* op, Args& args, const Tensor& geom_t, const Tensor& blocks_t, const Tensor& w,
                  int64_t O, int64_t item) {
  Dense d;
  int64_t sizes[3];
  d.g = detail::read_conv_geom(args, 3, geom_t, d.nd, sizes);
  d.G = args.get_int(8);
  const ConvGeom& g = d.g;
  if (d.G <= 0 || g.C % d.G != 0 || O % d.G != 0)
    raise(PyExc_ValueError, "%s(): groups=%lld must divide the %lld input and %lld output channels", op,
          (long long)d.G, (long long)g.C, (long long)O);
  d.Cg = g.C / d.G;
  d.O = O;
  d.Og = O / d.G;
  if (blocks_t.ndim != 2 + d.nd || blocks_t.shape[0] != g.N || blocks_t.shape[1] != O)
    raise(PyExc_ValueError, "%s(): %s does not match the input %s", op, shape_str(blocks_t).c_str(),
          shape_str(geom_t).c_str());
  if (w.ndim != 2 + d.nd || w.shape[0] != O || w.shape[1] != d.Cg)
    raise(PyExc_ValueError, "%s(): the filter %s must be (%lld, %lld, *kernel)", op, shape_str(w).c_str(),
          (long long)O, (long long)d.Cg);
  for (int i = 0; i < d.nd; ++i)
    if (w.shape[2 + i] != g.K[3 - d.nd + i])
      raise(PyExc_ValueError, "%s(): the filter %s does not match the kernel size", op, shape_str(w).c_str());
  shape3(blocks_t, 2, d.nd, d.g.B);
  d.Kn = g.K[0] * g.K[1] * g.K[2];
  d.L = d.g.B[0] * d.g.B[1] * d.g.B[2];
  d.In = g.I[0] * g.I[1] * g.I[2];
  d.CgK = d.Cg * d.Kn;
  d.pointwise = d.Kn == 1 && d.L == d.In;
  for (int i = 0; i < 3; ++i) d.pointwise = d.pointwise && g.S[i] == 1 && g.P[i] == 0;
  // chunks of at least 256 GEMM columns, their column matrix at most 4 MB
  int64_t nb = std::max<int64_t>(1, (256 + d.L - 1) / std::max<int64_t>(1, d.L));
  const int64_t cap = std::max<int64_t>(1, (int64_t(4) << 20) / std::max<int64_t>(1, d.CgK * d.L * item));
  d.nb = std::max<int64_t>(1, std::min({nb, cap, g.N}));
  return d;
}

// cols (CgK, nb * L) of samples [n0, n0 + nb) and group gi of x (N, C, In), zero outside
template <class W>
void im2col_chunk(const Dense& d, const W* x, int64_t n0, int64_t nb, int64_t gi, W* cols) {
  const ConvGeom& g = d.g;
  const int64_t ld = nb * d.L;
  parallel_for(0, d.CgK, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, ld)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r / d.Kn, k = r % d.Kn;
      const int64_t k2 = k % g.K[2], k1 = k / g.K[2] % g.K[1], k0 = k / (g.K[2] * g.K[1]);
      const int64_t off2 = k2 * g.D[2] - g.P[2];
      int64_t lo, hi;
      valid_range(off2, g.S[2], g.I[2], g.B[2], lo, hi);
      for (int64_t j = 0; j < nb; ++j) {
        const W* xp = x + ((n0 + j) * g.C + gi * d.Cg + c) * d.In;
        W* dst = cols + r * ld + j * d.L;
        for (int64_t b0 = 0; b0 < g.B[0]; ++b0) {
          const int64_t i0 = conv_in(g, 0, b0, k0);
          for (int64_t b1 = 0; b1 < g.B[1]; ++b1, dst += g.B[2]) {
            const int64_t i1 = conv_in(g, 1, b1, k1);
            if (i0 < 0 || i0 >= g.I[0] || i1 < 0 || i1 >= g.I[1]) {
              std::fill(dst, dst + g.B[2], W(0));
              continue;
            }
            const W* row = xp + (i0 * g.I[1] + i1) * g.I[2] + off2;
            std::fill(dst, dst + lo, W(0));
            if (g.S[2] == 1) std::memcpy(dst + lo, row + lo, sizeof(W) * (hi - lo));
            else for (int64_t b = lo; b < hi; ++b) dst[b] = row[b * g.S[2]];
            std::fill(dst + hi, dst + g.B[2], W(0));
          }
        }
      }
    }
  });
}

// dx (N, C, In) += col2im of cols (CgK, nb * L) for samples [n0, n0 + nb), group gi
template <class W>
void col2im_chunk(const Dense& d, const W* cols, int64_t n0, int64_t nb, int64_t gi, W* dx) {
  const ConvGeom& g = d.g;
  const int64_t ld = nb * d.L;
  // one task per channel: only its K rows write its plane
  parallel_for(0, d.Cg, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, d.Kn * ld)), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t k = 0; k < d.Kn; ++k) {
        const int64_t r = c * d.Kn + k;
        const int64_t k2 = k % g.K[2], k1 = k / g.K[2] % g.K[1], k0 = k / (g.K[2] * g.K[1]);
        const int64_t off2 = k2 * g.D[2] - g.P[2];
        int64_t lo, hi;
        valid_range(off2, g.S[2], g.I[2], g.B[2], lo, hi);
        for (int64_t j = 0; j < nb; ++j) {
          W* xp = dx + ((n0 + j) * g.C + gi * d.Cg + c) * d.In;
          const W* src = cols + r * ld + j * d.L;
          for (int64_t b0 = 0; b0 < g.B[0]; ++b0) {
            const int64_t i0 = conv_in(g, 0, b0, k0);
            for (int64_t b1 = 0; b1 < g.B[1]; ++b1, src += g.B[2]) {
              const int64_t i1 = conv_in(g, 1, b1, k1);
              if (i0 < 0 || i0 >= g.I[0] || i1 < 0 || i1 >= g.I[1]) continue;
              W* row = xp + (i0 * g.I[1] + i1) * g.I[2] + off2;
              if (g.S[2] == 1) for (int64_t b = lo; b < hi; ++b) row[b] += src[b];
              else for (int64_t b = lo; b < hi; ++b) row[b * g.S[2]] += src[b];
            }
          }
        }
      }
  });
}

// rows [o0, o0 + rows) of samples [n0, n0 + nb) of t (N, O, L) as (rows, nb * L), or back
template <class W>
void gather_rows(const W* t, int64_t O, int64_t L, int64_t n0, int64_t nb, int64_t o0, int64_t rows, W* buf) {
  parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, nb * L)), [&](int64_t s, int64_t e) {
    for (int64_t o = s; o < e; ++o)
      for (int64_t j = 0; j < nb; ++j)
        std::memcpy(buf + (o * nb + j) * L, t + ((n0 + j) * O + o0 + o) * L, sizeof(W) * L);
  });
}
template <class W>
void scatter_rows(W* t, int64_t O, int64_t L, int64_t n0, int64_t nb, int64_t o0, int64_t rows, const W* buf) {
  parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, nb * L)), [&](int64_t s, int64_t e) {
    for (int64_t o = s; o < e; ++o)
      for (int64_t j = 0; j < nb; ++j)
        std::memcpy(t + ((n0 + j) * O + o0 + o) * L, buf + (o * nb + j) * L, sizeof(W) * L);
  });
}

// How the forward and the input gradient walk the batch: with at least as many chunks as
// threads, each thread runs whole chunks (its im2col / col2im and a one-thread GEMM, no
// synchronisation between them; a multiple of the thread count of chunks); otherwise chunk by
// chunk, each im2col and GEMM split over the pool in turn.
struct Chunking {
  int64_t nb, chunks;
  bool by_chunk;
};

inline Chunking chunking(const Dense& d) {
  const int nt = get_num_threads();
  Chunking c{d.nb, 0, false};
  if (nt > 1 && d.g.N >= nt) {  // a multiple of the thread count of chunks, as even as can be
    int64_t k = (d.g.N + d.nb - 1) / d.nb;
    k = (k + nt - 1) / nt * nt;
    c.nb = (d.g.N + k - 1) / k;
  }
  c.chunks = (d.g.N + c.nb - 1) / c.nb;
  c.by_chunk = nt > 1 && c.chunks >= nt;
  if (!c.by_chunk) {
    c.nb = d.nb;
    c.chunks = (d.g.N + c.nb - 1) / c.nb;
  }
  return c;
}

// The three kernels' arguments: out, a, b (the tensors named by the op), checked to share
// out's dtype, and the geometry; ``geom``, ``blocks``, ``weight`` index {out, a, b}.
struct DenseCall {
  Tensor t[3];
  Dense d;
};

DenseCall open_dense(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw, int geom, int blocks,
                     int weight) {
  Args args(op, a, n, kw, {"out", "a", "b", "kernel", "dilation", "padding", "stride", "sizes", "groups"}, 9);
  DenseCall c{{args.out(0), args.tensor(1), args.tensor(2)}, {}};
  check_same_dtype(op, c.t[0], c.t[1]);
  check_same_dtype(op, c.t[0], c.t[2]);
  const Tensor& w = c.t[weight];
  c.d = parse_dense(op, args, c.t[geom], c.t[blocks], w, w.ndim > 0 ? w.shape[0] : 0, 4);
  return c;
}

void k_dense_conv(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* op = "dense_conv";
  const DenseCall c = open_dense(op, a, n, kw, 1, 0, 2);
  const Tensor &out = c.t[0], &x = c.t[1], &w = c.t[2];
  const Dense& d = c.d;
  if (out.numel == 0 || onednn_conv(ConvPass::forward, out, x, w, d.g, d.nd, d.G)) return;
  NoGil nogil(true);
  working_dispatch(op, out.dtype, [&](auto w0) {
    using W = decltype(w0);
    Work<W> px(x, true), pw(w, true), po(out, false);
    const Chunking ch = chunking(d);
    const bool direct = d.pointwise && ch.nb == 1;
    auto run_chunks = [&](int64_t c0, int64_t c1) {
      std::vector<W> cols(direct ? 0 : (size_t)(d.CgK * ch.nb * d.L));
      std::vector<W> tmp(ch.nb > 1 ? (size_t)(d.Og * ch.nb * d.L) : 0);
      for (int64_t ci = c0; ci < c1; ++ci) {
        const int64_t n0 = ci * ch.nb, nb = std::min(ch.nb, d.g.N - n0), ld = nb * d.L;
        for (int64_t gi = 0; gi < d.G; ++gi) {
          const W* wg = pw.p + gi * d.Og * d.CgK;
          const W* c = px.p + (n0 * d.g.C + gi * d.Cg) * d.In;  // the input itself (direct)
          if (!direct) {
            im2col_chunk(d, px.p, n0, nb, gi, cols.data());
            c = cols.data();
          }
          W* o = po.p + (n0 * d.O + gi * d.Og) * d.L;
          if (nb == 1) {
            gemm_pool<W>(false, false, d.Og, d.L, d.CgK, wg, d.CgK, c, ld, o, d.L);
          } else {
            gemm_pool<W>(false, false, d.Og, ld, d.CgK, wg, d.CgK, c, ld, tmp.data(), ld);
            scatter_rows(po.p, d.O, d.L, n0, nb, gi * d.Og, d.Og, tmp.data());
          }
        }
      }
    };
    if (ch.by_chunk) parallel_for(0, ch.chunks, 1, run_chunks);
    else run_chunks(0, ch.chunks);
    po.store();
  });
}
EMBER_KERNEL("dense_conv", k_dense_conv);

void k_dense_conv_input(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* op = "dense_conv_input";
  const DenseCall c = open_dense(op, a, n, kw, 0, 1, 2);
  const Tensor &out = c.t[0], &gr = c.t[1], &w = c.t[2];
  const Dense& d = c.d;
  if (out.numel == 0 || onednn_conv(ConvPass::backward_data, out, gr, w, d.g, d.nd, d.G)) return;
  NoGil nogil(true);
  working_dispatch(op, out.dtype, [&](auto w0) {
    using W = decltype(w0);
    Work<W> pg(gr, true), pw(w, true), po(out, false);
    const Chunking ch = chunking(d);  // (chunks write disjoint samples of the gradient)
    const bool direct = d.pointwise && ch.nb == 1;
    if (!direct) std::fill(po.p, po.p + out.numel, W(0));
    auto run_chunks = [&](int64_t c0, int64_t c1) {
      std::vector<W> cols(direct ? 0 : (size_t)(d.CgK * ch.nb * d.L));
      std::vector<W> tmp(ch.nb > 1 ? (size_t)(d.Og * ch.nb * d.L) : 0);
      for (int64_t ci = c0; ci < c1; ++ci) {
        const int64_t n0 = ci * ch.nb, nb = std::min(ch.nb, d.g.N - n0), ld = nb * d.L;
        for (int64_t gi = 0; gi < d.G; ++gi) {
          const W* wg = pw.p + gi * d.Og * d.CgK;
          const W* gc = pg.p + (n0 * d.O + gi * d.Og) * d.L;
          if (nb > 1) {
            gather_rows(pg.p, d.O, d.L, n0, nb, gi * d.Og, d.Og, tmp.data());
            gc = tmp.data();
          }
          if (direct) {  // W^T @ grad is the input gradient itself
            gemm_pool<W>(true, false, d.CgK, d.L, d.Og, wg, d.CgK, gc, d.L,
                         po.p + (n0 * d.g.C + gi * d.Cg) * d.In, d.L);
            continue;
          }
          gemm_pool<W>(true, false, d.CgK, ld, d.Og, wg, d.CgK, gc, ld, cols.data(), ld);
          col2im_chunk(d, cols.data(), n0, nb, gi, po.p);
        }
      }
    };
    if (ch.by_chunk) parallel_for(0, ch.chunks, 1, run_chunks);
    else run_chunks(0, ch.chunks);
    po.store();
  });
}
EMBER_KERNEL("dense_conv_input", k_dense_conv_input);

void k_dense_conv_weight(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* op = "dense_conv_weight";
  const DenseCall c = open_dense(op, a, n, kw, 2, 1, 0);
  const Tensor &out = c.t[0], &gr = c.t[1], &x = c.t[2];
  const Dense& d = c.d;
  if (out.numel == 0 || onednn_conv(ConvPass::backward_weights, out, gr, x, d.g, d.nd, d.G)) return;
  NoGil nogil(true);
  working_dispatch(op, out.dtype, [&](auto w0) {
    using W = decltype(w0);
    Work<W> pg(gr, true), px(x, true), po(out, false);
    const bool direct = d.pointwise && d.nb == 1;
    std::vector<W> cols(direct ? 0 : (size_t)(d.CgK * d.nb * d.L)), tmp(d.nb > 1 ? (size_t)(d.Og * d.nb * d.L) : 0);
    for (int64_t n0 = 0; n0 < d.g.N; n0 += d.nb) {
      const int64_t nb = std::min(d.nb, d.g.N - n0), ld = nb * d.L;
      for (int64_t gi = 0; gi < d.G; ++gi) {
        const W* gc = pg.p + (n0 * d.O + gi * d.Og) * d.L;
        if (nb > 1) {
          gather_rows(pg.p, d.O, d.L, n0, nb, gi * d.Og, d.Og, tmp.data());
          gc = tmp.data();
        }
        const W* c = px.p + (n0 * d.g.C + gi * d.Cg) * d.In;
        if (!direct) {
          im2col_chunk(d, px.p, n0, nb, gi, cols.data());
          c = cols.data();
        }
        gemm_pool<W>(false, true, d.Og, d.CgK, ld, gc, ld, c, ld, po.p + gi * d.Og * d.CgK, d.CgK, n0 > 0);
      }
    }
    if (d.g.N == 0) std::fill(po.p, po.p + out.numel, W(0));
    po.store();
  });
}
EMBER_KERNEL("dense_conv_weight", k_dense_conv_weight);

}  // namespace

}  // namespace ember
