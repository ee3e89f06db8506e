// fft_pairs: the unnormalized discrete Fourier transform, kernel exp(sign * 2 pi i j k / n),
// of each row of a contiguous (..., n, 2) float32 / float64 tensor of (real, imaginary)
// pairs (ember's complex tensors seen through view_as_real).
//
// Mixed radix, decimation in time, recursive and out of place: a length n = p * m
// transforms the p interleaved subsequences of length m into consecutive blocks of the
// output, then combines each column {k, k + m, ..., k + (p - 1) m} in place (radix 2 and 4
// by hand, other radices up to kMaxRadix as a p-point DFT). A length with a prime factor
// above kMaxRadix goes through Bluestein's algorithm (a circular convolution of power-of-two
// length, the kernel's transform precomputed). Twiddles come from one table of exp(2 pi i j
// / N) computed in double from exact integer phases and rounded to the row type once;
// plans are cached per (n, sign, dtype). Rows run in parallel on ember's pool, GIL
// released.
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ember.h"

namespace ember {

namespace {

constexpr int kMaxRadix = 64;

template <class T>
struct Cx {
  T re, im;
};

template <class T>
EMBER_INLINE Cx<T> cmul(Cx<T> a, Cx<T> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <class T>
EMBER_INLINE Cx<T> cadd(Cx<T> a, Cx<T> b) { return {a.re + b.re, a.im + b.im}; }
template <class T>
EMBER_INLINE Cx<T> csub(Cx<T> a, Cx<T> b) { return {a.re - b.re, a.im - b.im}; }

// exp(sign * 2 pi i * j / n) for j in [0, n), the quadrant taken out exactly (multiples of
// pi / 2 are exact zeros and ones)
inline void unit_roots(std::vector<Cx<double>>& w, int64_t n, int sign) {
  w.resize((size_t)n);
  const double step = 2.0 * M_PI / (double)n;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t j4 = 4 * j;
    const int64_t q = j4 / n;
    const double phi = (double)(j4 - q * n) * (step / 4.0);
    const double c = std::cos(phi), s = std::sin(phi);
    double re, im;
    switch (q) {
      case 0: re = c; im = s; break;
      case 1: re = -s; im = c; break;
      case 2: re = -c; im = -s; break;
      default: re = s; im = -c; break;
    }
    w[(size_t)j] = {re, sign < 0 ? -im : im};
  }
}

template <class T>
struct Plan {
  int64_t n = 0;
  int sign = -1;
  std::vector<int64_t> radices;   // the factors of n, outermost first (empty: Bluestein)
  std::vector<Cx<T>> roots;       // exp(sign 2 pi i j / n)
  // Bluestein
  int64_t m = 0;
  std::vector<Cx<T>> chirp;       // exp(sign i pi j^2 / n)
  std::vector<Cx<T>> kernel_hat;  // FFT_m of the conjugate chirp, divided by m
  std::shared_ptr<Plan<T>> fwd, inv;  // power-of-two plans of length m
};

inline std::vector<int64_t> factorize(int64_t n, bool& small) {
  std::vector<int64_t> f;
  small = true;
  while (n % 4 == 0) { f.push_back(4); n /= 4; }
  while (n % 2 == 0) { f.push_back(2); n /= 2; }
  for (int64_t p = 3; p * p <= n; p += 2)
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  if (n > 1) f.push_back(n);
  for (int64_t p : f) small = small && p <= kMaxRadix;
  return f;
}

template <class T>
std::shared_ptr<Plan<T>> make_plan(int64_t n, int sign);

template <class T>
std::shared_ptr<Plan<T>> get_plan(int64_t n, int sign) {
  static std::mutex mu;
  static std::map<std::pair<int64_t, int>, std::shared_ptr<Plan<T>>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find({n, sign});
    if (it != cache.end()) return it->second;
  }
  auto p = make_plan<T>(n, sign);
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 64) cache.clear();
  cache[{n, sign}] = p;
  return p;
}

template <class T>
void run_plan(const Plan<T>& pl, const Cx<T>* in, Cx<T>* out, Cx<T>* scratch);

