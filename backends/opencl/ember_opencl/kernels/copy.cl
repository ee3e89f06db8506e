// copy.cl: strided copies, casts between every pair of dtypes, fill, arange.
// Host side: ops/copy.py.

#if defined(BYTES)
// Same-dtype strided copy: moves S-sized elements (S: an unsigned type of the dtype's size).
__kernel void K(copy)(Geom g, __global S* o, __global const S* x) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[2];
  EW_OFFSETS(&g, i, 2, off);
  o[off[0]] = x[off[1]];
}

// fill: every element of o gets the bit pattern `bits` (the value encoded by the host).
__kernel void K(fill)(Geom g, __global S* o, S bits) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[1];
  EW_OFFSETS(&g, i, 1, off);
  o[off[0]] = bits;
}

#elif defined(PAIR)
// Cast O <- I with the CPU backend's conversion rules (see _source._convert).
__kernel void CAT(cast_, PAIR_SFX)(Geom g, __global O_S* o, __global const I_S* x) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[2];
  EW_OFFSETS(&g, i, 2, off);
#if I_KIND == 0
  // a bool byte other than 0 / 1 (a NumPy uint8 array viewed as bool) is true, as in
  // PyTorch and NumPy: cast it as 1, not as its byte
  const I_C v = (I_C)(I_LD(x, off[1]) != 0);
#else
  const I_C v = I_LD(x, off[1]);
#endif
  O_ST(o, off[0], CVT(v));
}

#elif defined(TYPE)
// arange: o[i] = start + i * step, in wrapping int64 arithmetic (use_int) or in the widest
// float type the device has.
__kernel void K(arange)(long n, __global S* o, long off, long st, long istart, long istep,
                        WF fstart, WF fstep, int use_int) {
  const long i = get_global_id(0);
  if (i >= n) return;
  C v;
  if (use_int) v = FROM_L((long)((ulong)istart + (ulong)i * (ulong)istep));
  else v = FROM_F(fstart + (WF)i * fstep);
  ST(o, off + i * st, v);
}
#endif
