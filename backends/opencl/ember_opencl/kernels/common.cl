// common.cl: prepended once to every program (see _source.render).
//
// Tensors reach kernels as (buffer, element offset) pairs plus a geometry struct passed
// by value: the iteration shape and, per operand, an offset and strides in elements.
// The host collapses dims first (drops size-1 dims, merges contiguous runs), so most
// launches have nd <= 2 and contiguous tensors have nd == 1.

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define K(name) CAT(name, CAT(_, SFX))      // kernel name for the current instantiation
#define MAXD 8

// CPU devices (the host defines EMBER_HOST_CPU for them): PoCL compiles OpenCL's math
// builtins as calls into its kernel library, which its vectoriser cannot widen across a
// work-group's work-items, so a kernel calling fabs or exp ran one element at a time (4M
// floats on PoCL, AVX2: copysign(sqrt(fabs(x)), x) + floor(x) 19.9 ms through the
// builtins, 0.9 ms through clang's). Here the cheap ones become clang builtins (inline
// instructions, exact as the OpenCL ones), and float exp, tanh, erf and log the CPU
// backend's polynomials (dispatcher/include/ember/scalar_ops.h: fast_expf, fast_tanhf,
// fast_erff, fast_logf; within 2 ulp, log within 1, where OpenCL allows exp and log 3 ulp,
// tanh 5 and erf 16). Double, and every GPU, keeps the builtins.
#if defined(EMBER_HOST_CPU)
#define OVL __attribute__((overloadable))
// exp's range reduction: x = n ln 2 + r, |r| <= ln 2 / 2; (exp(r), n) for xc in
// [-104, 89] (NaN: n is 0 and the value NaN)
inline float2 em_exp_reduced(float xc) {
  const float z = xc * 1.44269504088896341f;
  const float n = (z + 12582912.0f) - 12582912.0f;   // round to nearest (|z| < 2^22)
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  return (float2)(p * r * r + r + 1.0f, n == n ? n : 0.0f);
}
inline float OVL em_exp(float x) {
  const float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float2 pn = em_exp_reduced(xc);
  // 2^n as two factors: n in [-150, 128] leaves the exponent range of one
  const int ni = (int)pn.y, n1 = ni >> 1, n2 = ni - n1;
  const float res = (pn.x * as_float((uint)(n1 + 127) << 23)) * as_float((uint)(n2 + 127) << 23);
  return x != x ? x : (x < -103.97f ? 0.0f : res);
}
inline float OVL em_tanh(float x) {
  const float ax = __builtin_fabsf(x);
  // |x| >= 0.625: 1 - 2 / (exp(2|x|) + 1); the argument is in [0, 88] (NaN: 88), so 2^n
  // is one factor
  const float t = ax + ax;
  const float2 pn = em_exp_reduced(t < 88.0f ? t : 88.0f);
  const float big = 1.0f - 2.0f / (pn.x * as_float((uint)((int)pn.y + 127) << 23) + 1.0f);
  // |x| < 0.625: an odd polynomial (NaN: ax >= 0.625 is false, the polynomial NaN)
  const float s = x * x;
  const float small = ((((-5.70498872745E-3f * s + 2.06390887954E-2f) * s -
                         5.37397155531E-2f) * s + 1.33314422036E-1f) * s -
                       3.33332819422E-1f) * s * ax + ax;
  return __builtin_copysignf(ax >= 0.625f ? big : small, x);
}
// scalar_ops.h's fast_erff: |x| < 1: x + x P(x^2); else 1 - exp(-x^2) Q(1 / (1 + |x| / 2))
inline float OVL em_erf(float x) {
  const float ax = __builtin_fabsf(x);
  const float s = x * x;
  const float p = ((((((7.8542208939e-05f * s - 8.0103112850e-04f) * s + 5.1883426495e-03f) * s -
                      2.6853820309e-02f) * s + 1.1283585429e-01f) * s - 3.7612625957e-01f) * s +
                   1.2837916613e-01f);
  const float small = x + x * p;
  const float xc = ax > 4.0f ? 4.0f : ax;
  const float t = 1.0f / (1.0f + 0.5f * xc);
  const float q = (((((((1.1901632696e-01f * t - 4.7015270591e-01f) * t + 5.6187444925e-01f) * t -
                       1.0259354115e-01f) * t + 3.4736144543e-01f) * t + 2.5980156660e-01f) * t +
                    2.8489625454e-01f) * t - 1.5318891383e-04f);
  const float2 pn = em_exp_reduced(-(xc * xc));   // in [-16, 0]: 2^n is one factor
  const float big = 1.0f - (pn.x * as_float((uint)((int)pn.y + 127) << 23)) * q;
  return ax < 1.0f ? small : __builtin_copysignf(big, x);
}
// scalar_ops.h's fast_logf: x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f);
// log(1 + f) = f - s (f - T(s^2)) (atanh's series), e ln2 added in two parts
inline float OVL em_log(float x) {
  const int sub = x < 1.17549435e-38f;
  const float xs = sub ? x * 8388608.0f : x;
  const uint v = as_uint(xs);
  uint mb = (v & 0x007FFFFFu) | 0x3F800000u;
  int e = (int)((v >> 23) & 0xFFu) - 127 - (sub ? 23 : 0);
  const int big = mb > 0x3FB504F3u;
  mb -= big ? 0x00800000u : 0u;
  e += big ? 1 : 0;
  const float f = as_float(mb) - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  const float t = z * (0.666666667f + z * (0.4f + z * (0.285714286f + z * 0.222222222f)));
  const float ef = (float)e;
  float r = ef * 0.693145751953125f + ((f - s * (f - t)) + ef * 1.42860682030941723212e-6f);
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f ? NAN : r;
  r = x == INFINITY ? x : r;
  return x != x ? x : r;
}
inline float OVL em_sqrt(float x) { return __builtin_sqrtf(x); }
inline float OVL em_copysign(float x, float y) { return __builtin_copysignf(x, y); }
#if HAS_FP64
inline double OVL em_exp(double x) { return exp(x); }
inline double OVL em_tanh(double x) { return tanh(x); }
inline double OVL em_erf(double x) { return erf(x); }
inline double OVL em_log(double x) { return log(x); }
inline double OVL em_sqrt(double x) { return sqrt(x); }
inline double OVL em_copysign(double x, double y) { return __builtin_copysign(x, y); }
#endif
#undef OVL
// (PoCL's header defines the builtins as macros of its own library's names)
#undef exp
#define exp(x) em_exp(x)
#undef tanh
#define tanh(x) em_tanh(x)
#undef erf
#define erf(x) em_erf(x)
#undef log
#define log(x) em_log(x)
#undef sqrt
#define sqrt(x) em_sqrt(x)
#undef copysign
#define copysign(x, y) em_copysign(x, y)
#undef fabs
#define fabs(x) __builtin_elementwise_abs(x)
#undef floor
#define floor(x) __builtin_elementwise_floor(x)
#undef ceil
#define ceil(x) __builtin_elementwise_ceil(x)
#undef trunc
#define trunc(x) __builtin_elementwise_trunc(x)
#undef rint
#define rint(x) __builtin_elementwise_roundeven(x)
#undef isnan
#define isnan(x) ((x) != (x))
#endif