template <class T>
std::shared_ptr<Plan<T>> make_plan(int64_t n, int sign) {
  auto pl = std::make_shared<Plan<T>>();
  pl->n = n;
  pl->sign = sign;
  bool small = true;
  std::vector<int64_t> f = factorize(n, small);
  std::vector<Cx<double>> w;
  if (small) {
    pl->radices = f;
    unit_roots(w, n, sign);
    pl->roots.resize((size_t)n);
    for (int64_t j = 0; j < n; ++j) pl->roots[(size_t)j] = {(T)w[(size_t)j].re, (T)w[(size_t)j].im};
    return pl;
  }
  // Bluestein: j k = (j^2 + k^2 - (k - j)^2) / 2
  int64_t m = 1;
  while (m < 2 * n - 1) m <<= 1;
  pl->m = m;
  pl->fwd = get_plan<T>(m, -1);
  pl->inv = get_plan<T>(m, 1);
  unit_roots(w, 2 * n, sign);  // exp(sign i pi q / n), q = j^2 mod 2n
  pl->chirp.resize((size_t)n);
  std::vector<Cx<T>> b((size_t)m, Cx<T>{0, 0});
  for (int64_t j = 0; j < n; ++j) {
    const Cx<double> c = w[(size_t)((j * j) % (2 * n))];
    pl->chirp[(size_t)j] = {(T)c.re, (T)c.im};
    const Cx<T> cc = {(T)c.re, (T)-c.im};
    b[(size_t)j] = cc;
    if (j) b[(size_t)(m - j)] = cc;
  }
  pl->kernel_hat.resize((size_t)m);
  std::vector<Cx<T>> scratch((size_t)m);
  run_plan(*pl->fwd, b.data(), pl->kernel_hat.data(), scratch.data());
  const T inv_m = (T)(1.0 / (double)m);
  for (auto& v : pl->kernel_hat) v = {v.re * inv_m, v.im * inv_m};
  return pl;
}

// out[q * os] = sum_r in[r * is] exp(sign 2 pi i r q / p), q < p (W[wp] = exp(sign 2 pi i / p))
template <class T>
EMBER_INLINE void small_dft(int64_t p, const Cx<T>* in, int64_t is, Cx<T>* out, int64_t os,
                            const Cx<T>* W, int64_t wp) {
  for (int64_t q = 0; q < p; ++q) {
    Cx<T> s = in[0];
    int64_t e = 0;
    for (int64_t r = 1; r < p; ++r) {
      e += q;
      if (e >= p) e -= p;
      s = cadd(s, cmul(in[r * is], W[e * wp]));
    }
    out[q * os] = s;
  }
}

// out[0..p) = the p-point DFT of in[0], in[stride], ..., in[(p - 1) stride] (the last level)
template <class T>
void leaf(const Plan<T>& pl, int64_t p, const Cx<T>* in, int64_t stride, Cx<T>* out) {
  if (p == 2) {
    const Cx<T> a = in[0], b = in[stride];
    out[0] = cadd(a, b);
    out[1] = csub(a, b);
    return;
  }
  if (p == 4) {
    const Cx<T> a0 = in[0], a1 = in[stride], a2 = in[2 * stride], a3 = in[3 * stride];
    const Cx<T> s02 = cadd(a0, a2), d02 = csub(a0, a2);
    const Cx<T> s13 = cadd(a1, a3), d13 = csub(a1, a3);
    const Cx<T> r13 = pl.sign < 0 ? Cx<T>{d13.im, -d13.re} : Cx<T>{-d13.im, d13.re};
    out[0] = cadd(s02, s13);
    out[1] = cadd(d02, r13);
    out[2] = csub(s02, s13);
    out[3] = csub(d02, r13);
    return;
  }
  small_dft(p, in, stride, out, 1, pl.roots.data(), pl.n / p);
}

