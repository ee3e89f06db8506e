// The calling conventions of the hand-written kernels every native backend implements
// (sort, gather, scatter, im2col, col2im, max_pool, uniform, normal, bmm): each op's
// arguments parsed and checked once, with one set of error messages. A backend calls
// parse_<op><MaxDims>(args, nargs, kwnames) and gets the checked operands; what it does with
// them (threads, launches) is its own.
//
// Also the geometry both backends derive from these arguments: ConvGeom (convolution and
// pooling windows padded to 3 spatial dims) and blas_layout (whether a strided matrix can go
// to a BLAS as it is).
#pragma once

#include <algorithm>
#include <string>

#include "philox.h"
#include "python.h"

#pragma GCC visibility push(hidden)

namespace ember {

// ---- sort(values, indices, x, dim=-1, descending=False, stable=True) -------------------------
// Always stable: ties keep their order; NaN sorts above every number.
template <int N>
struct SortArgs {
  TensorT<N> values, indices, x;
  int dim;
  bool descending;
};
template <int N>
SortArgs<N> parse_sort(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  ArgsT<N> args("sort", a, n, kw, {"values", "indices", "x", "dim", "descending", "stable"}, 3);
  SortArgs<N> r{args.out(0), args.out(1), args.tensor(2), 0, false};
  r.dim = args.has(3) ? args.get_dim(3, r.x.ndim) : (r.x.ndim ? r.x.ndim - 1 : 0);
  r.descending = args.get_bool(4, false);
  (void)args.get_bool(5, true);  // always stable
  check_same_dtype("sort", r.values, r.x);
  check_dtype("sort", r.indices, kInt64, "indices");
  check_same_shape("sort", r.values, r.x);
  check_same_shape("sort", r.indices, r.x);
  return r;
}

// ---- gather(out, x, dim, index); also accepted: gather(out, x, index, dim=d) ------------------
template <int N>
struct GatherArgs {
  TensorT<N> out, x, index;
  int dim;
};
template <int N>
GatherArgs<N> parse_gather(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const bool index_third = n >= 3 && is_tensor_like(a[2]);
  ArgsT<N> args("gather", a, n, kw,
                index_third ? std::initializer_list<const char*>{"out", "x", "index", "dim"}
                            : std::initializer_list<const char*>{"out", "x", "dim", "index"},
                4);
  const int di = index_third ? 3 : 2, ii = index_third ? 2 : 3;
  GatherArgs<N> r{args.out(0), args.tensor(1), args.tensor(ii), 0};
  const TensorT<N>& x = r.x;
  const TensorT<N>& index = r.index;
  r.dim = args.get_dim(di, x.ndim);
  check_dtype("gather", index, kInt64, "index");
  check_same_dtype("gather", r.out, x);
  check_same_shape("gather", r.out, index);
  if (index.ndim != x.ndim)
    raise(PyExc_ValueError, "gather(): index %s and input %s must have the same number of dimensions",
          shape_str(index).c_str(), shape_str(x).c_str());
  for (int d = 0; d < x.ndim; ++d)
    if (d != r.dim && index.shape[d] > x.shape[d])
      raise(PyExc_ValueError, "gather(): size of index %s must not exceed the input %s in dimension %d",
            shape_str(index).c_str(), shape_str(x).c_str(), d);
  return r;
}

// ---- scatter(out, dim, index, src, reduce=None): out[index[i]] (op)= src[i] along dim ---------
enum ScatterMode { kScatterAssign, kScatterAdd, kScatterMultiply };
template <int N>
struct ScatterArgs {
  TensorT<N> out, index, src;
  int dim;
  ScatterMode mode;
  std::string reduce;  // as given, for messages
};
template <int N>
ScatterArgs<N> parse_scatter(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  ArgsT<N> args("scatter", a, n, kw, {"out", "dim", "index", "src", "reduce"}, 4);
  ScatterArgs<N> r{args.out(0), args.tensor(2), args.tensor(3), 0, kScatterAssign, args.get_str(4)};
  const TensorT<N>& out = r.out;
  const TensorT<N>& index = r.index;
  const TensorT<N>& src = r.src;
  r.dim = args.get_dim(1, out.ndim);
  if (r.reduce.empty()) r.mode = kScatterAssign;
  else if (r.reduce == "add" || r.reduce == "sum") r.mode = kScatterAdd;
  else if (r.reduce == "multiply" || r.reduce == "prod") r.mode = kScatterMultiply;
  else raise(PyExc_ValueError, "scatter(): reduce argument must be None, 'add' or 'multiply', got '%s'", r.reduce.c_str());
  check_dtype("scatter", index, kInt64, "index");
  check_same_dtype("scatter", out, src);
  if (index.ndim != out.ndim || src.ndim != out.ndim)
    raise(PyExc_ValueError, "scatter(): index %s, src %s and self %s must have the same number of dimensions",
          shape_str(index).c_str(), shape_str(src).c_str(), shape_str(out).c_str());
  for (int d = 0; d < out.ndim; ++d) {
    if (d != r.dim && index.shape[d] > out.shape[d])
      raise(PyExc_ValueError, "scatter(): size of index %s must not exceed self %s in dimension %d",
            shape_str(index).c_str(), shape_str(out).c_str(), d);
    if (index.shape[d] > src.shape[d])
      raise(PyExc_ValueError, "scatter(): size of index %s must not exceed src %s in dimension %d",
            shape_str(index).c_str(), shape_str(src).c_str(), d);
  }
  return r;
}

// ---- uniform(out, low, high, seed, offset), normal(out, mean, std, seed, offset) -------------
// The numbers are Philox4x32-10's (ember/philox.h: random_value).
template <int N>
struct RandomArgs {
  const char* op;  // "uniform" / "normal"
  TensorT<N> out;
  RandomDraw draw;
};
template <int N>
RandomArgs<N> parse_random(bool normal, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* op = normal ? "normal" : "uniform";
  ArgsT<N> args(op, a, n, kw,
                normal ? std::initializer_list<const char*>{"out", "mean", "std", "seed", "offset"}
                       : std::initializer_list<const char*>{"out", "low", "high", "seed", "offset"},
                5);
  RandomArgs<N> r{op, args.out(0), {args.get_double(1), args.get_double(2), args.get_u64(3), args.get_u64(4)}};
  if (!is_floating_code(r.out.dtype)) raise_dtype(op, r.out.dtype);
  return r;
}

// ---- bmm(out, a, b): out[B, n, m] = a[B, n, k] @ b[B, k, m] -----------------------------------
template <int N>
struct BmmArgs {
  TensorT<N> out, a, b;
};
template <int N>
BmmArgs<N> parse_bmm(PyObject* const* a_, Py_ssize_t n_, PyObject* kw_) {
  ArgsT<N> args("bmm", a_, n_, kw_, {"out", "a", "b"}, 3);
  BmmArgs<N> r{args.out(0), args.tensor(1), args.tensor(2)};
  const TensorT<N>&out = r.out, &a = r.a, &b = r.b;
  check_same_dtype("bmm", out, a);
  check_same_dtype("bmm", out, b);
  check_same_device("bmm", out, a);
  check_same_device("bmm", out, b);
  if (a.ndim != 3 || b.ndim != 3 || out.ndim != 3)
    raise(PyExc_ValueError, "bmm(): expected 3-D tensors, got %s, %s and out %s", shape_str(a).c_str(),
          shape_str(b).c_str(), shape_str(out).c_str());
  if (b.shape[0] != a.shape[0] || b.shape[1] != a.shape[2] || out.shape[0] != a.shape[0] ||
      out.shape[1] != a.shape[1] || out.shape[2] != b.shape[2])
    raise(PyExc_ValueError, "bmm(): shape mismatch: a %s, b %s, out %s", shape_str(a).c_str(), shape_str(b).c_str(),
          shape_str(out).c_str());
  return r;
}

// Can a [rows, cols] matrix with element strides (sr, sc) go to a BLAS as it is? If so, as a
// row-major (colmajor = false) or column-major (colmajor = true, i.e. transposed) matrix with
// leading dimension ld.
inline bool blas_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, bool& colmajor, int64_t& ld) {
  if (sc == 1 || cols == 1) {
    ld = rows == 1 ? std::max<int64_t>(1, cols) : sr;
    if (ld >= std::max<int64_t>(1, cols)) { colmajor = false; return true; }
  }
  if (sr == 1 || rows == 1) {
    ld = cols == 1 ? std::max<int64_t>(1, rows) : sc;
    if (ld >= std::max<int64_t>(1, rows)) { colmajor = true; return true; }
  }
  return false;
}

