// The LSTM cell's pointwise part as one pass, forward and backward (PyTorch's gate order
// i, f, g, o): the recurrent step becomes a GEMM, an add and this kernel instead of a dozen
// recorded elementwise ops on chunks of the gates.
//   lstm_cell           out (2, B, H): h = o * tanh(c'), c' = f * c + i * g, with
//                       i, f, o = sigmoid(gates[:, 0:H], [H:2H], [3H:4H]), g = tanh([2H:3H])
//   lstm_cell_backward  d_gates (B, 4H), d_c (B, H) from the packed gradient (2, B, H) of
//                       (h, c'), the gates, c and the forward's packed output
//   lstm_layer          out (2, T, B, H): h and c of every step of one layer direction,
//                       gates_t = gi[t] + h_{t-1} w_hh^T (one GEMM per step on the pool)
//   lstm_layer_backward d_gi, d_w_hh, d_h0, d_c0: the gates recomputed for all steps in one
//                       GEMM, the gate gradients step by step (one GEMM each for d_h), and
//                       d_w_hh as one GEMM over the whole sequence
//   gru_layer           out (T, B, H): h of every step of one GRU layer direction (gates r,
//                       z, n; b_hh apart from gi, its n part scaled by r)
//   gru_layer_backward  d_gi, d_w_hh, d_b_hh, d_h0, as lstm_layer_backward
// The layer kernels compute in float (float16/bfloat16 widened) or double, on contiguous
// working copies where the tensors are not already contiguous of that type.
#include <cmath>
#include <cstring>
#include <vector>

#include "blas.h"
#include "ember.h"
#include "onednn.h"
#include "vecmath.h"
#include "work.h"

namespace ember {

namespace {

template <class A>
inline A sigmoid_of(A x) { return A(1) / (A(1) + std::exp(-x)); }

void check_2d(const char* op, const Tensor& t, int64_t rows, int64_t cols, const char* what) {
  if (t.ndim != 2 || t.shape[0] != rows || t.shape[1] != cols)
    raise(PyExc_ValueError, "%s(): %s must be (%lld, %lld), got %s", op, what, (long long)rows,
          (long long)cols, shape_str(t).c_str());
}

void check_packed(const char* op, const Tensor& t, int64_t rows, int64_t cols, const char* what) {
  if (t.ndim != 3 || t.shape[0] != 2 || t.shape[1] != rows || t.shape[2] != cols)
    raise(PyExc_ValueError, "%s(): %s must be (2, %lld, %lld), got %s", op, what, (long long)rows,
          (long long)cols, shape_str(t).c_str());
}

void k_lstm_cell(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("lstm_cell", a, n, kw, {"out", "gates", "c"}, 3);
  const Tensor out = args.out(0), gates = args.tensor(1), c = args.tensor(2);
  check_same_dtype("lstm_cell", out, gates);
  check_same_dtype("lstm_cell", out, c);
  if (c.ndim != 2) raise(PyExc_ValueError, "lstm_cell(): c must be (B, H), got %s", shape_str(c).c_str());
  const int64_t B = c.shape[0], H = c.shape[1];
  check_2d("lstm_cell", gates, B, 4 * H, "gates");
  check_packed("lstm_cell", out, B, H, "out");
  if (B * H == 0) return;
  NoGil nogil(B * H * 4 >= kGilThreshold);
  dispatch<M_FLOAT>(out.dtype, "lstm_cell", [&](auto tag) {
    using T = EMBER_T(tag);
    using A = compute_t<T>;
    const T* pg = (const T*)gates.data;
    const T* pc = (const T*)c.data;
    T* po = (T*)out.data;
    const int64_t gs0 = gates.stride[0], gs1 = gates.stride[1], cs0 = c.stride[0], cs1 = c.stride[1];
    const int64_t o0 = out.stride[0], o1 = out.stride[1], o2 = out.stride[2];
    parallel_for(0, B, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, 32 * H)), [&](int64_t s, int64_t e) {
      for (int64_t b = s; b < e; ++b) {
        const T* g = pg + b * gs0;
        for (int64_t j = 0; j < H; ++j) {
          const A i = sigmoid_of<A>((A)g[j * gs1]), f = sigmoid_of<A>((A)g[(H + j) * gs1]);
          const A gg = std::tanh((A)g[(2 * H + j) * gs1]), o = sigmoid_of<A>((A)g[(3 * H + j) * gs1]);
          const A cn = f * (A)pc[b * cs0 + j * cs1] + i * gg;
          po[b * o1 + j * o2] = cvt<T>(o * std::tanh(cn));
          po[o0 + b * o1 + j * o2] = cvt<T>(cn);
        }
      }
    });
  });
}
EMBER_KERNEL("lstm_cell", k_lstm_cell);

