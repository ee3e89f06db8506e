// scaled_dot_product_attention without a mask tensor: one task per (batch, head), each
// running q k^T (one GEMM), the scale, the causal mask, attention's safe softmax (rows of
// -inf give 0) and p v (one GEMM) while its L x S scores stay in cache. The same
// operations in the same order as the composite (bmm, mul, masked_fill, _safe_softmax,
// bmm): the same results bit for bit where the composite's bmm also runs on OpenBLAS (with
// oneDNN loaded, large products round differently; batching the heads' products through
// oneDNN as the composite does was slower here: 491 against 428 us per call). The
// dispatcher sends masks, broadcast batch dims and grouped heads to the composite; float32
// and float64.
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "blas.h"
#include "ember.h"
#include "vecmath.h"
#include "work.h"

namespace ember {

namespace {

// the element offset of batch entry b (row-major over the leading ndim - 2 dims) in t
int64_t batch_offset(const Tensor& t, int64_t b) {
  int64_t off = 0;
  for (int d = t.ndim - 3; d >= 0; --d) {
    off += (b % t.shape[d]) * t.stride[d];
    b /= t.shape[d];
  }
  return off;
}

void k_attention(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* op = "scaled_dot_product_attention";
  Args args(op, a, n, kw,
            {"out", "query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"}, 4);
  const Tensor out = args.out(0), q = args.tensor(1), k = args.tensor(2), v = args.tensor(3);
  if (args.has(4)) raise(PyExc_ValueError, "%s(): the kernel takes no attn_mask (the composite does)", op);
  if (args.has(5) && args.get_double(5) != 0.0) raise(PyExc_ValueError, "%s(): the kernel takes no dropout", op);
  const bool causal = args.get_bool(6, false);
  for (const Tensor* t : {&q, &k, &v}) check_same_dtype(op, out, *t);
  const int nd = q.ndim;
  bool ok = nd >= 2 && k.ndim == nd && v.ndim == nd && out.ndim == nd;
  for (int d = 0; ok && d < nd - 2; ++d)
    ok = k.shape[d] == q.shape[d] && v.shape[d] == q.shape[d] && out.shape[d] == q.shape[d];
  ok = ok && k.shape[nd - 1] == q.shape[nd - 1] && v.shape[nd - 2] == k.shape[nd - 2] &&
       out.shape[nd - 2] == q.shape[nd - 2] && out.shape[nd - 1] == v.shape[nd - 1];
  if (!ok)
    raise(PyExc_ValueError, "%s(): query %s, key %s, value %s, out %s: expected (..., L, E), (..., S, E), "
          "(..., S, Ev), (..., L, Ev) with the same batch dims", op, shape_str(q).c_str(), shape_str(k).c_str(),
          shape_str(v).c_str(), shape_str(out).c_str());
  const int64_t L = q.shape[nd - 2], E = q.shape[nd - 1], S = k.shape[nd - 2], Ev = v.shape[nd - 1];
  const double scale = args.has(7) ? args.get_double(7) : 1.0 / std::sqrt((double)E);
  if (out.numel == 0) return;
  const int64_t B = out.numel / (L * Ev);
  NoGil nogil(true);
  working_dispatch(op, out.dtype, [&](auto w0) {
    using W = decltype(w0);
    // (operands whose rows are not unit-stride go through contiguous copies)
    auto unit = [](const Tensor& t) { return t.shape[t.ndim - 1] <= 1 || t.stride[t.ndim - 1] == 1; };
    // out written in place where its rows are unit-stride (the (B, L, H, E) memory the
    // dispatcher gives 4-d attention), else through a contiguous buffer
    std::unique_ptr<Work<W>> po;
    W* obase;
    Tensor olay;
    if (out.dtype == Work<W>::kCode && unit(out)) {
      obase = (W*)out.data;
      olay = out;
    } else {
      po.reset(new Work<W>(out, false));
      obase = po->p;
      olay = Tensor::contiguous((char*)po->p, Work<W>::kCode, out.ndim, out.shape);
    }
    const int64_t ldo = L > 1 ? olay.stride[nd - 2] : Ev;
    std::vector<std::unique_ptr<Work<W>>> keep;
    const W* base[3];
    Tensor lay[3];
    const Tensor* src[3] = {&q, &k, &v};
    for (int i = 0; i < 3; ++i) {
      const Tensor& t = *src[i];
      if (t.dtype == Work<W>::kCode && unit(t)) {
        base[i] = (const W*)t.data;
        lay[i] = t;
      } else {
        keep.emplace_back(new Work<W>(t, true));
        base[i] = keep.back()->p;
        lay[i] = Tensor::contiguous((char*)keep.back()->p, Work<W>::kCode, t.ndim, t.shape);
      }
    }
    const int64_t ldq = L > 1 ? lay[0].stride[nd - 2] : E, ldk = S > 1 ? lay[1].stride[nd - 2] : E,
                  ldv = S > 1 ? lay[2].stride[nd - 2] : Ev;
    const W sc = (W)scale;
    parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
      std::vector<W> sbuf((size_t)(L * S)), scratch((size_t)S);
      for (int64_t b = b0; b < b1; ++b) {
        const W* qb = base[0] + batch_offset(lay[0], b);
        const W* kb = base[1] + batch_offset(lay[1], b);
        const W* vb = base[2] + batch_offset(lay[2], b);
        W* ob = obase + batch_offset(olay, b);
        W* s = sbuf.data();
        if (E > 0) gemm_pool<W>(false, true, L, S, E, qb, std::max<int64_t>(ldq, 1), kb, std::max<int64_t>(ldk, 1), s, S);
        else std::fill(s, s + L * S, W(0));
        auto weights_times_v = [&] {
          if (S > 0) gemm_pool<W>(false, false, L, Ev, S, s, S, vb, std::max<int64_t>(ldv, 1), ob, std::max<int64_t>(ldo, 1));
          else
            for (int64_t i = 0; i < L; ++i) std::fill(ob + i * ldo, ob + i * ldo + Ev, W(0));
        };
        if constexpr (std::is_same_v<W, float>) {
          if (!causal) {  // (the scale, the max, the exponentials and their sum: one call a row)
            for (int64_t i = 0; i < L; ++i) vsoftmax_scaled_safe_f32(s + i * S, S, sc);
            weights_times_v();
            continue;
          }
        }
        for (int64_t i = 0; i < L; ++i) {
          W* row = s + i * S;
          for (int64_t j = 0; j < S; ++j) row[j] = row[j] * sc;
          if (causal)
            for (int64_t j = i + 1; j < S; ++j) row[j] = -std::numeric_limits<W>::infinity();
          W m = -std::numeric_limits<W>::infinity();
          if constexpr (std::is_same_v<W, float>) {
            m = row_max(row, S);
          } else {
            for (int64_t j = 0; j < S; ++j) m = (row[j] > m || row[j] != row[j]) ? row[j] : m;
          }
          if (m == -std::numeric_limits<W>::infinity()) {  // every key hidden: attends to nothing
            std::fill(row, row + S, W(0));
            continue;
          }
          if constexpr (std::is_same_v<W, float>) {
            vsoftmax_f32(row, row, scratch.data(), S, false);
          } else {
            double sum = 0;
            for (int64_t j = 0; j < S; ++j) {
              row[j] = std::exp(row[j] - m);
              sum += row[j];
            }
            const W inv = (W)(1.0 / sum);
            for (int64_t j = 0; j < S; ++j) row[j] *= inv;
          }
        }
        weights_times_v();
      }
    });
    if (po) po->store();
  });
}
EMBER_KERNEL("scaled_dot_product_attention", k_attention);

}  // namespace

}  // namespace ember
