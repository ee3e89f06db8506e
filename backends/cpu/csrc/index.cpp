// Indexing: gather, scatter (index tensors are int64), nonzero.
#include "ember.h"

namespace ember {

namespace {

// First out-of-range value of an int64 index tensor, or false.
bool find_bad_index(const Tensor& index, int64_t size, int64_t& bad) {
  const Tensor* ts[1] = {&index};
  ElemIter it;
  it.build(ts, 1, "index");
  bool found = false;
  auto f = [&](char* const* p, const int64_t* s, int64_t n) {
    if (found) return;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = *(const int64_t*)(p[0] + i * s[0]);
      if (v < 0 || v >= size) {
        found = true;
        bad = v;
        return;
      }
    }
  };
  if (it.numel > 0) it.run_range(0, it.numel, f);
  return found;
}

inline int64_t dim_size(const Tensor& t, int d) { return t.ndim ? t.shape[d] : 1; }
inline int64_t dim_stride(const Tensor& t, int d) { return t.ndim ? t.stride[d] : 0; }

void k_gather(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  // contract: gather(out, x, dim, index); also accepted: gather(out, x, index, dim=d)
  const bool index_third = n >= 3 && is_tensor_like(a[2]);
  Args args("gather", a, n, kw,
            index_third ? std::initializer_list<const char*>{"out", "x", "index", "dim"}
                        : std::initializer_list<const char*>{"out", "x", "dim", "index"},
            4);
  const int di = index_third ? 3 : 2, ii = index_third ? 2 : 3;
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  Tensor index = args.tensor(ii);
  int dim = args.get_dim(di, x.ndim);
  check_dtype("gather", index, kInt64, "index");
  check_same_dtype("gather", out, x);
  check_same_shape("gather", out, index);
  if (index.ndim != x.ndim)
    raise(PyExc_ValueError, "gather(): index %s and input %s must have the same number of dimensions",
          shape_str(index).c_str(), shape_str(x).c_str());
  for (int d = 0; d < x.ndim; ++d)
    if (d != dim && index.shape[d] > x.shape[d])
      raise(PyExc_ValueError, "gather(): size of index %s must not exceed the input %s in dimension %d",
            shape_str(index).c_str(), shape_str(x).c_str(), d);
  if (index.numel == 0) return;
  const int64_t size = dim_size(x, dim);
  int64_t bad;
  if (find_bad_index(index, size, bad))
    raise(PyExc_IndexError, "gather(): index %lld is out of bounds for dimension %d with size %lld", (long long)bad,
          dim, (long long)size);
  const int64_t L = dim_size(index, dim);
  const int64_t osd = dim_stride(out, dim) * out.itemsize, isd = dim_stride(index, dim) * 8,
                xsd = dim_stride(x, dim) * x.itemsize;
  Tensor o2 = drop_dim(out, dim), i2 = drop_dim(index, dim), x2 = drop_dim(x, dim);
  const Tensor* ts[3] = {&o2, &i2, &x2};
  ElemIter it;
  it.build_shape(i2.shape, i2.ndim, ts, 3);
  NoGil g(index.numel >= kGilThreshold);
  dispatch_size(out.itemsize, "gather", [&](auto tag) {
    using T = EMBER_T(tag);
    it.run(
        [&](char* const* p, const int64_t* s, int64_t m) {
          for (int64_t i = 0; i < m; ++i) {
            char* po = p[0] + i * s[0];
            const char* pi = p[1] + i * s[1];
            const char* px = p[2] + i * s[2];
            for (int64_t j = 0; j < L; ++j) *(T*)(po + j * osd) = *(const T*)(px + *(const int64_t*)(pi + j * isd) * xsd);
          }
        },
        std::max<int64_t>(1, kGrain / std::max<int64_t>(1, L)));
  });
}

void k_scatter(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("scatter", a, n, kw, {"out", "dim", "index", "src", "reduce"}, 4);
  Tensor out = args.out(0);
  Tensor index = args.tensor(2);
  Tensor src = args.tensor(3);
  int dim = args.get_dim(1, out.ndim);
  std::string reduce = args.get_str(4);
  int mode;  // 0 assign, 1 add, 2 multiply
  if (reduce.empty()) mode = 0;
  else if (reduce == "add" || reduce == "sum") mode = 1;
  else if (reduce == "multiply" || reduce == "prod") mode = 2;
  else raise(PyExc_ValueError, "scatter(): reduce argument must be None, 'add' or 'multiply', got '%s'", reduce.c_str());
  check_dtype("scatter", index, kInt64, "index");
  check_same_dtype("scatter", out, src);
  if (index.ndim != out.ndim || src.ndim != out.ndim)
    raise(PyExc_ValueError, "scatter(): index %s, src %s and self %s must have the same number of dimensions",
          shape_str(index).c_str(), shape_str(src).c_str(), shape_str(out).c_str());
  for (int d = 0; d < out.ndim; ++d) {
    if (d != dim && index.shape[d] > out.shape[d])
      raise(PyExc_ValueError, "scatter(): size of index %s must not exceed self %s in dimension %d",
            shape_str(index).c_str(), shape_str(out).c_str(), d);
    if (index.shape[d] > src.shape[d])
      raise(PyExc_ValueError, "scatter(): size of index %s must not exceed src %s in dimension %d",
            shape_str(index).c_str(), shape_str(src).c_str(), d);
  }
  if (index.numel == 0) return;
  const int64_t size = dim_size(out, dim);
  int64_t bad;
  if (find_bad_index(index, size, bad))
    raise(PyExc_IndexError, "scatter(): index %lld is out of bounds for dimension %d with size %lld", (long long)bad,
          dim, (long long)size);
  const int64_t L = dim_size(index, dim);
  const int64_t osd = dim_stride(out, dim) * out.itemsize, isd = dim_stride(index, dim) * 8,
                ssd = dim_stride(src, dim) * src.itemsize;
  Tensor o2 = drop_dim(out, dim), i2 = drop_dim(index, dim), s2 = drop_dim(src, dim);
  const Tensor* ts[3] = {&o2, &i2, &s2};
  ElemIter it;
  it.build_shape(i2.shape, i2.ndim, ts, 3);
  // Each position (all non-dim coordinates) writes only its own slice of out, and walks dim
  // serially: parallel over positions is deterministic (last write wins in index order).
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, L));
  NoGil g(index.numel >= kGilThreshold);
  if (mode == 0) {
    dispatch_size(out.itemsize, "scatter", [&](auto tag) {
      using T = EMBER_T(tag);
      it.run(
          [&](char* const* p, const int64_t* s, int64_t m) {
            for (int64_t i = 0; i < m; ++i) {
              char* po = p[0] + i * s[0];
              const char* pi = p[1] + i * s[1];
              const char* ps = p[2] + i * s[2];
              for (int64_t j = 0; j < L; ++j) *(T*)(po + *(const int64_t*)(pi + j * isd) * osd) = *(const T*)(ps + j * ssd);
            }
          },
          grain);
    });
    return;
  }
  dispatch<M_ALL>(out.dtype, "scatter", [&](auto tag) {
    using T = EMBER_T(tag);
    using C = compute_t<T>;
    it.run(
        [&](char* const* p, const int64_t* s, int64_t m) {
          for (int64_t i = 0; i < m; ++i) {
            char* po = p[0] + i * s[0];
            const char* pi = p[1] + i * s[1];
            const char* ps = p[2] + i * s[2];
            for (int64_t j = 0; j < L; ++j) {
              T* dst = (T*)(po + *(const int64_t*)(pi + j * isd) * osd);
              const T v = *(const T*)(ps + j * ssd);
              if constexpr (std::is_same_v<T, bool>) {
                *dst = mode == 1 ? (*dst || v) : (*dst && v);
              } else if constexpr (is_fp_v<T>) {
                *dst = cvt<T>(mode == 1 ? static_cast<C>(*dst) + static_cast<C>(v) : static_cast<C>(*dst) * static_cast<C>(v));
              } else {
                *dst = mode == 1 ? (T)((wrap_t<T>)*dst + (wrap_t<T>)v) : (T)((wrap_t<T>)*dst * (wrap_t<T>)v);
              }
            }
          }
        },
        grain);
  });
}