void k_lstm_cell_backward(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("lstm_cell_backward", a, n, kw, {"d_gates", "d_c", "grad", "gates", "c", "out"}, 6);
  const Tensor dg = args.out(0), dc = args.out(1), grad = args.tensor(2), gates = args.tensor(3),
               c = args.tensor(4), out = args.tensor(5);
  for (const Tensor* t : {&dc, &grad, &gates, &c, &out}) check_same_dtype("lstm_cell_backward", dg, *t);
  if (c.ndim != 2) raise(PyExc_ValueError, "lstm_cell_backward(): c must be (B, H), got %s", shape_str(c).c_str());
  const int64_t B = c.shape[0], H = c.shape[1];
  check_2d("lstm_cell_backward", gates, B, 4 * H, "gates");
  check_2d("lstm_cell_backward", dg, B, 4 * H, "d_gates");
  check_2d("lstm_cell_backward", dc, B, H, "d_c");
  check_packed("lstm_cell_backward", grad, B, H, "grad");
  check_packed("lstm_cell_backward", out, B, H, "out");
  if (B * H == 0) return;
  NoGil nogil(B * H * 4 >= kGilThreshold);
  dispatch<M_FLOAT>(dg.dtype, "lstm_cell_backward", [&](auto tag) {
    using T = EMBER_T(tag);
    using A = compute_t<T>;
    const T *pgr = (const T*)grad.data, *pg = (const T*)gates.data, *pc = (const T*)c.data,
            *po = (const T*)out.data;
    T *pdg = (T*)dg.data, *pdc = (T*)dc.data;
    parallel_for(0, B, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, 48 * H)), [&](int64_t s, int64_t e) {
      for (int64_t b = s; b < e; ++b) {
        for (int64_t j = 0; j < H; ++j) {
          const T* g = pg + b * gates.stride[0];
          const int64_t gs = gates.stride[1];
          const A i = sigmoid_of<A>((A)g[j * gs]), f = sigmoid_of<A>((A)g[(H + j) * gs]);
          const A gg = std::tanh((A)g[(2 * H + j) * gs]), o = sigmoid_of<A>((A)g[(3 * H + j) * gs]);
          const A cn = (A)po[out.stride[0] + b * out.stride[1] + j * out.stride[2]];
          const A tc = std::tanh(cn);
          const A gh = (A)pgr[b * grad.stride[1] + j * grad.stride[2]];
          const A gc = (A)pgr[grad.stride[0] + b * grad.stride[1] + j * grad.stride[2]];
          const A dct = gc + gh * o * (A(1) - tc * tc);
          const A cp = (A)pc[b * c.stride[0] + j * c.stride[1]];
          T* d = pdg + b * dg.stride[0];
          const int64_t ds = dg.stride[1];
          d[j * ds] = cvt<T>(dct * gg * i * (A(1) - i));
          d[(H + j) * ds] = cvt<T>(dct * cp * f * (A(1) - f));
          d[(2 * H + j) * ds] = cvt<T>(dct * i * (A(1) - gg * gg));
          d[(3 * H + j) * ds] = cvt<T>(gh * tc * o * (A(1) - o));
          pdc[b * dc.stride[0] + j * dc.stride[1]] = cvt<T>(dct * f);
        }
      }
    });
  });
}
EMBER_KERNEL("lstm_cell_backward", k_lstm_cell_backward);

struct LayerGeom {
  int64_t T, B, H;
  bool reverse;
  int64_t step(int64_t s) const { return reverse ? T - 1 - s : s; }  // the s-th step run
  int64_t prev(int64_t t) const { return reverse ? t + 1 : t - 1; }
};

