// Indexing: gather, scatter (index tensors are int64), nonzero.
#include <cstring>

#include <ember/ops.h>

#include "ember.h"

namespace ember {

namespace {

// Raises IndexError if an int64 index is outside [0, size).  A serial scan in its own function:
// inlined into the kernels it loses its registers (gather measured 1.7x slower).
__attribute__((noinline)) void check_index_bounds(const char* op, const Tensor& index, int dim, int64_t size) {
  const Tensor* ts[1] = {&index};
  ElemIter it;
  it.build(ts, 1, op);
  bool found = false;
  int64_t bad = 0;
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
  if (found)
    raise(PyExc_IndexError, "%s(): index %lld is out of bounds for dimension %d with size %lld", op, (long long)bad,
          dim, (long long)size);
}

inline int64_t dim_size(const Tensor& t, int d) { return t.ndim ? t.shape[d] : 1; }

void k_gather(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const GatherArgs<MAXD> args = parse_gather<MAXD>(a, n, kw);
  const Tensor &out = args.out, &x = args.x, &index = args.index;
  const int dim = args.dim;
  if (index.numel == 0) return;
  check_index_bounds("gather", index, dim, dim_size(x, dim));
  // index_select pattern (embedding lookups): whole rows of a contiguous x chosen by an index
  // broadcast over the other dims. Copy rows; the per-column walk below is cache-hostile.
  bool rows = dim == 0 && x.ndim >= 1 && x.is_contiguous() && out.is_contiguous();
  for (int d = 1; rows && d < x.ndim; ++d) rows = index.stride[d] == 0 && out.shape[d] == x.shape[d];
  if (rows) {
    const int64_t n = out.shape[0];
    const size_t row = (size_t)(out.numel / n) * (size_t)out.itemsize;
    const int64_t ist = index.stride[0];
    const int64_t* idx = (const int64_t*)index.data;
    char* po = out.data;
    const char* px = x.data;
    NoGil g(out.numel >= kGilThreshold);
    parallel_for(0, n, std::max<int64_t>(1, (int64_t)(kGrain * 4 / std::max<size_t>(1, row))),
                 [&](int64_t s, int64_t e) {
                   for (int64_t i = s; i < e; ++i)
                     std::memcpy(po + (size_t)i * row, px + (size_t)idx[i * ist] * row, row);
                 });
    return;
  }
  const DimWalk w(out, index, x, dim);
  const int64_t L = w.len, osd = w.sd[0], isd = w.sd[1], xsd = w.sd[2];
  NoGil g(index.numel >= kGilThreshold);
  dispatch_size(out.itemsize, "gather", [&](auto tag) {
    using T = EMBER_T(tag);
    w.run(
        [&](char* po, const char* pi, const char* px) {
          for (int64_t j = 0; j < L; ++j) *(T*)(po + j * osd) = *(const T*)(px + *(const int64_t*)(pi + j * isd) * xsd);
        },
        std::max<int64_t>(1, kGrain / std::max<int64_t>(1, L)));
  });
}
EMBER_KERNEL("gather", k_gather);

void k_scatter(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const ScatterArgs<MAXD> args = parse_scatter<MAXD>(a, n, kw);
  const Tensor &out = args.out, &index = args.index, &src = args.src;
  const int dim = args.dim;
  const ScatterMode mode = args.mode;
  if (index.numel == 0) return;
  check_index_bounds("scatter", index, dim, dim_size(out, dim));
  const DimWalk w(out, index, src, dim);
  const int64_t L = w.len, osd = w.sd[0], isd = w.sd[1], ssd = w.sd[2];
  // Each position (all non-dim coordinates) writes only its own slice of out, and walks dim
  // serially: parallel over positions is deterministic (last write wins in index order).
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, L));
  NoGil g(index.numel >= kGilThreshold);
  // f(T& dst, T v) for each index j along dim
  auto walk = [&](auto tag, auto f) {
    using T = EMBER_T(tag);
    w.run(
        [&](char* po, const char* pi, const char* ps) {
          for (int64_t j = 0; j < L; ++j) f(*(T*)(po + *(const int64_t*)(pi + j * isd) * osd), *(const T*)(ps + j * ssd));
        },
        grain);
  };
  if (mode == kScatterAssign) {
    dispatch_size(out.itemsize, "scatter", [&](auto tag) { walk(tag, [](auto& d, auto v) { d = v; }); });
    return;
  }
  dispatch<M_ALL>(out.dtype, "scatter", [&](auto tag) {
    walk(tag, [mode](auto& d, auto v) { d = mode == kScatterAdd ? add_elem(d, v) : mul_elem(d, v); });
  });
}
EMBER_KERNEL("scatter", k_scatter);

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
EMBER_KERNEL("nonzero", k_nonzero);

}  // namespace

}  // namespace ember
