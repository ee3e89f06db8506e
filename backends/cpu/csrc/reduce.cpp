// Reductions: sum, prod, mean, max, min (over a set of dims) and argmax, argmin (one dim).
//
// Paths (see reduce_engine):
//   1. full reduction of a contiguous tensor: fixed 64K-element blocks reduced in parallel,
//      partials combined in order (result independent of the thread count)
//   2. reduced dims innermost + contiguous: parallel over outputs, vectorised run reduction
//   3. kept dims innermost + contiguous ("outer" reduction): row accumulation into a buffer
//   4. generic strided
// Float sums use 16 float accumulators over 2048-element blocks, combined in double.
#include <memory>

#include "rgeom.h"
#include "vecmath.h"

namespace ember {

namespace {

// Full reductions of contiguous memory: fixed blocks of kBlock elements reduced in parallel into
// part[block] = f(first, length), combined in order by the caller (thread-count independent).
constexpr int64_t kBlock = 65536;
inline int64_t num_blocks(int64_t n) { return (n + kBlock - 1) / kBlock; }
template <class A, class F>
void reduce_blocks(int64_t n, A* part, F&& f) {
  parallel_for(0, num_blocks(n), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) part[i] = f(i * kBlock, std::min(kBlock, n - i * kBlock));
  });
}

// ------------------------------------------------------------------------------------------------
// ops: ident() and combine() on the accumulator type acc_t; the loops of OpLoops widen elements
// to acc_t (through the compute type) and fold them with Op's combine().
template <class T, class A, class Op>
struct OpLoops {
  using acc_t = A;
  // the element at p widened to acc_t (bool bytes other than 0 / 1 count as 1: load_elem)
  static acc_t widen(const T* p) { return (acc_t)load_elem(p); }
  // V independent accumulators (vectorisable), combined in order, then the tail
  template <int V>
  static acc_t lanes(const T* p, int64_t n) {
    acc_t acc[V];
    for (int j = 0; j < V; ++j) acc[j] = Op::ident();
    int64_t i = 0;
    for (; i + V <= n; i += V)
      for (int j = 0; j < V; ++j) acc[j] = Op::combine(acc[j], widen(p + i + j));
    acc_t r = Op::ident();
    for (int j = 0; j < V; ++j) r = Op::combine(r, acc[j]);
    for (; i < n; ++i) r = Op::combine(r, widen(p + i));
    return r;
  }
  static acc_t strided(const char* p, int64_t st, int64_t n) {
    acc_t a = Op::ident();
    for (int64_t i = 0; i < n; ++i) a = Op::combine(a, widen((const T*)(p + i * st)));
    return a;
  }
  static void row(acc_t* acc, const T* p, int64_t n) {
    for (int64_t j = 0; j < n; ++j) acc[j] = Op::combine(acc[j], widen(p + j));
  }
};

// sum / prod accumulate in double (floats) or wrapping int64 (integers, bool)
template <class T>
using wide_acc_t = std::conditional_t<is_fp_v<T>, double, int64_t>;

template <class T>
struct SumOp : OpLoops<T, wide_acc_t<T>, SumOp<T>> {
  using acc_t = wide_acc_t<T>;
  static acc_t ident() { return 0; }
  static acc_t combine(acc_t a, acc_t b) { return add_elem(a, b); }
  static acc_t contig(const T* p, int64_t n) {
    if constexpr (std::is_same_v<T, float>) {
      return vsum_f32(p, n);  // (these two are what ember.compile's fused sums call too)
    } else if constexpr (std::is_same_v<T, double>) {
      return vsum_f64(p, n);
    } else if constexpr (is_fp_v<T>) {
      return row_sum(p, n);
    } else {
      uint64_t s = 0;
      for (int64_t i = 0; i < n; ++i) s += (uint64_t)(int64_t)load_elem(p + i);
      return (int64_t)s;
    }
  }
};

template <class T>
struct ProdOp : OpLoops<T, wide_acc_t<T>, ProdOp<T>> {
  using acc_t = wide_acc_t<T>;
  static acc_t ident() { return 1; }
  static acc_t combine(acc_t a, acc_t b) { return mul_elem(a, b); }
  static acc_t contig(const T* p, int64_t n) { return ProdOp::template lanes<8>(p, n); }
};