LayerGeom check_layer(const char* op, const Tensor& gi, const Tensor& w, const Tensor& h0, const Tensor& c0,
                      bool reverse) {
  if (gi.ndim != 3 || h0.ndim != 2)
    raise(PyExc_ValueError, "%s(): expected gi (T, B, 4H) and h0 (B, H), got %s and %s", op, shape_str(gi).c_str(),
          shape_str(h0).c_str());
  LayerGeom g{gi.shape[0], h0.shape[0], h0.shape[1], reverse};
  check_2d(op, c0, g.B, g.H, "c0");
  check_2d(op, w, 4 * g.H, g.H, "w_hh");
  if (gi.shape[1] != g.B || gi.shape[2] != 4 * g.H)
    raise(PyExc_ValueError, "%s(): gi must be (T, %lld, %lld), got %s", op, (long long)g.B, (long long)(4 * g.H),
          shape_str(gi).c_str());
  return g;
}

void check_steps(const char* op, const Tensor& t, const LayerGeom& g, const char* what) {
  if (t.ndim != 4 || t.shape[0] != 2 || t.shape[1] != g.T || t.shape[2] != g.B || t.shape[3] != g.H)
    raise(PyExc_ValueError, "%s(): %s must be (2, %lld, %lld, %lld), got %s", op, what, (long long)g.T,
          (long long)g.B, (long long)g.H, shape_str(t).c_str());
}

// One row's gate pre-activations (i, f, g, o; 4H) replaced by sigmoid(i), sigmoid(f),
// tanh(g), sigmoid(o): float through the vectorised loops, double element by element.
template <class W>
void activate_gates(W* a, int64_t H) {
  if constexpr (std::is_same_v<W, float>) {
    vsigmoid_f32(a, a, 2 * H);
    vtanh_f32(a + 2 * H, a + 2 * H, H);
    vsigmoid_f32(a + 3 * H, a + 3 * H, H);
  } else {
    for (int64_t j = 0; j < 2 * H; ++j) a[j] = sigmoid_of<W>(a[j]);
    for (int64_t j = 2 * H; j < 3 * H; ++j) a[j] = std::tanh(a[j]);
    for (int64_t j = 3 * H; j < 4 * H; ++j) a[j] = sigmoid_of<W>(a[j]);
  }
}

template <class W>
void tanh_row(W* o, const W* a, int64_t n) {
  if constexpr (std::is_same_v<W, float>) vtanh_f32(o, a, n);
  else for (int64_t j = 0; j < n; ++j) o[j] = std::tanh(a[j]);
}

// rows of (B, H) per parallel task: about kGrain / 32 transcendental-heavy elements each
inline int64_t row_grain(int64_t H) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, 32 * H)); }

// The batch's rows in one part per thread, each part's product planned once for oneDNN
// (float32): a step then runs as one pool dispatch whose tasks multiply their rows and
// finish them (the pointwise part), instead of a parallel GEMM and a parallel loop.
struct RowParts {
  int64_t rows = 0, parts = 0;
  std::shared_ptr<const void> head, tail;  // the plans of a full part and of the last one
  bool ok() const { return head && tail; }
};

// plans of (rows x k) @ (k x m) products, B's strides sb, C's row stride ldc
inline RowParts plan_row_parts(int64_t B, int64_t k, int64_t m, int64_t lda, const int64_t* sb, int64_t ldc) {
  RowParts rp;
  // small products run faster through gemm_pool's path (a few rows: OpenBLAS)
  if (B * k * m < (int64_t{1} << 20) || B < 2 * std::min<int64_t>(get_num_threads(), 4)) return rp;
  const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), B));
  rp.rows = (B + nt - 1) / nt;
  rp.parts = (B + rp.rows - 1) / rp.rows;
  const int64_t last = B - (rp.parts - 1) * rp.rows;
  const int64_t sa[2] = {lda, 1}, sc[2] = {ldc, 1};
  rp.head = onednn_matmul_plan(rp.rows, k, m, sa, sb, sc);
  rp.tail = last == rp.rows ? rp.head : onednn_matmul_plan(last, k, m, sa, sb, sc);
  return rp;
}

template <class F>
void run_row_parts(const RowParts& rp, int64_t B, F&& part) {
  parallel_for(0, rp.parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b0 = p * rp.rows, b1 = std::min(B, b0 + rp.rows);
      part(b0, b1, p == rp.parts - 1 ? rp.tail : rp.head);
    }
  });
}

// one row's gates: the recurrent product ``a`` (4H) plus the input projection ``xb``,
// activated (sigmoid i, f, o; tanh g)
template <class W>
inline void gates_of(W* a, const W* xb, int64_t H) {
  for (int64_t k = 0; k < 4 * H; ++k) a[k] += xb[k];
  activate_gates(a, H);
}

