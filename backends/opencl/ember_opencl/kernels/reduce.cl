// reduce.cl: sum / prod / mean / max / min over any set of dims, argmax / argmin over one.
//
// Two strategies (the host picks, ops/reduce.py):
//   reduce_wg: one work-group of RL work-items per output (or per chunk of a long
//              reduction): strided partial results, then a tree reduction in local
//              memory. Chunked reductions write SACC partials that reduce_part finishes.
//   reduce_wi: one work-item per output walking its elements serially (many outputs,
//              short reductions; coalesced when the kept dims are innermost).
// Accumulators (SACC): the widest float the device has (double with cl_khr_fp64) for the
// floating types, wrapping int64 for integers and bool; the result is rounded once to the
// output's dtype. max/min propagate NaN; argmax/argmin take the first NaN, else the first
// extreme value. var/std (floating types): two passes in SACC (mean, then squared
// deviations), the square root taken before the rounding, as PyTorch's CPU kernels (so
// std of float32 values near 1e30 is finite); chunks of a split reduction merge by Chan's
// formula.

#if defined(TYPE)
// XLD: an element of x; a bool byte other than 0 / 1 (a NumPy uint8 array viewed as bool)
// is read as 1, as PyTorch and NumPy count it
#if KIND == 0
#define XLD(p, i) ((uchar)(LD(p, i) != 0))
#else
#define XLD(p, i) LD(p, i)
#endif
#if KIND == 2
#define ACC_ADD(a, b) ((a) + (b))
#define ACC_MUL(a, b) ((a) * (b))
#else
#define ACC_ADD(a, b) ((long)((ulong)(a) + (ulong)(b)))
#define ACC_MUL(a, b) ((long)((ulong)(a) * (ulong)(b)))
#endif

inline SACC K(ident)(int op) {
  switch (op) {
    case OP_PROD: return (SACC)1;
    case OP_MAX: return (SACC)LOWEST;
    case OP_MIN: return (SACC)HIGHEST;
    default: return (SACC)0;
  }
}

inline SACC K(combine)(int op, SACC a, SACC b) {
  switch (op) {
    case OP_PROD: return ACC_MUL(a, b);
    case OP_MAX: return (a > b || ISNAN(a)) ? a : b;
    case OP_MIN: return (a < b || ISNAN(a)) ? a : b;
    default: return ACC_ADD(a, b);
  }
}

inline void K(store)(int op, __global S* o, long oo, SACC r, long nred) {
#if KIND == 2
  if (op == OP_MEAN) r = r / (SACC)nred;   // 0 / 0 is NaN for an empty mean
#endif
  ST(o, oo, (C)r);
}