// ---- convolution and pooling: 1 to 3 spatial dims, padded to 3 -------------------------------
//   im2col(out, x, kernel, dilation, padding, stride, blocks, value)
//       x (N, C, *sp) -> out (N, C, *kernel, *blocks), any strides of out (the dispatcher
//       passes a permuted view to get the (C*K, N*L) layout one GEMM wants). Positions outside
//       the input (left padding, or the right padding that `blocks` implies) read `value`.
//   col2im(out, cols, kernel, dilation, padding, stride, size)
//       cols (N, C, *kernel, *blocks) summed into out (N, C, *size); positions outside dropped.
//   max_pool(values, indices, x, kernel, dilation, padding, stride, blocks)
//       window maxima (NaN wins, as PyTorch) and flat indices into each input plane.
// Index 0 of the padded dims is depth, 1 height, 2 width; missing leading dims have size 1.
struct ConvGeom {
  int64_t N = 1, C = 1;
  int64_t I[3] = {1, 1, 1}, K[3] = {1, 1, 1}, D[3] = {1, 1, 1}, P[3] = {0, 0, 0}, S[3] = {1, 1, 1},
          B[3] = {1, 1, 1};  // input size, kernel, dilation, padding, stride, output blocks
};

// A position in im2col's output (N, C, K0, K1, K2, B0, B1, B2): batch, channel, kernel
// offsets, output blocks. max_pool's outputs (N, C, B0, B1, B2) are the same without k.
struct ConvPos {
  int64_t n, c, k[3], b[3];
};
// The position of e, a row-major index over (N, C, [K0, K1, K2,] B0, B1[, B2]): the kernel
// dims only when Kernel, the width B2 only when Width (a caller that walks whole rows of
// width B2 counts rows); left-out coordinates are 0.
template <bool Kernel, bool Width>
EMBER_HD EMBER_INLINE ConvPos conv_pos(const ConvGeom& g, int64_t e) {
  ConvPos p{0, 0, {0, 0, 0}, {0, 0, 0}};
  EMBER_UNROLL
  for (int d = Width ? 2 : 1; d >= 0; --d) {
    p.b[d] = e % g.B[d];
    e /= g.B[d];
  }
  if constexpr (Kernel) {
    EMBER_UNROLL
    for (int d = 2; d >= 0; --d) {
      p.k[d] = e % g.K[d];
      e /= g.K[d];
    }
  }
  p.c = e % g.C;
  p.n = e / g.C;
  return p;
}
// The input coordinate along padded dim d that kernel offset k of output block b reads
// (outside [0, I[d]): padding).
EMBER_HD EMBER_INLINE int64_t conv_in(const ConvGeom& g, int d, int64_t b, int64_t k) {
  return b * g.S[d] - g.P[d] + k * g.D[d];
}
// f(i0, i1) for each kernel row (k0, k1) of output block (b0, b1) that lies inside the input.
template <class F>
EMBER_HD EMBER_INLINE void for_window_rows(const ConvGeom& g, int64_t b0, int64_t b1, F&& f) {
  for (int64_t k0 = 0; k0 < g.K[0]; ++k0) {
    const int64_t i0 = conv_in(g, 0, b0, k0);
    if (i0 < 0 || i0 >= g.I[0]) continue;
    for (int64_t k1 = 0; k1 < g.K[1]; ++k1) {
      const int64_t i1 = conv_in(g, 1, b1, k1);
      if (i1 < 0 || i1 >= g.I[1]) continue;
      f(i0, i1);
    }
  }
}