template <class W>
void lstm_forward_rows(W* gates, const W* x, const W* cp, W* ho, W* co, int64_t b0, int64_t b1, int64_t H) {
  const int64_t G = 4 * H;
  std::vector<W> tc((size_t)H);
  for (int64_t b = b0; b < b1; ++b) {
    W* a = gates + b * G;
    gates_of(a, x + b * G, H);
    for (int64_t j = 0; j < H; ++j) co[b * H + j] = tc[(size_t)j] = a[H + j] * cp[b * H + j] + a[j] * a[2 * H + j];
    tanh_row(tc.data(), tc.data(), H);
    for (int64_t j = 0; j < H; ++j) ho[b * H + j] = a[3 * H + j] * tc[(size_t)j];
  }
}

template <class W>
void lstm_layer_forward(const LayerGeom& g, const Tensor& out, const Tensor& gi, const Tensor& w,
                        const Tensor& h0, const Tensor& c0) {
  const int64_t T = g.T, B = g.B, H = g.H, G = 4 * H, BH = B * H;
  Work<W> po(out, false), pg(gi, true), pw(w, true), ph(h0, true), pc(c0, true);
  std::vector<W> gates((size_t)(B * G));
  RowParts rp;
  if constexpr (std::is_same_v<W, float>) {
    const int64_t sb[2] = {1, H};  // w_hh^T: (H, 4H) read from w_hh (4H, H)
    rp = plan_row_parts(B, H, G, H, sb, G);
  }
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = g.step(s), tp = g.prev(t);
    const W* hp = s == 0 ? ph.p : po.p + tp * BH;
    const W* cp = s == 0 ? pc.p : po.p + (T + tp) * BH;
    const W* x = pg.p + t * B * G;
    W* ho = po.p + t * BH;
    W* co = po.p + (T + t) * BH;
    if constexpr (std::is_same_v<W, float>) {
      if (rp.ok()) {
        run_row_parts(rp, B, [&](int64_t b0, int64_t b1, const std::shared_ptr<const void>& plan) {
          onednn_matmul_here(plan, hp + b0 * H, pw.p, gates.data() + b0 * G);
          lstm_forward_rows(gates.data(), x, cp, ho, co, b0, b1, H);
        });
        continue;
      }
    }
    gemm_pool<W>(false, true, B, G, H, hp, H, pw.p, H, gates.data(), G);
    parallel_for(0, B, row_grain(H), [&](int64_t b0, int64_t b1) {
      lstm_forward_rows(gates.data(), x, cp, ho, co, b0, b1, H);
    });
  }
  po.store();
}

