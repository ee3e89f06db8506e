// Cumulative ops along one dim: cumsum, cumprod.  Accumulate in double (floats) / int64 (ints).
#include "rgeom.h"

namespace ember {

namespace {

template <bool IsProd>
void scan_op(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* const op = IsProd ? "cumprod" : "cumsum";
  Args args(op, a, n, kw, {"out", "x", "dim"}, 3);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  int dim = args.get_dim(2, x.ndim);
  dispatch<M_ALL>(out.dtype, op, [](auto) {});
  RGeom g;
  build_rgeom_dim(g, op, out, x, dim, /*same_shape=*/true);
  if (g.nout == 0 || g.nred == 0) return;
  const int oc = out.dtype;
  // (x may be uint16 / uint32 / uint64, as in PyTorch, which scans them into int64 only)
  dispatch<M_ALL | M_BAREBONES>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    using A = std::conditional_t<is_fp_v<T>, double, int64_t>;
    auto comb = [](A acc, A v) -> A { return IsProd ? mul_elem(acc, v) : add_elem(acc, v); };
    const A ident = IsProd ? A(1) : A(0);
    NoGil ng(x.numel >= kGilThreshold);
    const int64_t len = g.nr ? g.rs[0] : 1;
    const int64_t sx = g.nr ? g.rx[0] : 0, so = g.nr ? g.ro[0] : 0;
    const bool same = out.dtype == x.dtype;
    // column-block path: kept innermost dim contiguous in x and out, scan dim outside it
    if (g.nk >= 1 && g.nr == 1 && same && g.kx[0] == (int64_t)sizeof(T) && g.ko[0] == (int64_t)sizeof(T)) {
      constexpr int64_t CB = 512;
      const int64_t m = g.ks[0];
      const int64_t ncb = (m + CB - 1) / CB;
      const int64_t tasks = (g.nout / m) * ncb;
      const int64_t grain = std::max<int64_t>(1, kGrain / (len * std::min(CB, m)));
      parallel_for(0, tasks, grain, [&](int64_t b, int64_t e) {
        A acc[CB];
        for (int64_t t = b; t < e; ++t) {
          const char* xp;
          char* op_;
          outer_offsets(g, t / ncb, xp, op_);
          const int64_t c0 = t % ncb * CB, w = std::min(CB, m - c0);
          for (int64_t j = 0; j < w; ++j) acc[j] = ident;
          for (int64_t i = 0; i < len; ++i) {
            const T* xr = (const T*)(xp + i * sx) + c0;
            T* orow = (T*)(op_ + i * so) + c0;
            for (int64_t j = 0; j < w; ++j) {
              acc[j] = comb(acc[j], (A)load_elem(xr + j));
              orow[j] = cvt<T>(acc[j]);
            }
          }
        }
      });
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kGrain / len);
    parallel_for(0, g.nout, grain, [&](int64_t b, int64_t e) {
      for_outputs(g, b, e, [&](const char* xp, char* o) {
        A acc = ident;
        if (same) {
          for (int64_t i = 0; i < len; ++i) {
            acc = comb(acc, (A)load_elem((const T*)(xp + i * sx)));
            *(T*)(o + i * so) = cvt<T>(acc);
          }
        } else {
          for (int64_t i = 0; i < len; ++i) {
            acc = comb(acc, (A)load_elem((const T*)(xp + i * sx)));
            store_as<A>(oc, o + i * so, acc);
          }
        }
      });
    });
  });
}

EMBER_KERNEL("cumsum", scan_op<false>);
EMBER_KERNEL("cumprod", scan_op<true>);

}  // namespace

}  // namespace ember
