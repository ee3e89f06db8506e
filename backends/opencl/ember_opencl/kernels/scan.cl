// scan.cl: cumsum / cumprod along one dim (inclusive), accumulating in SACC (the widest
// float, or int64).
//   scan_wi: one work-item per line, serial (many short lines)
//   scan_wg: one work-group per line: chunks of RL elements scanned in local memory
//            (Hillis-Steele), each chunk offset by the running total of the previous ones.

#if defined(TYPE)
// XLD: an element of x; a bool byte other than 0 / 1 is read as 1 (see reduce.cl)
#if KIND == 0
#define XLD(p, i) ((uchar)(LD(p, i) != 0))
#else
#define XLD(p, i) LD(p, i)
#endif
#if KIND == 2
#define SCAN_OP(op, a, b) ((op) == OP_CUMPROD ? (a) * (b) : (a) + (b))
#else
#define SCAN_OP(op, a, b) \
  ((op) == OP_CUMPROD ? (long)((ulong)(a) * (ulong)(b)) : (long)((ulong)(a) + (ulong)(b)))
#endif

__kernel void K(scan_wi)(int op, RGeom g, __global S* o, __global const S* x) {
  const long line = get_global_id(0);
  if (line >= g.nout) return;
  long xo, oo;
  rgeom_kept(&g, line, &xo, &oo);
  SACC acc = op == OP_CUMPROD ? (SACC)1 : (SACC)0;
  for (long j = 0; j < g.nred; ++j) {
    acc = SCAN_OP(op, acc, (SACC)XLD(x, xo + j * g.rx[0]));
    ST(o, oo + j * g.ro[0], (C)acc);
  }
}

__kernel void K(scan_wg)(int op, RGeom g, __global S* o, __global const S* x) {
  __local SACC buf[RL];
  const long line = get_group_id(0);
  const int lid = get_local_id(0);
  long xo, oo;
  rgeom_kept(&g, line, &xo, &oo);
  SACC carry = op == OP_CUMPROD ? (SACC)1 : (SACC)0;
  for (long base = 0; base < g.nred; base += RL) {
    const long j = base + lid;
    SACC v = j < g.nred ? (SACC)XLD(x, xo + j * g.rx[0]) : (op == OP_CUMPROD ? (SACC)1 : (SACC)0);
    buf[lid] = v;
    for (int s = 1; s < RL; s <<= 1) {
      barrier(CLK_LOCAL_MEM_FENCE);
      const SACC prev = lid >= s ? buf[lid - s] : (op == OP_CUMPROD ? (SACC)1 : (SACC)0);
      barrier(CLK_LOCAL_MEM_FENCE);
      v = SCAN_OP(op, prev, v);
      buf[lid] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const SACC total = buf[RL - 1];
    if (j < g.nred) ST(o, oo + j * g.ro[0], (C)SCAN_OP(op, carry, v));
    carry = SCAN_OP(op, carry, total);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
#undef SCAN_OP
#undef XLD
#endif