template <class T, bool IsMax>
struct MaxOp : OpLoops<T, compute_t<T>, MaxOp<T, IsMax>> {
  using acc_t = compute_t<T>;
  static acc_t ident() {
    if constexpr (std::is_same_v<T, bool>) return !IsMax;
    else if constexpr (is_fp_v<T>)
      return IsMax ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    else return IsMax ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
  }
  static acc_t combine(acc_t a, acc_t b) {  // NaN-propagating
    if constexpr (IsMax) return (a > b || a != a) ? a : b;
    else return (a < b || a != a) ? a : b;
  }
  static acc_t contig(const T* p, int64_t n) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      return run_extreme<IsMax>(p, n);
    else
      return MaxOp::template lanes<16>(p, n);
  }
  static void row(acc_t* acc, const T* p, int64_t n) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      rows_extreme<IsMax>(acc, p, n);
    } else {
      for (int64_t j = 0; j < n; ++j) acc[j] = MaxOp::combine(acc[j], MaxOp::widen(p + j));
    }
  }
};

// Accumulates rows of m elements into acc (path 3). A float32 sum adds the rows into a
// float row first (vectorised) and flushes it into acc's doubles every kFlush rows: sums of
// at most kFlush floats in float, as the lanes of row_sum.
template <class T, class Op>
struct RowAcc {
  static constexpr bool kFloatSum = std::is_same_v<Op, SumOp<float>>;
  static constexpr int kFlush = 64;
  typename Op::acc_t* acc;
  int64_t m;
  std::unique_ptr<float[]> fb;
  int count = 0;
  RowAcc(typename Op::acc_t* acc_, int64_t m_) : acc(acc_), m(m_) {
    for (int64_t j = 0; j < m; ++j) acc[j] = Op::ident();
    if constexpr (kFloatSum) fb.reset(new float[(size_t)m]());
  }
  void add(const T* p) {
    if constexpr (kFloatSum) {
      vacc_f32(fb.get(), p, m);
      if (++count == kFlush) flush();
    } else {
      Op::row(acc, p, m);
    }
  }
  void flush() {
    if constexpr (kFloatSum) {
      if (count == 0) return;
      for (int64_t j = 0; j < m; ++j) {
        acc[j] += fb[(size_t)j];
        fb[(size_t)j] = 0.0f;
      }
      count = 0;
    }
  }
};

