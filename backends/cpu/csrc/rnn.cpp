// The LSTM cell's pointwise part as one pass, forward and backward (PyTorch's gate order
// i, f, g, o): the recurrent step becomes a GEMM, an add and this kernel instead of a dozen
// recorded elementwise ops on chunks of the gates.
//   lstm_cell           out (2, B, H): h = o * tanh(c'), c' = f * c + i * g, with
//                       i, f, o = sigmoid(gates[:, 0:H], [H:2H], [3H:4H]), g = tanh([2H:3H])
//   lstm_cell_backward  d_gates (B, 4H), d_c (B, H) from the packed gradient (2, B, H) of
//                       (h, c'), the gates, c and the forward's packed output
#include <cmath>

#include "ember.h"

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

}  // namespace

}  // namespace ember
