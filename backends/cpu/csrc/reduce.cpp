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

namespace ember {

namespace {

template <class A>
inline void store_acc(int code, char* o, A v) {
  switch (code) {
    case kBool: *(bool*)o = cvt<bool>(v); break;
    case kUInt8: *(uint8_t*)o = cvt<uint8_t>(v); break;
    case kInt8: *(int8_t*)o = cvt<int8_t>(v); break;
    case kInt16: *(int16_t*)o = cvt<int16_t>(v); break;
    case kInt32: *(int32_t*)o = cvt<int32_t>(v); break;
    case kInt64: *(int64_t*)o = cvt<int64_t>(v); break;
    case kFloat16: *(Half*)o = cvt<Half>(v); break;
    case kBFloat16: *(BFloat16*)o = cvt<BFloat16>(v); break;
    case kFloat32: *(float*)o = cvt<float>(v); break;
    case kFloat64: *(double*)o = cvt<double>(v); break;
    default: break;
  }
}

// ------------------------------------------------------------------------------------------------
// ops
template <class T>
struct SumOp {
  using acc_t = std::conditional_t<is_fp_v<T>, double, int64_t>;
  static constexpr bool kVecRow = true;
  static acc_t ident() { return 0; }
  static acc_t combine(acc_t a, acc_t b) {
    if constexpr (is_fp_v<T>) return a + b;
    else return (int64_t)((uint64_t)a + (uint64_t)b);
  }
  static acc_t contig(const T* p, int64_t n) {
    if constexpr (is_fp_v<T>) {
      using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
      constexpr int V = 16;
      constexpr int64_t B = 2048;
      double total = 0;
      int64_t i = 0;
      while (n - i >= V) {
        const int64_t m = std::min<int64_t>(B, (n - i) / V * V);
        A acc[V];
        for (int j = 0; j < V; ++j) acc[j] = 0;
        const T* q = p + i;
        for (int64_t k = 0; k < m; k += V)
          for (int j = 0; j < V; ++j) acc[j] += static_cast<A>(q[k + j]);
        double s = 0;
        for (int j = 0; j < V; ++j) s += acc[j];
        total += s;
        i += m;
      }
      for (; i < n; ++i) total += (double)static_cast<A>(p[i]);
      return total;
    } else {
      uint64_t s = 0;
      for (int64_t i = 0; i < n; ++i) s += (uint64_t)(int64_t)p[i];
      return (int64_t)s;
    }
  }
  static acc_t strided(const char* p, int64_t st, int64_t n) {
    acc_t a = 0;
    for (int64_t i = 0; i < n; ++i) a = combine(a, (acc_t) static_cast<compute_t<T>>(*(const T*)(p + i * st)));
    return a;
  }
  static void row(acc_t* acc, const T* p, int64_t n) {
    for (int64_t j = 0; j < n; ++j) acc[j] = combine(acc[j], (acc_t) static_cast<compute_t<T>>(p[j]));
  }
};

template <class T>
struct ProdOp {
  using acc_t = std::conditional_t<is_fp_v<T>, double, int64_t>;
  static acc_t ident() { return 1; }
  static acc_t combine(acc_t a, acc_t b) {
    if constexpr (is_fp_v<T>) return a * b;
    else return (int64_t)((uint64_t)a * (uint64_t)b);
  }
  static acc_t contig(const T* p, int64_t n) {
    constexpr int V = 8;
    acc_t acc[V];
    for (int j = 0; j < V; ++j) acc[j] = 1;
    int64_t i = 0;
    for (; i + V <= n; i += V)
      for (int j = 0; j < V; ++j) acc[j] = combine(acc[j], (acc_t) static_cast<compute_t<T>>(p[i + j]));
    acc_t r = 1;
    for (int j = 0; j < V; ++j) r = combine(r, acc[j]);
    for (; i < n; ++i) r = combine(r, (acc_t) static_cast<compute_t<T>>(p[i]));
    return r;
  }
  static acc_t strided(const char* p, int64_t st, int64_t n) {
    acc_t a = 1;
    for (int64_t i = 0; i < n; ++i) a = combine(a, (acc_t) static_cast<compute_t<T>>(*(const T*)(p + i * st)));
    return a;
  }
  static void row(acc_t* acc, const T* p, int64_t n) {
    for (int64_t j = 0; j < n; ++j) acc[j] = combine(acc[j], (acc_t) static_cast<compute_t<T>>(p[j]));
  }
};

template <class T, bool IsMax>
struct MaxOp {
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
    constexpr int V = 16;
    acc_t acc[V];
    for (int j = 0; j < V; ++j) acc[j] = ident();
    int64_t i = 0;
    for (; i + V <= n; i += V)
      for (int j = 0; j < V; ++j) acc[j] = combine(acc[j], static_cast<acc_t>(p[i + j]));
    acc_t r = ident();
    for (int j = 0; j < V; ++j) r = combine(r, acc[j]);
    for (; i < n; ++i) r = combine(r, static_cast<acc_t>(p[i]));
    return r;
  }
  static acc_t strided(const char* p, int64_t st, int64_t n) {
    acc_t a = ident();
    for (int64_t i = 0; i < n; ++i) a = combine(a, static_cast<acc_t>(*(const T*)(p + i * st)));
    return a;
  }
  static void row(acc_t* acc, const T* p, int64_t n) {
    for (int64_t j = 0; j < n; ++j) acc[j] = combine(acc[j], static_cast<acc_t>(p[j]));
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
      if (mean) { store_acc<double>(oc, o, (double)v * inv); return; }
    }
    store_acc<acc_t>(oc, o, v);
  };
  if (g.nred == 0) {
    if (!empty_ok)
      raise(PyExc_RuntimeError, "%s(): cannot reduce over a zero-size dimension (input shape %s)", opname,
            shape_str(x).c_str());
    for_outputs(g, 0, g.nout, [&](const char*, char* o) {
      if (mean) store_acc<double>(oc, o, std::numeric_limits<double>::quiet_NaN());
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
    constexpr int64_t B = 65536;
    const int64_t nb = (n + B - 1) / B;
    if (nb == 1) {
      store(g.ob, Op::contig(p, n));
      return;
    }
    std::unique_ptr<acc_t[]> part(new acc_t[(size_t)nb]);  // not vector: vector<bool> packs bits
    parallel_for(0, nb, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) part[(size_t)i] = Op::contig(p + i * B, std::min(B, n - i * B));
    });
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
      const int64_t RB = std::max<int64_t>(1, 65536 / m);
      const int64_t nblk = (g.nred + RB - 1) / RB;
      std::unique_ptr<acc_t[]> part(new acc_t[(size_t)(nblk * m)]);
      for (int64_t outer = 0; outer < nouter; ++outer) {
        const char* xp = g.xb;
        char* op = g.ob;
        {
          int64_t o2 = outer;
          for (int d = 1; d < g.nk; ++d) {
            int64_t i = o2 % g.ks[d];
            o2 /= g.ks[d];
            xp += i * g.kx[d];
            op += i * g.ko[d];
          }
        }
        parallel_for(0, nblk, 1, [&](int64_t b, int64_t e) {
          for (int64_t blk = b; blk < e; ++blk) {
            acc_t* acc = part.get() + blk * m;
            for (int64_t j = 0; j < m; ++j) acc[j] = Op::ident();
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
              Op::row(acc, (const T*)p, m);
              for (int d = 0; d < g.nr; ++d) {
                p += g.rx[d];
                if (++idx[d] < g.rs[d]) break;
                p -= g.rx[d] * g.rs[d];
                idx[d] = 0;
              }
            }
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
        int64_t outer = t / ncb, cb = t % ncb;
        const char* xp = g.xb;
        char* op = g.ob;
        for (int d = 1; d < g.nk; ++d) {
          int64_t i = outer % g.ks[d];
          outer /= g.ks[d];
          xp += i * g.kx[d];
          op += i * g.ko[d];
        }
        const int64_t c0 = cb * CB, len = std::min(CB, m - c0);
        for (int64_t j = 0; j < len; ++j) acc[j] = Op::ident();
        for_reduced_runs(g, xp, [&](const char* p, int64_t s, int64_t n) {
          for (int64_t i = 0; i < n; ++i) Op::row(acc, (const T*)(p + i * s) + c0, len);
        });
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

void k_sum(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("sum", a, n, kw, {"out", "x", "dims"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  bool red[MAXD];
  args.get_dims(2, x.ndim, red);
  dispatch<M_ALL>(out.dtype, "sum", [](auto) {});
  dispatch<M_ALL>(x.dtype, "sum", [&](auto tag) {
    using T = EMBER_T(tag);
    reduce_engine<T, SumOp<T>>("sum", out, x, red, false, true);
  });
}

void k_mean(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("mean", a, n, kw, {"out", "x", "dims"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  bool red[MAXD];
  args.get_dims(2, x.ndim, red);
  dispatch<M_FLOAT>(out.dtype, "mean", [](auto) {});
  dispatch<M_FLOAT>(x.dtype, "mean", [&](auto tag) {
    using T = EMBER_T(tag);
    reduce_engine<T, SumOp<T>>("mean", out, x, red, true, true);
  });
}

void k_prod(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("prod", a, n, kw, {"out", "x", "dims"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  bool red[MAXD];
  args.get_dims(2, x.ndim, red);
  dispatch<M_ALL>(out.dtype, "prod", [](auto) {});
  dispatch<M_ALL>(x.dtype, "prod", [&](auto tag) {
    using T = EMBER_T(tag);
    reduce_engine<T, ProdOp<T>>("prod", out, x, red, false, true);
  });
}

template <bool IsMax>
void minmax_reduce(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args(op, a, n, kw, {"out", "x", "dims"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_same_dtype(op, out, x);
  bool red[MAXD];
  args.get_dims(2, x.ndim, red);
  dispatch<M_ALL>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    reduce_engine<T, MaxOp<T, IsMax>>(op, out, x, red, false, false);
  });
}
void k_max(PyObject* const* a, Py_ssize_t n, PyObject* kw) { minmax_reduce<true>("max", a, n, kw); }
void k_min(PyObject* const* a, Py_ssize_t n, PyObject* kw) { minmax_reduce<false>("min", a, n, kw); }

// ------------------------------------------------------------------------------------------------
// argmax / argmin: first occurrence; NaN counts as the extreme value (first NaN wins).
template <bool IsMax>
void arg_reduce(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args(op, a, n, kw, {"out", "x", "dim"}, 3);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_dtype(op, out, kInt64, "out");
  int dim = args.get_dim(2, x.ndim);
  bool red[MAXD] = {false};
  if (x.ndim > 0) red[dim] = true;
  RGeom g;
  build_rgeom(g, op, out, x, red, false);
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
        C best = static_cast<C>(*(const T*)xp);
        int64_t bi = 0;
        if (!(best != best)) {
          for (int64_t i = 1; i < len; ++i) {
            const C v = static_cast<C>(*(const T*)(xp + i * st));
            if (v != v) { bi = i; break; }
            if (IsMax ? (v > best) : (v < best)) { best = v; bi = i; }
          }
        }
        *(int64_t*)o = bi;
      });
    });
  });
}
void k_argmax(PyObject* const* a, Py_ssize_t n, PyObject* kw) { arg_reduce<true>("argmax", a, n, kw); }
void k_argmin(PyObject* const* a, Py_ssize_t n, PyObject* kw) { arg_reduce<false>("argmin", a, n, kw); }

// ------------------------------------------------------------------------------------------------
// var(out, x, dims, correction=1): two passes (mean, then squared deviations), in double.
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

void k_var(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("var", a, n, kw, {"out", "x", "dims", "correction"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  bool red[MAXD];
  args.get_dims(2, x.ndim, red);
  const double correction = args.has(3) ? args.get_double(3) : 1.0;
  dispatch<M_FLOAT>(out.dtype, "var", [](auto) {});
  dispatch<M_FLOAT>(x.dtype, "var", [&](auto tag) {
    using T = EMBER_T(tag);
    RGeom g;
    build_rgeom(g, "var", out, x, red, true);
    if (g.nout == 0) return;
    const int oc = out.dtype;
    const double N = (double)g.nred;
    const double denom = std::max(N - correction, 0.0);
    NoGil ng(x.numel >= kGilThreshold);
    if (g.nred == 0) {
      for_outputs(g, 0, g.nout, [&](const char*, char* o) { store_acc<double>(oc, o, std::numeric_limits<double>::quiet_NaN()); });
      return;
    }
    constexpr int64_t isz = sizeof(T);
    if (g.nk == 0 && g.nr == 1 && g.rx[0] == isz) {  // full contiguous: parallel blocks
      const T* p = (const T*)g.xb;
      const int64_t len = g.rs[0];
      constexpr int64_t B = 65536;
      const int64_t nb = (len + B - 1) / B;
      std::vector<double> part((size_t)nb);
      parallel_for(0, nb, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) part[(size_t)i] = SumOp<T>::contig(p + i * B, std::min(B, len - i * B));
      });
      double s = 0;
      for (double v : part) s += v;
      const double mean = s / N;
      parallel_for(0, nb, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          part[(size_t)i] = sqdev<T>((const char*)(p + i * B), isz, std::min(B, len - i * B), mean);
      });
      double ss = 0;
      for (double v : part) ss += v;
      store_acc<double>(oc, g.ob, ss / denom);
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
        store_acc<double>(oc, o, ss / denom);
      });
    });
  });
}

}  // namespace

void register_reduce(std::vector<PyMethodDef>& defs) {
#define R(NAME) defs.push_back(EMBER_DEF(#NAME, k_##NAME))
  R(sum); R(mean); R(prod); R(max); R(min); R(argmax); R(argmin); R(var);
#undef R
}

}  // namespace ember