template <class W>
void lstm_layer_backward(const LayerGeom& g, const Tensor& dgi, const Tensor& dw, const Tensor& dh0,
                         const Tensor& dc0, const Tensor& grad, const Tensor& gi, const Tensor& w, const Tensor& h0,
                         const Tensor& c0, const Tensor& out) {
  const int64_t T = g.T, B = g.B, H = g.H, G = 4 * H, BH = B * H;
  Work<W> qgi(dgi, false), qw(dw, false), qh(dh0, false), qc(dc0, false);
  Work<W> pgr(grad, true), pg(gi, true), pw(w, true), ph(h0, true), pc(c0, true), po(out, true);
  // the hidden state each step started from
  std::vector<W> hprev((size_t)(T * BH));
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = g.step(s);
    std::memcpy(hprev.data() + t * BH, s == 0 ? ph.p : po.p + g.prev(t) * BH, sizeof(W) * BH);
  }
  // gates pre-activations of every step at once (gi added below): into d_gi, which each
  // step then overwrites with its gate gradients
  gemm_pool<W>(false, true, T * B, G, H, hprev.data(), H, pw.p, H, qgi.p, G);
  std::vector<W> dh((size_t)BH, W(0)), dc((size_t)BH, W(0));
  RowParts rp;
  if constexpr (std::is_same_v<W, float>) {
    const int64_t sb[2] = {H, 1};  // w_hh (4H, H)
    rp = plan_row_parts(B, G, H, G, sb, H);
  }
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = g.step(s);
    const W* cp = s == 0 ? pc.p : po.p + (T + g.prev(t)) * BH;
    const W* cn = po.p + (T + t) * BH;
    const W* gh = pgr.p + t * BH;
    const W* gc = pgr.p + (T + t) * BH;
    const W* x = pg.p + t * B * G;
    W* d = qgi.p + t * B * G;
    auto rows = [&](int64_t b0, int64_t b1) {
      std::vector<W> tcs((size_t)H);
      for (int64_t b = b0; b < b1; ++b) {
        W* db = d + b * G;
        gates_of(db, x + b * G, H);
        tanh_row(tcs.data(), cn + b * H, H);
        for (int64_t j = 0; j < H; ++j) {
          const int64_t e = b * H + j;
          const W i = db[j], f = db[H + j], gg = db[2 * H + j], o = db[3 * H + j], tc = tcs[(size_t)j];
          const W h_grad = gh[e] + dh[(size_t)e];
          const W dct = gc[e] + dc[(size_t)e] + h_grad * o * (W(1) - tc * tc);
          db[j] = dct * gg * i * (W(1) - i);
          db[H + j] = dct * cp[e] * f * (W(1) - f);
          db[2 * H + j] = dct * i * (W(1) - gg * gg);
          db[3 * H + j] = h_grad * tc * o * (W(1) - o);
          dc[(size_t)e] = dct * f;
        }
      }
    };
    if constexpr (std::is_same_v<W, float>) {
      if (rp.ok()) {
        // each part's rows of the gate gradients, then their rows of d @ w_hh (the next
        // step's hidden-state gradient): rows depend on no other rows within a step
        run_row_parts(rp, B, [&](int64_t b0, int64_t b1, const std::shared_ptr<const void>& plan) {
          rows(b0, b1);
          onednn_matmul_here(plan, d + b0 * G, pw.p, dh.data() + b0 * H);
        });
        continue;
      }
    }
    parallel_for(0, B, row_grain(H), rows);
    gemm_pool<W>(false, false, B, H, G, d, G, pw.p, H, dh.data(), H);
  }
  gemm_pool<W>(true, false, G, H, T * B, qgi.p, G, hprev.data(), H, qw.p, H);
  std::memcpy(qh.p, dh.data(), sizeof(W) * BH);
  std::memcpy(qc.p, dc.data(), sizeof(W) * BH);
  for (Work<W>* q : {&qgi, &qw, &qh, &qc}) q->store();
}

void k_lstm_layer(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("lstm_layer", a, n, kw, {"out", "gi", "w_hh", "h0", "c0", "reverse"}, 5);
  const Tensor out = args.out(0), gi = args.tensor(1), w = args.tensor(2), h0 = args.tensor(3), c0 = args.tensor(4);
  for (const Tensor* t : {&gi, &w, &h0, &c0}) check_same_dtype("lstm_layer", out, *t);
  const LayerGeom g = check_layer("lstm_layer", gi, w, h0, c0, args.get_bool(5, false));
  check_steps("lstm_layer", out, g, "out");
  if (g.T * g.B * g.H == 0) return;
  NoGil nogil(true);
  working_dispatch("lstm_layer", out.dtype, [&](auto w0) {
    lstm_layer_forward<decltype(w0)>(g, out, gi, w, h0, c0);
  });
}
EMBER_KERNEL("lstm_layer", k_lstm_layer);

void k_lstm_layer_backward(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("lstm_layer_backward", a, n, kw,
            {"d_gi", "d_w_hh", "d_h0", "d_c0", "grad", "gi", "w_hh", "h0", "c0", "out", "reverse"}, 10);
  const Tensor dgi = args.out(0), dw = args.out(1), dh0 = args.out(2), dc0 = args.out(3), grad = args.tensor(4),
               gi = args.tensor(5), w = args.tensor(6), h0 = args.tensor(7), c0 = args.tensor(8),
               out = args.tensor(9);
  for (const Tensor* t : {&dw, &dh0, &dc0, &grad, &gi, &w, &h0, &c0, &out})
    check_same_dtype("lstm_layer_backward", dgi, *t);
  const LayerGeom g = check_layer("lstm_layer_backward", gi, w, h0, c0, args.get_bool(10, false));
  check_steps("lstm_layer_backward", grad, g, "grad");
  check_steps("lstm_layer_backward", out, g, "out");
  check_2d("lstm_layer_backward", dw, 4 * g.H, g.H, "d_w_hh");
  check_2d("lstm_layer_backward", dh0, g.B, g.H, "d_h0");
  check_2d("lstm_layer_backward", dc0, g.B, g.H, "d_c0");
  if (dgi.ndim != 3 || dgi.shape[0] != g.T || dgi.shape[1] != g.B || dgi.shape[2] != 4 * g.H)
    raise(PyExc_ValueError, "lstm_layer_backward(): d_gi must be the shape of gi, got %s", shape_str(dgi).c_str());
  NoGil nogil(true);
  working_dispatch("lstm_layer_backward", dgi.dtype, [&](auto w0) {
    using W = decltype(w0);
    if (g.T * g.B * g.H == 0) {  // d_gi empty; the other gradients zero
      for (const Tensor* t : {&dw, &dh0, &dc0}) {
        Work<W> q(*t, false);
        std::fill(q.p, q.p + t->numel, W(0));
        q.store();
      }
      return;
    }
    lstm_layer_backward<W>(g, dgi, dw, dh0, dc0, grad, gi, w, h0, c0, out);
  });
}
EMBER_KERNEL("lstm_layer_backward", k_lstm_layer_backward);

