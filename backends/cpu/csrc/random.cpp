// Counter-based random numbers: Philox4x32-10.
//
// Exact formulas (other backends reproduce these):
//   key  = (k0, k1) = (seed & 0xffffffff, seed >> 32)          (seed as uint64)
//   ctr  = (c0, c1, c2, c3) = (lo32(offset + i), hi32(offset + i), 0, 0)
//          i = the element's linear index in row-major order of `out` (offset + i mod 2^64)
//   round: (hi0, lo0) = 0xD2511F53 * c0, (hi1, lo1) = 0xCD9E8D57 * c2   (32x32 -> 64 bit)
//          c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
//          10 rounds; after each of the first 9: k0 += 0x9E3779B9, k1 += 0xBB67AE85
//   output words (w0, w1, w2, w3) = c after 10 rounds
//   uniform, float32:  u = (w0 >> 8) * 2^-24                                     in [0, 1)
//   uniform, float64:  u = (((uint64)w0 << 32 | w1) >> 11) * 2^-53                 in [0, 1)
//   uniform, float16:  u = (w0 >> 21) * 2^-11   (the dtype's 11 significand bits, as PyTorch;
//   uniform, bfloat16: u = (w0 >> 24) * 2^-8     24 bits would round up to 1.0)

//            value = low + u * (high - low)      (computed in double, then rounded to the dtype)
//   normal (all float dtypes): u1 = (w0 + 1.0) * 2^-32 in (0, 1], u2 = w1 * 2^-32 in [0, 1)
//            z = sqrt(-2 ln u1) * cos(2 pi u2);  value = mean + std * z   (double, then rounded)
#include "ember.h"

namespace ember {

namespace {

inline void philox10(uint64_t ctr, uint64_t seed, uint32_t w[4]) {
  uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = (uint64_t)0xD2511F53u * c0;
    const uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
    const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  w[0] = c0;
  w[1] = c1;
  w[2] = c2;
  w[3] = c3;
}

uint64_t get_u64(const Args& args, int i) {
  PyObject* o = args.v[i];
  if (!o || !PyLong_Check(o)) raise(PyExc_TypeError, "%s(): argument '%s' must be an int", args.op, args.names[i]);
  unsigned long long v = PyLong_AsUnsignedLongLongMask(o);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' must be an int", args.op, args.names[i]);
  }
  return (uint64_t)v;
}

template <bool Normal>
void random_op(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args(op, a, n, kw,
            Normal ? std::initializer_list<const char*>{"out", "mean", "std", "seed", "offset"}
                   : std::initializer_list<const char*>{"out", "low", "high", "seed", "offset"},
            5);
  Tensor out = args.out(0);
  const double p1 = args.get_double(1), p2 = args.get_double(2);
  const uint64_t seed = get_u64(args, 3), offset = get_u64(args, 4);
  dispatch<M_FLOAT>(out.dtype, op, [](auto) {});
  const int64_t N = out.numel;
  if (N == 0) return;
  NoGil g(N >= kGilThreshold);
  std::vector<char> tmp;
  Tensor dst = out;
  if (!out.is_contiguous()) {
    tmp.resize((size_t)(N * out.itemsize));
    dst = make_contiguous_header(tmp.data(), out.dtype, out.ndim, out.shape);
  }
  dispatch<M_FLOAT>(out.dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    T* o = (T*)dst.data;
    parallel_for(0, N, 8192, [&](int64_t b, int64_t e) {
      uint32_t w[4];
      for (int64_t i = b; i < e; ++i) {
        philox10(offset + (uint64_t)i, seed, w);
        double v;
        if constexpr (Normal) {
          const double u1 = ((double)w[0] + 1.0) * 0x1.0p-32;
          const double u2 = (double)w[1] * 0x1.0p-32;
          const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
          v = p1 + p2 * z;
        } else {
          double u;
          if constexpr (std::is_same_v<T, double>)
            u = (double)((((uint64_t)w[0] << 32) | w[1]) >> 11) * 0x1.0p-53;
          else if constexpr (std::is_same_v<T, Half>)
            u = (double)(w[0] >> 21) * 0x1.0p-11;
          else if constexpr (std::is_same_v<T, BFloat16>)
            u = (double)(w[0] >> 24) * 0x1.0p-8;
          else
            u = (double)(w[0] >> 8) * 0x1.0p-24;
          v = p1 + u * (p2 - p1);
        }
        o[i] = cvt<T>(v);
      }
    });
  });
  if (dst.data != out.data) copy_tensor(out, dst);
}

void k_uniform(PyObject* const* a, Py_ssize_t n, PyObject* kw) { random_op<false>("uniform", a, n, kw); }
void k_normal(PyObject* const* a, Py_ssize_t n, PyObject* kw) { random_op<true>("normal", a, n, kw); }

}  // namespace

void register_random(std::vector<PyMethodDef>& defs) {
  defs.push_back(EMBER_DEF("uniform", k_uniform));
  defs.push_back(EMBER_DEF("normal", k_normal));
}

}  // namespace ember