// out[0..n) = DFT of in[0], in[stride], ..., over the radices from index `level` on
template <class T>
void rec(const Plan<T>& pl, size_t level, const Cx<T>* in, int64_t stride, Cx<T>* out, int64_t n) {
  const int64_t p = pl.radices[level];
  const int64_t m = n / p;
  if (m == 1) {
    leaf(pl, p, in, stride, out);
    return;
  }
  for (int64_t r = 0; r < p; ++r) rec(pl, level + 1, in + r * stride, stride * p, out + r * m, m);
  const Cx<T>* W = pl.roots.data();
  const int64_t tw = pl.n / n;  // exp(sign 2 pi i / n) = W[tw]
  if (p == 2) {
    for (int64_t k = 0; k < m; ++k) {
      const Cx<T> a = out[k], b = cmul(out[k + m], W[k * tw]);
      out[k] = cadd(a, b);
      out[k + m] = csub(a, b);
    }
    return;
  }
  if (p == 4) {
    const bool neg = pl.sign < 0;  // multiplying by sign i
    for (int64_t k = 0; k < m; ++k) {
      const Cx<T> a0 = out[k];
      const Cx<T> a1 = cmul(out[k + m], W[k * tw]);
      const Cx<T> a2 = cmul(out[k + 2 * m], W[2 * k * tw]);
      const Cx<T> a3 = cmul(out[k + 3 * m], W[3 * k * tw]);
      const Cx<T> s02 = cadd(a0, a2), d02 = csub(a0, a2);
      const Cx<T> s13 = cadd(a1, a3), d13 = csub(a1, a3);
      const Cx<T> r13 = neg ? Cx<T>{d13.im, -d13.re} : Cx<T>{-d13.im, d13.re};
      out[k] = cadd(s02, s13);
      out[k + m] = cadd(d02, r13);
      out[k + 2 * m] = csub(s02, s13);
      out[k + 3 * m] = csub(d02, r13);
    }
    return;
  }
  Cx<T> t[kMaxRadix];
  for (int64_t k = 0; k < m; ++k) {
    for (int64_t r = 0; r < p; ++r) t[r] = r ? cmul(out[k + r * m], W[r * k * tw]) : out[k];
    small_dft(p, t, 1, out + k, m, W, pl.n / p);
  }
}

// scratch: at least 2 m values (Bluestein plans), unused otherwise
template <class T>
void run_plan(const Plan<T>& pl, const Cx<T>* in, Cx<T>* out, Cx<T>* scratch) {
  const int64_t n = pl.n;
  if (pl.m == 0) {
    if (n == 1) {
      out[0] = in[0];
      return;
    }
    rec(pl, 0, in, 1, out, n);
    return;
  }
  const int64_t m = pl.m;
  Cx<T>* a = scratch;
  Cx<T>* ah = scratch + m;
  for (int64_t j = 0; j < n; ++j) a[j] = cmul(in[j], pl.chirp[(size_t)j]);
  for (int64_t j = n; j < m; ++j) a[j] = {0, 0};
  rec(*pl.fwd, 0, a, 1, ah, m);
  for (int64_t j = 0; j < m; ++j) ah[j] = cmul(ah[j], pl.kernel_hat[(size_t)j]);
  rec(*pl.inv, 0, ah, 1, a, m);
  for (int64_t k = 0; k < n; ++k) out[k] = cmul(a[k], pl.chirp[(size_t)k]);
}

void k_fft_pairs(PyObject* const* a, Py_ssize_t na, PyObject* kw) {
  const char* op = "fft_pairs";
  Args args(op, a, na, kw, {"out", "x", "sign"}, 3);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  const int sign = args.get_int(2) < 0 ? -1 : 1;
  check_same_dtype(op, out, x);
  if (x.ndim < 2 || x.shape[x.ndim - 1] != 2 || !x.is_contiguous() || !out.is_contiguous() ||
      out.numel != x.numel)
    raise(PyExc_ValueError, "%s(): expected contiguous (..., n, 2) input and output of one shape", op);
  const int64_t n = x.shape[x.ndim - 2];
  if (x.numel == 0 || n == 0) return;
  const int64_t rows = x.numel / (2 * n);
  dispatch<M_F32 | M_F64>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    auto pl = get_plan<T>(n, sign);
    const Cx<T>* src = (const Cx<T>*)x.data;
    Cx<T>* dst = (Cx<T>*)out.data;
    const bool same = (const void*)src == (const void*)dst;
    NoGil ng(x.numel >= kGilThreshold);
    const int64_t work = std::max<int64_t>(1, n * 8);
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / work), [&](int64_t b, int64_t e) {
      std::vector<Cx<T>> scratch((size_t)(pl->m ? 2 * pl->m : 0) + (size_t)(same ? n : 0));
      for (int64_t r = b; r < e; ++r) {
        const Cx<T>* in = src + r * n;
        if (same) {  // (the recursion reads its input to the end: copy it aside)
          Cx<T>* keep = scratch.data() + (pl->m ? 2 * pl->m : 0);
          for (int64_t j = 0; j < n; ++j) keep[j] = in[j];
          in = keep;
        }
        run_plan(*pl, in, dst + r * n, scratch.data());
      }
    });
  });
}

EMBER_KERNEL("fft_pairs", k_fft_pairs);