// ---- GRU layer (gates r, z, n) ----------------------------------------------------------

struct GruGeom {
  int64_t T, B, H;
  bool reverse;
  int64_t step(int64_t s) const { return reverse ? T - 1 - s : s; }
  int64_t prev(int64_t t) const { return reverse ? t + 1 : t - 1; }
};

GruGeom check_gru(const char* op, const Tensor& gi, const Tensor& w, const Tensor& b, const Tensor& h0,
                  bool reverse) {
  if (gi.ndim != 3 || h0.ndim != 2 || b.ndim != 1)
    raise(PyExc_ValueError, "%s(): expected gi (T, B, 3H), b_hh (3H) and h0 (B, H), got %s, %s and %s", op,
          shape_str(gi).c_str(), shape_str(b).c_str(), shape_str(h0).c_str());
  GruGeom g{gi.shape[0], h0.shape[0], h0.shape[1], reverse};
  check_2d(op, w, 3 * g.H, g.H, "w_hh");
  if (b.shape[0] != 3 * g.H)
    raise(PyExc_ValueError, "%s(): b_hh must be (%lld,), got %s", op, (long long)(3 * g.H), shape_str(b).c_str());
  if (gi.shape[1] != g.B || gi.shape[2] != 3 * g.H)
    raise(PyExc_ValueError, "%s(): gi must be (T, %lld, %lld), got %s", op, (long long)g.B, (long long)(3 * g.H),
          shape_str(gi).c_str());
  return g;
}

void check_gru_steps(const char* op, const Tensor& t, const GruGeom& g, const char* what) {
  if (t.ndim != 3 || t.shape[0] != g.T || t.shape[1] != g.B || t.shape[2] != g.H)
    raise(PyExc_ValueError, "%s(): %s must be (%lld, %lld, %lld), got %s", op, what, (long long)g.T,
          (long long)g.B, (long long)g.H, shape_str(t).c_str());
}

template <class W>
void sigmoid_row(W* o, const W* a, int64_t n) {
  if constexpr (std::is_same_v<W, float>) vsigmoid_f32(o, a, n);
  else for (int64_t j = 0; j < n; ++j) o[j] = sigmoid_of<W>(a[j]);
}

// One row's gates from its recurrent product ``a`` (3H; b_hh not yet added) and input part
// ``x``: a[0:2H] becomes sigmoid r, z; ``gn`` gets the recurrent n part (w_hh h + b_hh);
// ``n`` gets tanh(x_n + r gn). The additions in the composite's order: x + (a + b).
template <class W>
inline void gru_gates(W* a, const W* x, const W* bh, W* gn, W* n, int64_t H) {
  for (int64_t j = 0; j < 2 * H; ++j) a[j] = x[j] + (a[j] + bh[j]);
  for (int64_t j = 0; j < H; ++j) gn[j] = a[2 * H + j] + bh[2 * H + j];
  sigmoid_row(a, a, 2 * H);
  for (int64_t j = 0; j < H; ++j) n[j] = x[2 * H + j] + a[j] * gn[j];
  tanh_row(n, n, H);
}

template <class W>
void gru_forward_rows(W* gh, const W* x, const W* bh, const W* hp, W* ho, int64_t b0, int64_t b1, int64_t H) {
  const int64_t G = 3 * H;
  std::vector<W> gn((size_t)H), n((size_t)H);
  for (int64_t b = b0; b < b1; ++b) {
    W* a = gh + b * G;
    gru_gates(a, x + b * G, bh, gn.data(), n.data(), H);
    for (int64_t j = 0; j < H; ++j) {
      const W nj = n[(size_t)j];
      ho[b * H + j] = nj + a[H + j] * (hp[b * H + j] - nj);
    }
  }
}