// Strides / sizes of t's dims [first, first + nd) padded to 3 (stride 0, size 1 in front).
template <int N>
void strides3(const TensorT<N>& t, int first, int nd, int64_t* st) {
  for (int j = 0; j < 3; ++j) st[j] = 0;
  for (int i = 0; i < nd; ++i) st[3 - nd + i] = t.stride[first + i];
}
template <int N>
void shape3(const TensorT<N>& t, int first, int nd, int64_t* sh) {
  for (int j = 0; j < 3; ++j) sh[j] = 1;
  for (int i = 0; i < nd; ++i) sh[3 - nd + i] = t.shape[first + i];
}

namespace detail {

// the number of spatial dims of an (N, C, *sp) tensor
template <int N>
int spatial_dims(const char* op, const TensorT<N>& t) {
  const int nd = t.ndim - 2;
  if (nd < 1 || nd > 3)
    raise(PyExc_ValueError, "%s(): expected a tensor with 1 to 3 spatial dims, got %s", op, shape_str(t).c_str());
  return nd;
}

// The geometry of a call on the (N, C, *sp) tensor t (its spatial dims nd, batch, channels
// and sizes I): kernel, dilation, padding and stride at args[first .. first + 3], and the
// sizes at args[first + 4] (the output blocks, or col2im's size) into sizes.
template <int N>
ConvGeom read_conv_geom(const ArgsT<N>& args, int first, const TensorT<N>& t, int& nd, int64_t* sizes) {
  nd = spatial_dims(args.op, t);
  ConvGeom g;
  int64_t k[3], d[3], p[3], s[3];
  args.get_ints(first, nd, k, "spatial dim");
  args.get_ints(first + 1, nd, d, "spatial dim");
  args.get_ints(first + 2, nd, p, "spatial dim");
  args.get_ints(first + 3, nd, s, "spatial dim");
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    if (k[i] <= 0 || d[i] <= 0 || s[i] <= 0 || p[i] < 0)
      raise(PyExc_ValueError, "%s(): kernel, dilation and stride must be positive and padding non-negative", args.op);
    g.K[j] = k[i];
    g.D[j] = d[i];
    g.P[j] = p[i];
    g.S[j] = s[i];
  }
  args.get_ints(first + 4, nd, sizes, "spatial dim");
  g.N = t.shape[0];
  g.C = t.shape[1];
  shape3(t, 2, nd, g.I);
  return g;
}

}  // namespace detail

