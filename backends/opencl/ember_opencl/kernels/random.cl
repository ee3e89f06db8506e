// random.cl: uniform and normal numbers from Philox4x32-10, counter-based: element i of a
// launch uses counter (offset + i) under key seed, so results depend only on
// (seed, offset) and equal the CPU backend's (dispatcher/include/ember/philox.h gives the
// exact formulas), up to the rounding of the float math.

#if defined(TYPE) && KIND == 2
#ifndef PHILOX_DEFINED
#define PHILOX_DEFINED
inline uint4 philox10(ulong ctr, ulong seed) {
  uint c0 = (uint)ctr, c1 = (uint)(ctr >> 32), c2 = 0, c3 = 0;
  uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint hi0 = mul_hi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const uint hi1 = mul_hi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  return (uint4)(c0, c1, c2, c3);
}
#endif

__kernel void K(uniform)(long n, __global S* o, long off, long st, WF low, WF high,
                         ulong seed, ulong offset) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const uint4 w = philox10(offset + (ulong)i, seed);
#if MANT == 53
  const WF u = (WF)((((ulong)w.x << 32) | w.y) >> 11) * (WF)0x1.0p-53;
#else
  const WF u = (WF)(w.x >> (32 - MANT)) / (WF)(1u << MANT);
#endif
  ST(o, off + i * st, (C)(low + u * (high - low)));
}

__kernel void K(normal)(long n, __global S* o, long off, long st, WF mean, WF std,
                        ulong seed, ulong offset) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const uint4 w = philox10(offset + (ulong)i, seed);
  const WF u1 = ((WF)w.x + (WF)1) * (WF)0x1.0p-32;
  const WF u2 = (WF)w.y * (WF)0x1.0p-32;
  const WF z = sqrt((WF)-2 * log(u1)) * cos((WF)6.283185307179586476925286766559 * u2);
  ST(o, off + i * st, (C)(mean + std * z));
}
#endif
