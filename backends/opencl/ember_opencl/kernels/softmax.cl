// softmax.cl: softmax / log_softmax along one dim, in ACC (float for float32 and the half
// types): m = max(x), s = sum(exp(x - m)); softmax = exp(x - m) / s,
// log_softmax = (x - m) - log(s).
//   softmax_wi: one work-item per line (short lines, e.g. class logits)
//   softmax_wg: one work-group per line, tree reductions in local memory

#if defined(TYPE) && KIND == 2
inline ACC K(smax)(ACC a, ACC b) { return (b > a || b != b) ? b : a; }

inline void K(sm_write)(int op, RGeom* g, __global S* o, __global const S* x, long xo, long oo,
                        long j, ACC m, ACC s) {
  const ACC z = (ACC)LD(x, xo + j * g->rx[0]) - m;
  ST(o, oo + j * g->ro[0], (C)(op == OP_LOG_SOFTMAX ? z - log(s) : exp(z) / s));
}

__kernel void K(softmax_wi)(int op, RGeom g, __global S* o, __global const S* x) {
  const long line = get_global_id(0);
  if (line >= g.nout) return;
  long xo, oo;
  rgeom_kept(&g, line, &xo, &oo);
  ACC m = -INFINITY, s = 0;
  for (long j = 0; j < g.nred; ++j) m = K(smax)(m, (ACC)LD(x, xo + j * g.rx[0]));
  for (long j = 0; j < g.nred; ++j) s += exp((ACC)LD(x, xo + j * g.rx[0]) - m);
  for (long j = 0; j < g.nred; ++j) K(sm_write)(op, &g, o, x, xo, oo, j, m, s);
}

__kernel void K(softmax_wg)(int op, RGeom g, __global S* o, __global const S* x) {
  __local ACC buf[RL];
  const long line = get_group_id(0);
  const int lid = get_local_id(0);
  long xo, oo;
  rgeom_kept(&g, line, &xo, &oo);
  ACC m = -INFINITY;
  for (long j = lid; j < g.nred; j += RL) m = K(smax)(m, (ACC)LD(x, xo + j * g.rx[0]));
  buf[lid] = m;
  for (int s = RL / 2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s) buf[lid] = K(smax)(buf[lid], buf[lid + s]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  m = buf[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  ACC s = 0;
  for (long j = lid; j < g.nred; j += RL) s += exp((ACC)LD(x, xo + j * g.rx[0]) - m);
  buf[lid] = s;
  for (int k = RL / 2; k > 0; k >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < k) buf[lid] += buf[lid + k];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  s = buf[0];
  for (long j = lid; j < g.nred; j += RL) K(sm_write)(op, &g, o, x, xo, oo, j, m, s);
}
#endif