template <class W>
void gru_layer_forward(const GruGeom& g, const Tensor& out, const Tensor& gi, const Tensor& w, const Tensor& bias,
                       const Tensor& h0) {
  const int64_t T = g.T, B = g.B, H = g.H, G = 3 * H, BH = B * H;
  Work<W> po(out, false), pg(gi, true), pw(w, true), pb(bias, true), ph(h0, true);
  std::vector<W> gh((size_t)(B * G));
  RowParts rp;
  if constexpr (std::is_same_v<W, float>) {
    const int64_t sb[2] = {1, H};  // w_hh^T: (H, 3H) read from w_hh (3H, H)
    rp = plan_row_parts(B, H, G, H, sb, G);
  }
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = g.step(s);
    const W* hp = s == 0 ? ph.p : po.p + g.prev(t) * BH;
    const W* x = pg.p + t * B * G;
    W* ho = po.p + t * BH;
    if constexpr (std::is_same_v<W, float>) {
      if (rp.ok()) {
        run_row_parts(rp, B, [&](int64_t b0, int64_t b1, const std::shared_ptr<const void>& plan) {
          onednn_matmul_here(plan, hp + b0 * H, pw.p, gh.data() + b0 * G);
          gru_forward_rows(gh.data(), x, pb.p, hp, ho, b0, b1, H);
        });
        continue;
      }
    }
    gemm_pool<W>(false, true, B, G, H, hp, H, pw.p, H, gh.data(), G);
    parallel_for(0, B, row_grain(H), [&](int64_t b0, int64_t b1) {
      gru_forward_rows(gh.data(), x, pb.p, hp, ho, b0, b1, H);
    });
  }
  po.store();
}

template <class W>
void gru_layer_backward(const GruGeom& g, const Tensor& dgi, const Tensor& dw, const Tensor& db, const Tensor& dh0,
                        const Tensor& grad, const Tensor& gi, const Tensor& w, const Tensor& bias, const Tensor& h0,
                        const Tensor& out) {
  const int64_t T = g.T, B = g.B, H = g.H, G = 3 * H, BH = B * H;
  Work<W> qgi(dgi, false), qw(dw, false), qb(db, false), qh(dh0, false);
  Work<W> pgr(grad, true), pg(gi, true), pw(w, true), pb(bias, true), ph(h0, true), po(out, true);
  std::vector<W> hprev((size_t)(T * BH));
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = g.step(s);
    std::memcpy(hprev.data() + t * BH, s == 0 ? ph.p : po.p + g.prev(t) * BH, sizeof(W) * BH);
  }
  // every step's recurrent product at once; each step then overwrites its rows with the
  // recurrent part's gradient (d_gh), which d_w_hh and d_b_hh sum over the sequence
  std::vector<W> dgh((size_t)(T * B * G));
  gemm_pool<W>(false, true, T * B, G, H, hprev.data(), H, pw.p, H, dgh.data(), G);
  std::vector<W> dh((size_t)BH, W(0)), direct((size_t)BH);
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = g.step(s);
    const W* x = pg.p + t * B * G;
    const W* gr = pgr.p + t * BH;
    const W* hp = hprev.data() + t * BH;
    W* dx = qgi.p + t * B * G;
    W* d = dgh.data() + t * B * G;
    parallel_for(0, B, row_grain(H), [&](int64_t b0, int64_t b1) {
      std::vector<W> gn((size_t)H), n((size_t)H);
      for (int64_t b = b0; b < b1; ++b) {
        W* a = d + b * G;
        gru_gates(a, x + b * G, pb.p, gn.data(), n.data(), H);
        for (int64_t j = 0; j < H; ++j) {
          const int64_t e = b * H + j;
          const W r = a[j], z = a[H + j], nj = n[(size_t)j];
          const W dht = gr[e] + dh[(size_t)e];
          const W dn = dht * (W(1) - z) * (W(1) - nj * nj);
          const W dz = dht * (hp[e] - nj) * (z * (W(1) - z));
          const W dr = dn * gn[(size_t)j] * (r * (W(1) - r));
          W* xb = dx + b * G;
          xb[j] = dr;
          xb[H + j] = dz;
          xb[2 * H + j] = dn;
          a[j] = dr;
          a[H + j] = dz;
          a[2 * H + j] = dn * r;
          direct[(size_t)e] = dht * z;
        }
      }
    });
    gemm_pool<W>(false, false, B, H, G, d, G, pw.p, H, dh.data(), H);
    for (int64_t e = 0; e < BH; ++e) dh[(size_t)e] = direct[(size_t)e] + dh[(size_t)e];
  }
  gemm_pool<W>(true, false, G, H, T * B, dgh.data(), G, hprev.data(), H, qw.p, H);
  for (int64_t k = 0; k < G; ++k) qb.p[k] = W(0);
  for (int64_t r = 0; r < T * B; ++r)
    for (int64_t k = 0; k < G; ++k) qb.p[k] += dgh[(size_t)(r * G + k)];
  std::memcpy(qh.p, dh.data(), sizeof(W) * BH);
  for (Work<W>* q : {&qgi, &qw, &qb, &qh}) q->store();
}