// ------------------------------------------------------------------------------------------------
template <class T, class Op>
void reduce_engine(const char* opname, const Tensor& out, const Tensor& x, const bool* red, bool mean,
                   bool empty_ok) {
  using acc_t = typename Op::acc_t;
  RGeom g;
  build_rgeom(g, opname, out, x, red, /*merge_red=*/true);
  if (g.nout == 0) return;
  const int oc = out.dtype;
  const double inv = (mean && g.nred > 0) ? 1.0 / (double)g.nred : 1.0;
  auto store = [&](char* o, acc_t v) {
    if constexpr (std::is_floating_point_v<acc_t>) {
      if (mean) { store_as<double>(oc, o, (double)v * inv); return; }
    }
    store_as<acc_t>(oc, o, v);
  };
  if (g.nred == 0) {
    if (!empty_ok)
      raise(PyExc_RuntimeError, "%s(): cannot reduce over a zero-size dimension (input shape %s)", opname,
            shape_str(x).c_str());
    for_outputs(g, 0, g.nout, [&](const char*, char* o) {
      if (mean) store_as<double>(oc, o, std::numeric_limits<double>::quiet_NaN());
      else store(o, Op::ident());
    });
    return;
  }
  NoGil ng(x.numel >= kGilThreshold);
  constexpr int64_t isz = sizeof(T);

  // 1. full reduction over contiguous memory
  if (g.nk == 0 && g.nr == 1 && g.rx[0] == isz) {
    const T* p = (const T*)g.xb;
    const int64_t n = g.rs[0];
    const int64_t nb = num_blocks(n);
    if (nb == 1) {
      store(g.ob, Op::contig(p, n));
      return;
    }
    std::unique_ptr<acc_t[]> part(new acc_t[(size_t)nb]);  // not vector: vector<bool> packs bits
    reduce_blocks(n, part.get(), [&](int64_t i, int64_t len) { return Op::contig(p + i, len); });
    acc_t acc = Op::ident();
    for (int64_t i = 0; i < nb; ++i) acc = Op::combine(acc, part[(size_t)i]);
    store(g.ob, acc);
    return;
  }
  // 2. innermost reduced dim contiguous
  if (g.nr >= 1 && g.rx[0] == isz) {
    const int64_t grain = std::max<int64_t>(1, kGrain / g.nred);
    parallel_for(0, g.nout, grain, [&](int64_t b, int64_t e) {
      for_outputs(g, b, e, [&](const char* xp, char* o) {
        acc_t acc = Op::ident();
        for_reduced_runs(g, xp, [&](const char* p, int64_t, int64_t n) {
          acc = Op::combine(acc, Op::contig((const T*)p, n));
        });
        store(o, acc);
      });
    });
    return;
  }
  // 3. innermost kept dim contiguous: accumulate rows
  if (g.nk >= 1 && g.kx[0] == isz && g.nr >= 1) {
    constexpr int64_t CB = 1024;
    const int64_t m = g.ks[0];
    const int64_t ncb = (m + CB - 1) / CB;
    const int64_t nouter = g.nout / m;
    const int64_t tasks = nouter * ncb;
    if (tasks < get_num_threads() && g.nred * m >= 4 * kGrain) {
      // few, long columns (e.g. a sum over the batch dim): split the reduced rows into fixed
      // blocks reduced in parallel, partial rows combined in order (thread-count independent)
      const int64_t RB = std::max<int64_t>(1, kBlock / m);
      const int64_t nblk = (g.nred + RB - 1) / RB;
      std::unique_ptr<acc_t[]> part(new acc_t[(size_t)(nblk * m)]);
      for (int64_t outer = 0; outer < nouter; ++outer) {
        const char* xp;
        char* op;
        outer_offsets(g, outer, xp, op);
        parallel_for(0, nblk, 1, [&](int64_t b, int64_t e) {
          for (int64_t blk = b; blk < e; ++blk) {
            RowAcc<T, Op> acc(part.get() + blk * m, m);
            // walk reduced rows [blk*RB, min(nred, (blk+1)*RB)) with a multi-index
            int64_t r0 = blk * RB, r1 = std::min(g.nred, r0 + RB);
            int64_t idx[MAXD];
            const char* p = xp;
            int64_t rem = r0;
            for (int d = 0; d < g.nr; ++d) {
              idx[d] = rem % g.rs[d];
              rem /= g.rs[d];
              p += idx[d] * g.rx[d];
            }
            for (int64_t rr = r0; rr < r1; ++rr) {
              acc.add((const T*)p);
              for (int d = 0; d < g.nr; ++d) {
                p += g.rx[d];
                if (++idx[d] < g.rs[d]) break;
                p -= g.rx[d] * g.rs[d];
                idx[d] = 0;
              }
            }
            acc.flush();
          }
        });
        for (int64_t j = 0; j < m; ++j) {
          acc_t v = part[(size_t)j];
          for (int64_t blk = 1; blk < nblk; ++blk) v = Op::combine(v, part[(size_t)(blk * m + j)]);
          store(op + j * g.ko[0], v);
        }
      }
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kGrain / (g.nred * std::min(CB, m)));
    parallel_for(0, tasks, grain, [&](int64_t b, int64_t e) {
      acc_t acc[CB];
      for (int64_t t = b; t < e; ++t) {
        const char* xp;
        char* op;
        outer_offsets(g, t / ncb, xp, op);
        const int64_t c0 = t % ncb * CB, len = std::min(CB, m - c0);
        RowAcc<T, Op> rows(acc, len);
        for_reduced_runs(g, xp, [&](const char* p, int64_t s, int64_t n) {
          for (int64_t i = 0; i < n; ++i) rows.add((const T*)(p + i * s) + c0);
        });
        rows.flush();
        for (int64_t j = 0; j < len; ++j) store(op + (c0 + j) * g.ko[0], acc[j]);
      }
    });
    return;
  }
  // 4. generic
  const int64_t grain = std::max<int64_t>(1, kGrain / g.nred);
  parallel_for(0, g.nout, grain, [&](int64_t b, int64_t e) {
    for_outputs(g, b, e, [&](const char* xp, char* o) {
      acc_t acc = Op::ident();
      for_reduced_runs(g, xp, [&](const char* p, int64_t s, int64_t n) { acc = Op::combine(acc, Op::strided(p, s, n)); });
      store(o, acc);
    });
  });
}