// rfft_real: the DFT (kernel exp(-2 pi i j k / n)) of each row of a contiguous real
// (..., n) tensor, its n // 2 + 1 non-negative frequencies as (..., n // 2 + 1, 2) pairs.
// An even n transforms the row read as n / 2 complex values (x[2j] + i x[2j + 1]) and
// separates the even and odd samples' spectra: X[k] = E[k] + w^k O[k] with E = (Z[k] +
// conj Z[h - k]) / 2, O = -i (Z[k] - conj Z[h - k]) / 2, w = exp(-2 pi i / n): half the work
// of a complex transform. An odd n runs the complex transform of the row.
template <class T>
struct RPlan {
  int64_t n = 0;
  std::shared_ptr<Plan<T>> half;  // length n / 2 (even n) or n (odd n)
  std::vector<Cx<T>> w;           // exp(-2 pi i k / n), k <= n / 2
};

template <class T>
std::shared_ptr<RPlan<T>> get_rplan(int64_t n) {
  static std::mutex mu;
  static std::map<int64_t, std::shared_ptr<RPlan<T>>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
  }
  auto rp = std::make_shared<RPlan<T>>();
  rp->n = n;
  rp->half = get_plan<T>(n % 2 == 0 ? n / 2 : n, -1);
  std::vector<Cx<double>> w;
  unit_roots(w, n, -1);
  rp->w.resize((size_t)(n / 2 + 1));
  for (int64_t k = 0; k <= n / 2; ++k) rp->w[(size_t)k] = {(T)w[(size_t)k].re, (T)w[(size_t)k].im};
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 64) cache.clear();
  cache[n] = rp;
  return rp;
}

void k_rfft_real(PyObject* const* a, Py_ssize_t na, PyObject* kw) {
  const char* op = "rfft_real";
  Args args(op, a, na, kw, {"out", "x"}, 2);
  Tensor out = args.out(0);
  Tensor x = args.tensor(1);
  check_same_dtype(op, out, x);
  if (x.ndim < 1 || !x.is_contiguous() || !out.is_contiguous() || out.ndim != x.ndim + 1)
    raise(PyExc_ValueError, "%s(): expected a contiguous (..., n) input and (..., n // 2 + 1, 2) output", op);
  const int64_t n = x.shape[x.ndim - 1];
  const int64_t h1 = n / 2 + 1;
  if (out.shape[out.ndim - 2] != h1 || out.shape[out.ndim - 1] != 2)
    raise(PyExc_ValueError, "%s(): the output's last dims must be (%lld, 2)", op, (long long)h1);
  if (x.numel == 0 || n == 0) return;
  const int64_t rows = x.numel / n;
  dispatch<M_F32 | M_F64>(x.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    auto rp = get_rplan<T>(n);
    const Plan<T>& pl = *rp->half;
    const T* src = (const T*)x.data;
    Cx<T>* dst = (Cx<T>*)out.data;
    NoGil ng(x.numel >= kGilThreshold);
    const int64_t work = std::max<int64_t>(1, n * 4);
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / work), [&](int64_t b, int64_t e) {
      const int64_t len = pl.n;
      std::vector<Cx<T>> buf((size_t)(2 * len) + (size_t)(pl.m ? 2 * pl.m : 0));
      Cx<T>* Z = buf.data();
      Cx<T>* tmp = buf.data() + len;
      Cx<T>* scratch = buf.data() + 2 * len;
      for (int64_t r = b; r < e; ++r) {
        const T* xr = src + r * n;
        Cx<T>* o = dst + r * h1;
        if (n % 2) {
          for (int64_t j = 0; j < n; ++j) tmp[j] = {xr[j], (T)0};
          run_plan(pl, tmp, Z, scratch);
          for (int64_t k = 0; k < h1; ++k) o[k] = Z[k];
          continue;
        }
        const int64_t h = n / 2;
        run_plan(pl, (const Cx<T>*)xr, Z, scratch);
        const T half = (T)0.5;
        for (int64_t k = 0; k <= h; ++k) {
          const Cx<T> zk = Z[k == h ? 0 : k];
          const Cx<T> zc = {Z[k == 0 ? 0 : h - k].re, -Z[k == 0 ? 0 : h - k].im};
          const Cx<T> ev = {(zk.re + zc.re) * half, (zk.im + zc.im) * half};
          // -i (zk - zc) / 2
          const Cx<T> od = {(zk.im - zc.im) * half, -(zk.re - zc.re) * half};
          o[k] = cadd(ev, cmul(rp->w[(size_t)k], od));
        }
      }
    });
  });
}

EMBER_KERNEL("rfft_real", k_rfft_real);

}  // namespace

}  // namespace ember