void k_gru_layer(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("gru_layer", a, n, kw, {"out", "gi", "w_hh", "b_hh", "h0", "reverse"}, 5);
  const Tensor out = args.out(0), gi = args.tensor(1), w = args.tensor(2), b = args.tensor(3), h0 = args.tensor(4);
  for (const Tensor* t : {&gi, &w, &b, &h0}) check_same_dtype("gru_layer", out, *t);
  const GruGeom g = check_gru("gru_layer", gi, w, b, h0, args.get_bool(5, false));
  check_gru_steps("gru_layer", out, g, "out");
  if (g.T * g.B * g.H == 0) return;
  NoGil nogil(true);
  working_dispatch("gru_layer", out.dtype, [&](auto w0) {
    gru_layer_forward<decltype(w0)>(g, out, gi, w, b, h0);
  });
}
EMBER_KERNEL("gru_layer", k_gru_layer);

void k_gru_layer_backward(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("gru_layer_backward", a, n, kw,
            {"d_gi", "d_w_hh", "d_b_hh", "d_h0", "grad", "gi", "w_hh", "b_hh", "h0", "out", "reverse"}, 10);
  const Tensor dgi = args.out(0), dw = args.out(1), db = args.out(2), dh0 = args.out(3), grad = args.tensor(4),
               gi = args.tensor(5), w = args.tensor(6), b = args.tensor(7), h0 = args.tensor(8),
               out = args.tensor(9);
  for (const Tensor* t : {&dw, &db, &dh0, &grad, &gi, &w, &b, &h0, &out})
    check_same_dtype("gru_layer_backward", dgi, *t);
  const GruGeom g = check_gru("gru_layer_backward", gi, w, b, h0, args.get_bool(10, false));
  check_gru_steps("gru_layer_backward", grad, g, "grad");
  check_gru_steps("gru_layer_backward", out, g, "out");
  check_2d("gru_layer_backward", dw, 3 * g.H, g.H, "d_w_hh");
  check_2d("gru_layer_backward", dh0, g.B, g.H, "d_h0");
  if (db.ndim != 1 || db.shape[0] != 3 * g.H)
    raise(PyExc_ValueError, "gru_layer_backward(): d_b_hh must be (%lld,), got %s", (long long)(3 * g.H),
          shape_str(db).c_str());
  if (dgi.ndim != 3 || dgi.shape[0] != g.T || dgi.shape[1] != g.B || dgi.shape[2] != 3 * g.H)
    raise(PyExc_ValueError, "gru_layer_backward(): d_gi must be the shape of gi, got %s", shape_str(dgi).c_str());
  NoGil nogil(true);
  working_dispatch("gru_layer_backward", dgi.dtype, [&](auto w0) {
    using W = decltype(w0);
    if (g.T * g.B * g.H == 0) {  // d_gi empty; the other gradients zero
      for (const Tensor* t : {&dw, &db, &dh0}) {
        Work<W> q(*t, false);
        std::fill(q.p, q.p + t->numel, W(0));
        q.store();
      }
      return;
    }
    gru_layer_backward<W>(g, dgi, dw, db, dh0, grad, gi, w, b, h0, out);
  });
}
EMBER_KERNEL("gru_layer_backward", k_gru_layer_backward);

}  // namespace

}  // namespace ember