// (out, x, dims) reductions of x's dtypes in InMask: out either of x's dtype (same_dtype) or of
// any dtype in Mask.
template <unsigned Mask, template <class> class Op, unsigned InMask = Mask>
void reduce_dims(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw, bool same_dtype, bool mean,
                 bool empty_ok) {
  Args args(op, a, n, kw, {"out", "x", "dims"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  if (same_dtype) check_same_dtype(op, out, x);
  bool red[MAXD];
  args.get_dims(2, x.ndim, red);
  if (!same_dtype) dispatch<Mask>(out.dtype, op, [](auto) {});
  dispatch<InMask>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    reduce_engine<T, Op<T>>(op, out, x, red, mean, empty_ok);
  });
}
template <class T> using MaxOf = MaxOp<T, true>;
template <class T> using MinOf = MaxOp<T, false>;

// (sum and prod read uint16 / uint32 / uint64 into their int64 or float results, as PyTorch's;
// they do not write them)
void k_sum(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  reduce_dims<M_ALL, SumOp, M_ALL | M_BAREBONES>("sum", a, n, kw, /*same_dtype=*/false, /*mean=*/false,
                                                 /*empty_ok=*/true);
}
EMBER_KERNEL("sum", k_sum);
void k_mean(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  reduce_dims<M_FLOAT, SumOp>("mean", a, n, kw, /*same_dtype=*/false, /*mean=*/true, /*empty_ok=*/true);
}
EMBER_KERNEL("mean", k_mean);
void k_prod(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  reduce_dims<M_ALL, ProdOp, M_ALL | M_BAREBONES>("prod", a, n, kw, /*same_dtype=*/false, /*mean=*/false,
                                                  /*empty_ok=*/true);
}
EMBER_KERNEL("prod", k_prod);
void k_max(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  reduce_dims<M_ALL, MaxOf>("max", a, n, kw, /*same_dtype=*/true, /*mean=*/false, /*empty_ok=*/false);
}
EMBER_KERNEL("max", k_max);
void k_min(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  reduce_dims<M_ALL, MinOf>("min", a, n, kw, /*same_dtype=*/true, /*mean=*/false, /*empty_ok=*/false);
}
EMBER_KERNEL("min", k_min);

// ------------------------------------------------------------------------------------------------
// argmax / argmin: first occurrence; NaN counts as the extreme value (first NaN wins).
template <bool IsMax>
void arg_reduce(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* const op = IsMax ? "argmax" : "argmin";
  Args args(op, a, n, kw, {"out", "x", "dim"}, 3);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_dtype(op, out, kInt64, "out");
  int dim = args.get_dim(2, x.ndim);
  RGeom g;
  build_rgeom_dim(g, op, out, x, dim);
  if (g.nout == 0) return;
  if (g.nred == 0)
    raise(PyExc_RuntimeError, "%s(): Expected reduction dim %d to have non-zero size.", op, dim);
  dispatch<M_ALL>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    using C = compute_t<T>;
    NoGil ng(x.numel >= kGilThreshold);
    const int64_t len = g.nr ? g.rs[0] : 1;
    const int64_t st = g.nr ? g.rx[0] : 0;
    const int64_t grain = std::max<int64_t>(1, kGrain / len);
    parallel_for(0, g.nout, grain, [&](int64_t b, int64_t e) {
      for_outputs(g, b, e, [&](const char* xp, char* o) {
        C best = load_elem((const T*)xp);
        int64_t bi = 0;
        if (!(best != best)) {
          for (int64_t i = 1; i < len; ++i) {
            const C v = load_elem((const T*)(xp + i * st));
            if (v != v) { bi = i; break; }
            if (IsMax ? (v > best) : (v < best)) { best = v; bi = i; }
          }
        }
        *(int64_t*)o = bi;
      });
    });
  });
}
EMBER_KERNEL("argmax", arg_reduce<true>);
EMBER_KERNEL("argmin", arg_reduce<false>);

