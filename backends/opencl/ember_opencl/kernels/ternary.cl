// ternary.cl: where (by element size), lerp / addcmul / addcdiv / clamp with tensor
// bounds (by dtype), and clamp with number bounds.

#if defined(BYTES)
__kernel void K(where)(Geom g, __global S* o, __global const uchar* cond, __global const S* a,
                       __global const S* b) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[4];
  EW_OFFSETS(&g, i, 4, off);
  o[off[0]] = cond[off[1]] ? a[off[2]] : b[off[3]];
}

#elif defined(TYPE)
// NaN-propagating max / min (clamp is minimum(maximum(x, lo), hi))
inline C K(mx)(C u, C v) { return ISNAN(u) ? u : ISNAN(v) ? v : (u >= v ? u : v); }
inline C K(mn)(C u, C v) { return ISNAN(u) ? u : ISNAN(v) ? v : (u <= v ? u : v); }

// op: OP_LERP, OP_ADDCMUL, OP_ADDCDIV (value: the scalar factor) or OP_CLAMP (flags in
// `value`: 1 has a lower bound tensor b, 2 has an upper bound tensor c).
__kernel void K(ternary)(int op, Geom g, __global S* o, __global const S* a,
                         __global const S* b, __global const S* c, VT value) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[4];
  EW_OFFSETS(&g, i, 4, off);
  const C x = LD(a, off[1]), y = LD(b, off[2]), z = LD(c, off[3]);
  C r;
  switch (op) {
#if KIND == 2
    case OP_LERP: {
      const C d = y - x;
      r = fabs(z) < (C)0.5 ? x + z * d : y - d * ((C)1 - z);
      break;
    }
    case OP_ADDCMUL: r = x + value * (y * z); break;
    case OP_ADDCDIV: r = x + value * (y / z); break;
#elif KIND == 1
    case OP_ADDCMUL: r = (S)((UT)x + (UT)value * ((UT)y * (UT)z)); break;
#endif
    default: {   // OP_CLAMP
      const int flags = (int)value;
      r = x;
      if (flags & 1) r = K(mx)(r, y);
      if (flags & 2) r = K(mn)(r, z);
    }
  }
  ST(o, off[0], r);
}

// clamp to number bounds (the host fills absent ones with -inf/+inf or the dtype's range)
__kernel void K(clamp_scalar)(Geom g, __global S* o, __global const S* x, VT lo, VT hi) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[2];
  EW_OFFSETS(&g, i, 2, off);
  const C v = LD(x, off[1]);
#if KIND == 2
  const C r = K(mn)(K(mx)(v, (C)lo), (C)hi);
#else
  const C l = (C)lo, h = (C)hi;
  const C t = v < l ? l : v;
  const C r = t > h ? h : t;   // lo > hi gives hi, as PyTorch
#endif
  ST(o, off[0], r);
}
#endif