template <int N>
struct Im2colArgs {
  TensorT<N> out, x;
  int nd;
  ConvGeom g;
  double value;
};
template <int N>
Im2colArgs<N> parse_im2col(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  ArgsT<N> args("im2col", a, n, kw, {"out", "x", "kernel", "dilation", "padding", "stride", "blocks", "value"}, 7);
  Im2colArgs<N> r{args.out(0), args.tensor(1), 0, {}, 0.0};
  const TensorT<N>&out = r.out, &x = r.x;
  check_same_dtype("im2col", out, x);
  int64_t blocks[3];
  r.g = detail::read_conv_geom(args, 2, x, r.nd, blocks);
  const int nd = r.nd;
  r.value = args.has(7) ? args.get_double(7) : 0.0;
  if (out.ndim != 2 + 2 * nd || out.shape[0] != x.shape[0] || out.shape[1] != x.shape[1])
    raise(PyExc_ValueError, "im2col(): out %s does not match input %s", shape_str(out).c_str(), shape_str(x).c_str());
  for (int i = 0; i < nd; ++i)
    if (out.shape[2 + i] != r.g.K[3 - nd + i] || out.shape[2 + nd + i] != blocks[i])
      raise(PyExc_ValueError, "im2col(): out %s must be (N, C, *kernel, *blocks)", shape_str(out).c_str());
  shape3(out, 2 + nd, nd, r.g.B);
  return r;
}

template <int N>
struct Col2imArgs {
  TensorT<N> out, cols;
  int nd;
  ConvGeom g;
};
template <int N>
Col2imArgs<N> parse_col2im(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  ArgsT<N> args("col2im", a, n, kw, {"out", "cols", "kernel", "dilation", "padding", "stride", "size"}, 7);
  Col2imArgs<N> r{args.out(0), args.tensor(1), 0, {}};
  const TensorT<N>&out = r.out, &cols = r.cols;
  check_same_dtype("col2im", out, cols);
  int64_t size[3];
  r.g = detail::read_conv_geom(args, 2, out, r.nd, size);
  const int nd = r.nd;
  if (cols.ndim != 2 + 2 * nd || cols.shape[0] != out.shape[0] || cols.shape[1] != out.shape[1])
    raise(PyExc_ValueError, "col2im(): cols %s must be (N, C, *kernel, *blocks) for out %s", shape_str(cols).c_str(),
          shape_str(out).c_str());
  for (int i = 0; i < nd; ++i)
    if (cols.shape[2 + i] != r.g.K[3 - nd + i] || out.shape[2 + i] != size[i])
      raise(PyExc_ValueError, "col2im(): cols %s / out %s do not match the kernel and size", shape_str(cols).c_str(),
            shape_str(out).c_str());
  shape3(cols, 2 + nd, nd, r.g.B);
  return r;
}

template <int N>
struct MaxPoolArgs {
  TensorT<N> values, indices, x;
  int nd;
  ConvGeom g;
};
template <int N>
MaxPoolArgs<N> parse_max_pool(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  ArgsT<N> args("max_pool", a, n, kw, {"values", "indices", "x", "kernel", "dilation", "padding", "stride", "blocks"},
                8);
  MaxPoolArgs<N> r{args.out(0), args.out(1), args.tensor(2), 0, {}};
  const TensorT<N>&values = r.values, &x = r.x;
  check_same_dtype("max_pool", values, x);
  check_dtype("max_pool", r.indices, kInt64, "indices");
  check_same_shape("max_pool", values, r.indices);
  int64_t blocks[3];
  r.g = detail::read_conv_geom(args, 3, x, r.nd, blocks);
  const int nd = r.nd;
  if (values.ndim != 2 + nd || values.shape[0] != x.shape[0] || values.shape[1] != x.shape[1])
    raise(PyExc_ValueError, "max_pool(): values %s do not match input %s", shape_str(values).c_str(),
          shape_str(x).c_str());
  for (int i = 0; i < nd; ++i)
    if (values.shape[2 + i] != blocks[i])
      raise(PyExc_ValueError, "max_pool(): values %s must be (N, C, *blocks)", shape_str(values).c_str());
  shape3(values, 2, nd, r.g.B);
  return r;
}

}  // namespace ember

#pragma GCC visibility pop