// Walk x in row-major (logical) order over linear indices [b, e): f(const char* p, const int64_t* idx)
template <class F>
void walk_logical(const Tensor& x, int64_t b, int64_t e, F&& f) {
  const int nd = x.ndim;
  int64_t idx[MAXD];
  int64_t rem = b;
  const char* p = x.data;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % x.shape[d];
    rem /= x.shape[d];
    p += idx[d] * x.stride[d] * x.itemsize;
  }
  for (int64_t i = b; i < e; ++i) {
    f(p, (const int64_t*)idx);
    for (int d = nd - 1; d >= 0; --d) {
      p += x.stride[d] * x.itemsize;
      if (++idx[d] < x.shape[d]) break;
      p -= x.shape[d] * x.stride[d] * x.itemsize;
      idx[d] = 0;
    }
  }
}

void k_nonzero(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("nonzero", a, n, kw, {"out", "x"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_dtype("nonzero", out, kInt64, "out");
  if (out.ndim != 2 || out.shape[1] != x.ndim)
    raise(PyExc_ValueError, "nonzero(): expected out of shape [n, %d], got %s", x.ndim, shape_str(out).c_str());
  dispatch<M_ALL>(x.dtype, "nonzero", [&](auto tag) {
    using T = EMBER_T(tag);
    const int64_t N = x.numel;
    constexpr int64_t B = 1 << 16;
    const int64_t nb = (N + B - 1) / B;
    std::vector<int64_t> cnt((size_t)std::max<int64_t>(nb, 1), 0);
    NoGil g(N >= kGilThreshold);
    parallel_for(0, nb, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t k = 0;
        walk_logical(x, c * B, std::min(N, (c + 1) * B), [&](const char* p, const int64_t*) { k += cvt<bool>(*(const T*)p); });
        cnt[(size_t)c] = k;
      }
    });
    int64_t total = 0;
    for (int64_t c = 0; c < nb; ++c) {
      int64_t k = cnt[(size_t)c];
      cnt[(size_t)c] = total;
      total += k;
    }
    if (total != out.shape[0])
      raise(PyExc_RuntimeError, "nonzero(): out has %lld rows but the input has %lld nonzero elements",
            (long long)out.shape[0], (long long)total);
    const int nd = x.ndim;
    const int64_t s0 = out.stride[0], s1 = out.stride[1];
    int64_t* o = (int64_t*)out.data;
    parallel_for(0, nb, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t row = cnt[(size_t)c];
        walk_logical(x, c * B, std::min(N, (c + 1) * B), [&](const char* p, const int64_t* idx) {
          if (cvt<bool>(*(const T*)p)) {
            for (int d = 0; d < nd; ++d) o[row * s0 + d * s1] = idx[d];
            ++row;
          }
        });
      }
    });
  });
}

}  // namespace

void register_index(std::vector<PyMethodDef>& defs) {
  defs.push_back(EMBER_DEF("gather", k_gather));
  defs.push_back(EMBER_DEF("scatter", k_scatter));
  defs.push_back(EMBER_DEF("nonzero", k_nonzero));
}

}  // namespace ember
