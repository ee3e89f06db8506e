// softmax / log_softmax along one dim, logsumexp over dims.  Max-subtracted for stability;
// compute in float (double for float64), sums of exponentials in double (logsumexp of the half
// types rounds its sum to the type before the log, as PyTorch does).
#include "rgeom.h"
#include "vecmath.h"

namespace ember {

namespace {

// Safe: attention's softmax, 0 in a row whose values are all -inf (not NaN)
template <bool Log, bool Safe = false>
void softmax_op(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const char* const op = Safe ? "_safe_softmax" : Log ? "log_softmax" : "softmax";
  Args args(op, a, n, kw, {"out", "x", "dim"}, 3);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_same_dtype(op, out, x);
  int dim = args.get_dim(2, x.ndim);
  RGeom g;
  build_rgeom_dim(g, op, out, x, dim, /*same_shape=*/true);
  if (g.nout == 0 || g.nred == 0) return;
  dispatch<M_FLOAT>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    using C = compute_t<T>;
    NoGil ng(x.numel >= kGilThreshold);
    const int64_t len = g.nr ? g.rs[0] : 1;
    const int64_t sx = g.nr ? g.rx[0] : 0, so = g.nr ? g.ro[0] : 0;
    const int64_t grain = std::max<int64_t>(1, kGrain / (4 * len));
    if constexpr (std::is_same_v<C, float>) {
      if (sx == (int64_t)sizeof(T) && so == (int64_t)sizeof(T)) {  // contiguous rows, vectorised
        parallel_for(0, g.nout, grain, [&](int64_t b, int64_t e) {
          std::vector<float> buf((size_t)len);
          float* eb = buf.data();
          for_outputs(g, b, e, [&](const char* xp, char* o) {
            const T* xr = (const T*)xp;
            T* orow = (T*)o;
            if constexpr (std::is_same_v<T, float> && !Safe) {  // (it finds the max itself)
              vsoftmax_f32(orow, xr, eb, len, Log);
              return;
            }
            const float m = row_max(xr, len);
            if (Safe && m == -std::numeric_limits<float>::infinity()) {
              for (int64_t i = 0; i < len; ++i) orow[i] = T(0);
              return;
            }
            if constexpr (std::is_same_v<T, float>) {  // one multiversioned call per row
              vsoftmax_f32(orow, xr, eb, len, Log);
              return;
            }
            for (int64_t i = 0; i < len; ++i) eb[i] = fast_expf(static_cast<float>(xr[i]) - m);
            const double s = row_sum(eb, len);
            if constexpr (Log) {
              const float ls = static_cast<float>(std::log(s));
              for (int64_t i = 0; i < len; ++i) orow[i] = cvt<T>((static_cast<float>(xr[i]) - m) - ls);
            } else {
              const float inv = static_cast<float>(1.0 / s);
              for (int64_t i = 0; i < len; ++i) orow[i] = cvt<T>(eb[i] * inv);
            }
          });
        });
        return;
      }
    }
    parallel_for(0, g.nout, grain, [&](int64_t b, int64_t e) {
      for_outputs(g, b, e, [&](const char* xp, char* o) {
        C m = -std::numeric_limits<C>::infinity();
        for (int64_t i = 0; i < len; ++i) {
          const C v = static_cast<C>(*(const T*)(xp + i * sx));
          m = (v > m || v != v) ? v : m;
        }
        if (Safe && m == -std::numeric_limits<C>::infinity()) {
          for (int64_t i = 0; i < len; ++i) *(T*)(o + i * so) = T(0);
          return;
        }
        double s = 0;
        if constexpr (!Log && !is_half_v<T>) {
          // write exp(x - m) once, then scale (x may alias out: each element is read first)
          for (int64_t i = 0; i < len; ++i) {
            const C ev = exp_c(static_cast<C>(*(const T*)(xp + i * sx)) - m);
            *(T*)(o + i * so) = ev;
            s += (double)ev;
          }
          const C inv = static_cast<C>(1.0 / s);
          for (int64_t i = 0; i < len; ++i) *(T*)(o + i * so) *= inv;
          return;
        }
        for (int64_t i = 0; i < len; ++i) s += (double)exp_c(static_cast<C>(*(const T*)(xp + i * sx)) - m);
        if constexpr (Log) {
          const C ls = static_cast<C>(std::log(s));
          for (int64_t i = 0; i < len; ++i)
            *(T*)(o + i * so) = cvt<T>(static_cast<C>(static_cast<C>(*(const T*)(xp + i * sx)) - m - ls));
        } else {
          const C inv = static_cast<C>(1.0 / s);
          for (int64_t i = 0; i < len; ++i)
            *(T*)(o + i * so) = cvt<T>(static_cast<C>(exp_c(static_cast<C>(*(const T*)(xp + i * sx)) - m) * inv));
        }
      });
    });
  });
}
EMBER_KERNEL("softmax", softmax_op<false>);
EMBER_KERNEL("log_softmax", softmax_op<true>);
constexpr auto safe_softmax_op = softmax_op<false, true>;
EMBER_KERNEL("_safe_softmax", safe_softmax_op);

void k_logsumexp(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("logsumexp", a, n, kw, {"out", "x", "dims"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_same_dtype("logsumexp", out, x);
  bool red[MAXD];
  args.get_dims(2, x.ndim, red);
  RGeom g;
  build_rgeom(g, "logsumexp", out, x, red, true);
  if (g.nout == 0) return;
  dispatch<M_FLOAT>(x.dtype, "logsumexp", [&](auto tag) {
    using T = EMBER_T(tag);
    using C = compute_t<T>;
    NoGil ng(x.numel >= kGilThreshold);
    const int64_t grain = std::max<int64_t>(1, kGrain / (4 * std::max<int64_t>(1, g.nred)));
    parallel_for(0, g.nout, grain, [&](int64_t b, int64_t e) {
      for_outputs(g, b, e, [&](const char* xp, char* o) {
        if (g.nred == 0) {
          *(T*)o = cvt<T>(-std::numeric_limits<C>::infinity());
          return;
        }
        C m = -std::numeric_limits<C>::infinity();
        for_reduced_runs(g, xp, [&](const char* p, int64_t s, int64_t k) {
          for (int64_t i = 0; i < k; ++i) {
            const C v = static_cast<C>(*(const T*)(p + i * s));
            m = (v > m || v != v) ? v : m;
          }
        });
        if (std::isinf(m) || m != m) {  // all -inf -> -inf; any +inf -> +inf; NaN -> NaN
          *(T*)o = cvt<T>(m);
          return;
        }
        double sum = 0;
        for_reduced_runs(g, xp, [&](const char* p, int64_t s, int64_t k) {
          for (int64_t i = 0; i < k; ++i) sum += (double)exp_c(static_cast<C>(*(const T*)(p + i * s)) - m);
        });
        // PyTorch sums the exponentials into a tensor of x's dtype before the log: a half
        // sum beyond the type's range is inf there (logsumexp of 70k float16 zeros is inf),
        // so it is rounded to T here too (accumulated wide, rounded once).
        if constexpr (is_half_v<T>) sum = (double)static_cast<float>(cvt<T>(static_cast<float>(sum)));
        *(T*)o = cvt<T>(static_cast<C>((double)m + std::log(sum)));
      });
    });
  });
}
EMBER_KERNEL("logsumexp", k_logsumexp);

}  // namespace

}  // namespace ember