// Elementwise geometry for up to 4 operands (operand 0 is the output).
typedef struct {
  long n;                  // elements to visit
  long nd;                 // dims in use
  long shape[MAXD];
  long off[4];
  long st[4][MAXD];
} Geom;

// Whether work-item i (along dim 0) lies past the n elements of a launch rounded up to its
// work-group size: "if (PAST_END(i, n)) return;". The group-wide test comes first: it is
// the same for every work-item of a group and false for all but groups reaching past n, so
// PoCL's vectoriser (which widens a work-group's loop over its work-items) runs those
// groups without the masked loads and stores a per-item bound needs (vmaskmov, slow on AMD
// CPUs: an elementwise add over 4M floats took 3.3 ms with "if (i >= n) return;" and
// 1.3-1.5 ms with this test). GPUs see one more comparison.
#define PAST_END(i, n) \
  ((long)(get_group_id(0) + 1) * (long)get_local_size(0) > (n) && (i) >= (n))

// Element offsets of linear index i (row-major over shape) for operands 0..nops-1.
inline void geom_offsets(const Geom* g, long i, int nops, long* off) {
  for (int k = 0; k < nops; ++k) off[k] = g->off[k];
  if (g->nd == 1) {
    for (int k = 0; k < nops; ++k) off[k] += i * g->st[k][0];
    return;
  }
  long r = i;
  for (int d = (int)g->nd - 1; d >= 0; --d) {
    const long s = g->shape[d];
    const long j = r % s;
    r /= s;
    for (int k = 0; k < nops; ++k) off[k] += j * g->st[k][d];
  }
}

// Geometry of reductions, scans, softmax and sort: outputs (or lines) are the "kept"
// dims, visited by linear index o; each one covers the "reduced" dims. x* are input
// strides, o* output strides (ro: output strides along the line, for scans/softmax/sort).
typedef struct {
  long nout, nred, nk, nr, xoff, ooff, chunk, nchunk;
  long kshape[MAXD], kx[MAXD], ko[MAXD];
  long rshape[MAXD], rx[MAXD], ro[MAXD];
} RGeom;

// Input and output offsets of output (line) o.
inline void rgeom_kept(const RGeom* g, long o, long* xo, long* oo) {
  long x = g->xoff, y = g->ooff, r = o;
  for (int d = (int)g->nk - 1; d >= 0; --d) {
    const long s = g->kshape[d];
    const long j = r % s;
    r /= s;
    x += j * g->kx[d];
    y += j * g->ko[d];
  }
  *xo = x;
  *oo = y;
}

// Input offset (relative to the line's start) of reduced element r.
inline long rgeom_red(const RGeom* g, long r) {
  if (g->nr == 1) return r * g->rx[0];
  long x = 0;
  for (int d = (int)g->nr - 1; d >= 0; --d) {
    const long s = g->rshape[d];
    x += (r % s) * g->rx[d];
    r /= s;
  }
  return x;
}

// Operands walked with one stride each (nd <= 1 after collapsing): the "_lin" variants
// of the elementwise kernels use this instead of geom_offsets (no division per element).
inline void lin_offsets(const Geom* g, long i, int nops, long* off) {
  for (int k = 0; k < nops; ++k) off[k] = g->off[k] + i * g->st[k][0];
}

// bfloat16: the high half of a float32; rounding to nearest even, NaN kept quiet.
inline float bf16_to_float(ushort b) { return as_float(((uint)b) << 16); }
inline ushort float_to_bf16(float f) {
  if (isnan(f)) return (ushort)0x7fc0;
  uint u = as_uint(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}

// Errors a kernel cannot raise itself: recorded in a per-device buffer (first one wins)
// and raised by the host at the next synchronisation (see _runtime.Device.check_errors).
#define ERR_INDEX 1
#define ERR_ZERO_DIV 2
#define ERR_NEG_POW 3
inline void report_error(__global int* err, int code, int arg, long bad, long size) {
  if (atomic_cmpxchg((volatile __global int*)err, 0, code) == 0) {
    err[1] = arg;
    ((__global long*)err)[1] = bad;
    ((__global long*)err)[2] = size;
  }
}
