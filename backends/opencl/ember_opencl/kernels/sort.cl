// sort.cl: sort along one dim, stable (ties keep index order), NaN above every number
// (last ascending, first descending), as the CPU backend.
//
// Each line is loaded into a padded power-of-two buffer of (key, index) pairs and sorted
// with a bitonic network on the pair order, which is total (indices are distinct), so the
// result is the stable order. Lines of up to SORT_LOCAL pairs sort in local memory in one
// launch; longer ones take one launch per network stage.

#if defined(TYPE)
// does pair (a, ia) come before (b, ib)? Pads (index >= len) come last.
inline int K(before)(C a, long ia, C b, long ib, int desc, long len) {
  if (ia >= len || ib >= len) return ib >= len && ia < ib;
#if KIND == 2
  const int an = isnan(a), bn = isnan(b);
  if (an || bn) {
    if (an && bn) return ia < ib;
    return desc ? an : bn;
  }
#endif
  if (a == b) return ia < ib;
  return desc ? a > b : a < b;
}

__kernel void K(sort_load)(RGeom g, long P, __global const S* x, __global C* keys,
                           long kofs, __global long* idx, long iofs) {
  keys += kofs;
  idx += iofs;
  const long gid = get_global_id(0);
  if (gid >= g.nout * P) return;
  const long line = gid / P, j = gid % P;
  long xo, oo;
  rgeom_kept(&g, line, &xo, &oo);
  keys[gid] = j < g.nred ? LD(x, xo + j * g.rx[0]) : (C)0;
  idx[gid] = j;
}

// one stage (k, j) of the network over every line
__kernel void K(sort_step)(long nlines, long P, long k, long j, int desc, long len,
                           __global C* keys, long kofs, __global long* idx, long iofs) {
  keys += kofs;
  idx += iofs;
  const long gid = get_global_id(0);
  if (gid >= nlines * P) return;
  const long i = gid % P, partner = i ^ j;
  if (partner <= i) return;
  const long base = gid - i;
  const C a = keys[base + i], b = keys[base + partner];
  const long ia = idx[base + i], ib = idx[base + partner];
  const int up = (i & k) == 0;
  const int swap = up ? K(before)(b, ib, a, ia, desc, len) : K(before)(a, ia, b, ib, desc, len);
  if (swap) {
    keys[base + i] = b;
    keys[base + partner] = a;
    idx[base + i] = ib;
    idx[base + partner] = ia;
  }
}

// the whole network for lines of P <= SORT_LOCAL pairs: one work-group (SL items) per line
__kernel void K(sort_local)(long P, int desc, long len, __global C* keys, long kofs,
                            __global long* idx, long iofs) {
  __local C lk[SORT_LOCAL];
  __local long li[SORT_LOCAL];
  keys += kofs;
  idx += iofs;
  const long base = get_group_id(0) * P;
  const int lid = get_local_id(0);
  for (long i = lid; i < P; i += SL) {
    lk[i] = keys[base + i];
    li[i] = idx[base + i];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (long k = 2; k <= P; k <<= 1) {
    for (long j = k >> 1; j > 0; j >>= 1) {
      for (long i = lid; i < P; i += SL) {
        const long partner = i ^ j;
        if (partner > i) {
          const C a = lk[i], b = lk[partner];
          const long ia = li[i], ib = li[partner];
          const int up = (i & k) == 0;
          if (up ? K(before)(b, ib, a, ia, desc, len) : K(before)(a, ia, b, ib, desc, len)) {
            lk[i] = b;
            lk[partner] = a;
            li[i] = ib;
            li[partner] = ia;
          }
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
  for (long i = lid; i < P; i += SL) {
    keys[base + i] = lk[i];
    idx[base + i] = li[i];
  }
}

// values / indices along each line (both with the strides in g.ko / g.ro)
__kernel void K(sort_store)(RGeom g, long P, __global const C* keys, long kofs,
                            __global const long* idx, long iofs, __global S* v,
                            __global long* ind, long ioff) {
  keys += kofs;
  idx += iofs;
  const long gid = get_global_id(0);
  if (gid >= g.nout * g.nred) return;
  const long line = gid / g.nred, j = gid % g.nred;
  long xo, oo;
  rgeom_kept(&g, line, &xo, &oo);
  const long p = oo + j * g.ro[0];
  ST(v, p, keys[line * P + j]);
  ind[p - g.ooff + ioff] = idx[line * P + j];
}
#endif
