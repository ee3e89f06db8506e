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

// Elementwise geometry for up to 4 operands (operand 0 is the output).
typedef struct {
  long n;                  // elements to visit
  long nd;                 // dims in use
  long shape[MAXD];
  long off[4];
  long st[4][MAXD];
} Geom;

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