// the local-memory tree: RL values in buf, result in buf[0]
inline void K(tree)(int op, __local SACC* buf, int lid) {
  for (int s = RL / 2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s) buf[lid] = K(combine)(op, buf[lid], buf[lid + s]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel void K(reduce_wg)(int op, RGeom g, __global S* o, __global const S* x,
                           __global SACC* part, long poff) {
  __local SACC buf[RL];
  const long grp = get_group_id(0);
  const long oi = grp / g.nchunk, chunk = grp % g.nchunk;
  const int lid = get_local_id(0);
  long xo, oo;
  rgeom_kept(&g, oi, &xo, &oo);
  const long r0 = chunk * g.chunk, r1 = min(g.nred, r0 + g.chunk);
  SACC acc = K(ident)(op);
  for (long r = r0 + lid; r < r1; r += RL)
    acc = K(combine)(op, acc, (SACC)XLD(x, xo + rgeom_red(&g, r)));
  buf[lid] = acc;
  K(tree)(op, buf, lid);
  if (lid == 0) {
    if (g.nchunk > 1) part[poff + grp] = buf[0];
    else K(store)(op, o, oo, buf[0], g.nred);
  }
}

// first pass of a chunked reduction on CPU-like devices: one work-item per (output, chunk)
__kernel void K(reduce_wic)(int op, RGeom g, __global const S* x, __global SACC* part,
                            long poff) {
  const long t = get_global_id(0);
  if (t >= g.nout * g.nchunk) return;
  const long oi = t / g.nchunk, chunk = t % g.nchunk;
  long xo, oo;
  rgeom_kept(&g, oi, &xo, &oo);
  const long r0 = chunk * g.chunk, r1 = min(g.nred, r0 + g.chunk);
  SACC acc = K(ident)(op);
  for (long r = r0; r < r1; ++r) acc = K(combine)(op, acc, (SACC)XLD(x, xo + rgeom_red(&g, r)));
  part[poff + t] = acc;
}

// second pass of a chunked reduction: part holds nchunk partials per output
__kernel void K(reduce_part)(int op, RGeom g, __global S* o, __global const SACC* part,
                             long poff) {
  __local SACC buf[RL];
  const long oi = get_group_id(0);
  const int lid = get_local_id(0);
  long xo, oo;
  rgeom_kept(&g, oi, &xo, &oo);
  SACC acc = K(ident)(op);
  for (long c = lid; c < g.nchunk; c += RL) acc = K(combine)(op, acc, part[poff + oi * g.nchunk + c]);
  buf[lid] = acc;
  K(tree)(op, buf, lid);
  if (lid == 0) K(store)(op, o, oo, buf[0], g.nred);
}

__kernel void K(reduce_wi)(int op, RGeom g, __global S* o, __global const S* x) {
  const long oi = get_global_id(0);
  if (oi >= g.nout) return;
  long xo, oo;
  rgeom_kept(&g, oi, &xo, &oo);
  SACC acc = K(ident)(op);
  for (long r = 0; r < g.nred; ++r) acc = K(combine)(op, acc, (SACC)XLD(x, xo + rgeom_red(&g, r)));
  K(store)(op, o, oo, acc, g.nred);
}

// ---- argmax / argmin (one reduced dim; bi < 0 means "nothing yet") ----------------
inline void K(argpick)(int op, C* bv, long* bi, C v, long i) {
  if (*bi < 0) { *bv = v; *bi = i; return; }
  if (ISNAN(*bv)) {                       // a NaN is held: only an earlier NaN replaces it
    if (ISNAN(v) && i < *bi) *bi = i;
    return;
  }
  if (ISNAN(v)) { *bv = v; *bi = i; return; }
  const int better = op == OP_ARGMAX ? (v > *bv) : (v < *bv);
  if (better || (v == *bv && i < *bi)) { *bv = v; *bi = i; }
}

__kernel void K(argreduce_wg)(int op, RGeom g, __global long* o, __global const S* x) {
  __local C bv[RL];
  __local long bi[RL];
  const long oi = get_group_id(0);
  const int lid = get_local_id(0);
  long xo, oo;
  rgeom_kept(&g, oi, &xo, &oo);
  C v = 0;
  long vi = -1;
  for (long r = lid; r < g.nred; r += RL) K(argpick)(op, &v, &vi, XLD(x, xo + r * g.rx[0]), r);
  bv[lid] = v;
  bi[lid] = vi;
  for (int s = RL / 2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s && bi[lid + s] >= 0) {
      C a = bv[lid];
      long ai = bi[lid];
      K(argpick)(op, &a, &ai, bv[lid + s], bi[lid + s]);
      bv[lid] = a;
      bi[lid] = ai;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) o[oo] = bi[0];
}

__kernel void K(argreduce_wi)(int op, RGeom g, __global long* o, __global const S* x) {
  const long oi = get_global_id(0);
  if (oi >= g.nout) return;
  long xo, oo;
  rgeom_kept(&g, oi, &xo, &oo);
  C v = 0;
  long vi = -1;
  for (long r = 0; r < g.nred; ++r) K(argpick)(op, &v, &vi, XLD(x, xo + r * g.rx[0]), r);
  o[oo] = vi;
}

#if KIND == 2
// ---- var / std over any set of dims (sq: 1 for std) -------------------------------
inline void K(var_store)(int sq, __global S* o, long oo, SACC m2, long n, SACC correction) {
  // PyTorch divides by max(n - correction, 0): 0 / 0 (one element, correction 1) is NaN
  const SACC v = m2 / fmax((SACC)n - correction, (SACC)0);
  ST(o, oo, (C)(sq ? sqrt(v) : v));
}

// mean and sum of squared deviations of reduced elements [r0, r1) of the output at xo
inline void K(var_serial)(RGeom* g, __global const S* x, long xo, long r0, long r1,
                          SACC* mean, SACC* m2) {
  SACC s = 0;
  for (long r = r0; r < r1; ++r) s += (SACC)LD(x, xo + rgeom_red(g, r));
  const SACC mu = s / (SACC)(r1 - r0);
  SACC q = 0;
  for (long r = r0; r < r1; ++r) {
    const SACC d = (SACC)LD(x, xo + rgeom_red(g, r)) - mu;
    q += d * d;
  }
  *mean = mu;
  *m2 = q;
}

__kernel void K(var_wi)(int sq, RGeom g, __global S* o, __global const S* x, SACC correction) {
  const long oi = get_global_id(0);
  if (oi >= g.nout) return;
  long xo, oo;
  rgeom_kept(&g, oi, &xo, &oo);
  SACC mu, m2;
  K(var_serial)(&g, x, xo, 0, g.nred, &mu, &m2);
  K(var_store)(sq, o, oo, m2, g.nred, correction);
}

// partials of a split reduction: (mean, m2) of each (output, chunk) at part[poff + 2 t]
__kernel void K(var_wic)(RGeom g, __global const S* x, __global SACC* part, long poff) {
  const long t = get_global_id(0);
  if (t >= g.nout * g.nchunk) return;
  const long oi = t / g.nchunk, chunk = t % g.nchunk;
  long xo, oo;
  rgeom_kept(&g, oi, &xo, &oo);
  SACC mu, m2;
  K(var_serial)(&g, x, xo, chunk * g.chunk, min(g.nred, (chunk + 1) * g.chunk), &mu, &m2);
  part[poff + 2 * t] = mu;
  part[poff + 2 * t + 1] = m2;
}

__kernel void K(var_wg)(int sq, RGeom g, __global S* o, __global const S* x,
                        __global SACC* part, long poff, SACC correction) {
  __local SACC buf[RL];
  const long grp = get_group_id(0);
  const long oi = grp / g.nchunk, chunk = grp % g.nchunk;
  const int lid = get_local_id(0);
  long xo, oo;
  rgeom_kept(&g, oi, &xo, &oo);
  const long r0 = chunk * g.chunk, r1 = min(g.nred, r0 + g.chunk);
  SACC acc = 0;
  for (long r = r0 + lid; r < r1; r += RL) acc += (SACC)LD(x, xo + rgeom_red(&g, r));
  buf[lid] = acc;
  K(tree)(OP_SUM, buf, lid);
  const SACC mu = buf[0] / (SACC)(r1 - r0);
  barrier(CLK_LOCAL_MEM_FENCE);   // every work-item has read the mean before buf is reused
  acc = 0;
  for (long r = r0 + lid; r < r1; r += RL) {
    const SACC d = (SACC)LD(x, xo + rgeom_red(&g, r)) - mu;
    acc += d * d;
  }
  buf[lid] = acc;
  K(tree)(OP_SUM, buf, lid);
  if (lid == 0) {
    if (g.nchunk > 1) {
      part[poff + 2 * grp] = mu;
      part[poff + 2 * grp + 1] = buf[0];
    } else {
      K(var_store)(sq, o, oo, buf[0], g.nred, correction);
    }
  }
}

// the chunks of one output merged in order (Chan et al.): n = na + nb, d = mb - ma,
// mean = ma + d nb / n, m2 = m2a + m2b + d^2 na nb / n
__kernel void K(var_part)(int sq, RGeom g, __global S* o, __global const SACC* part, long poff,
                          SACC correction) {
  const long oi = get_global_id(0);
  if (oi >= g.nout) return;
  long xo, oo;
  rgeom_kept(&g, oi, &xo, &oo);
  SACC mean = 0, m2 = 0;
  long n = 0;
  for (long c = 0; c < g.nchunk; ++c) {
    const long nb = min(g.nred, (c + 1) * g.chunk) - c * g.chunk;
    if (nb <= 0) continue;
    const SACC mb = part[poff + 2 * (oi * g.nchunk + c)];
    const SACC m2b = part[poff + 2 * (oi * g.nchunk + c) + 1];
    if (n == 0) {   // the first chunk as it is (no 0 * d^2, which is NaN for d = inf)
      mean = mb;
      m2 = m2b;
      n = nb;
      continue;
    }
    const long nn = n + nb;
    const SACC d = mb - mean;
    mean += d * ((SACC)nb / (SACC)nn);
    m2 += m2b + d * d * ((SACC)n * (SACC)nb / (SACC)nn);
    n = nn;
  }
  K(var_store)(sq, o, oo, m2, g.nred, correction);
}
#endif
#undef ACC_ADD
#undef ACC_MUL
#undef XLD
#endif