// ------------------------------------------------------------------------------------------------
// var / std(out, x, dims, correction=1): two passes (mean, then squared deviations), in double
// for every float dtype, as PyTorch's CPU kernels: the squared deviations of float32 values near
// 1e30 do not overflow, and std takes the square root before the one rounding to out's dtype,
// so std([1e30, -1e30, 0, 1]) is 8.2e29 and std of values near 1e-30 is not 0 although their
// variance is (in float32).
template <class T>
double sqdev(const char* p, int64_t st, int64_t n, double mean) {
  constexpr int V = 8;
  double acc[V] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  if (st == (int64_t)sizeof(T)) {
    const T* q = (const T*)p;
    for (; i + V <= n; i += V)
      for (int j = 0; j < V; ++j) {
        const double d = (double)static_cast<compute_t<T>>(q[i + j]) - mean;
        acc[j] += d * d;
      }
  }
  double s = 0;
  for (int j = 0; j < V; ++j) s += acc[j];
  for (; i < n; ++i) {
    const double d = (double)static_cast<compute_t<T>>(*(const T*)(p + i * st)) - mean;
    s += d * d;
  }
  return s;
}

template <bool Sqrt>
void var_std(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* const op = Sqrt ? "std" : "var";
  Args args(op, a, n, kw, {"out", "x", "dims", "correction"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  bool red[MAXD];
  args.get_dims(2, x.ndim, red);
  const double correction = args.has(3) ? args.get_double(3) : 1.0;
  dispatch<M_FLOAT>(out.dtype, op, [](auto) {});
  dispatch<M_FLOAT>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    RGeom g;
    build_rgeom(g, op, out, x, red, true);
    if (g.nout == 0) return;
    const int oc = out.dtype;
    const double N = (double)g.nred;
    const double denom = std::max(N - correction, 0.0);
    auto finish = [&](char* o, double ss) {
      const double v = ss / denom;
      store_as<double>(oc, o, Sqrt ? std::sqrt(v) : v);
    };
    NoGil ng(x.numel >= kGilThreshold);
    if (g.nred == 0) {
      for_outputs(g, 0, g.nout, [&](const char*, char* o) { store_as<double>(oc, o, std::numeric_limits<double>::quiet_NaN()); });
      return;
    }
    constexpr int64_t isz = sizeof(T);
    if (g.nk == 0 && g.nr == 1 && g.rx[0] == isz) {  // full contiguous: parallel blocks
      const T* p = (const T*)g.xb;
      const int64_t len = g.rs[0];
      std::vector<double> part((size_t)num_blocks(len));
      reduce_blocks(len, part.data(), [&](int64_t i, int64_t k) { return SumOp<T>::contig(p + i, k); });
      double s = 0;
      for (double v : part) s += v;
      const double mean = s / N;
      reduce_blocks(len, part.data(),
                    [&](int64_t i, int64_t k) { return sqdev<T>((const char*)(p + i), isz, k, mean); });
      double ss = 0;
      for (double v : part) ss += v;
      finish(g.ob, ss);
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kGrain / (2 * g.nred));
    parallel_for(0, g.nout, grain, [&](int64_t b, int64_t e) {
      for_outputs(g, b, e, [&](const char* xp, char* o) {
        double s = 0;
        for_reduced_runs(g, xp, [&](const char* p, int64_t st, int64_t k) {
          s += st == isz ? SumOp<T>::contig((const T*)p, k) : SumOp<T>::strided(p, st, k);
        });
        const double mean = s / N;
        double ss = 0;
        for_reduced_runs(g, xp, [&](const char* p, int64_t st, int64_t k) { ss += sqdev<T>(p, st, k, mean); });
        finish(o, ss);
      });
    });
  });
}
EMBER_KERNEL("var", var_std<false>);
EMBER_KERNEL("std", var_std<true>);

}  // namespace

}  // namespace ember
