// matmul.cl: batched GEMM c[b] = a[b] @ b[b] on strided operands (a transposed input is
// just other strides). Tiles of TM x TN outputs per 16x16 work-group, each work-item a
// 4x4 register block; TK-deep slices of a and b staged in local memory.

#if defined(TYPE) && KIND > 0
typedef struct {
  long n, m, k, batch;
  long sa[3], sb[3], sc[3];   // strides of a [B, n, k], b [B, k, m], c [B, n, m]
  long aoff, boff, coff;
} CAT(MGeom_, SFX);

#if KIND == 2
#define MADD(acc, x, y) ((acc) + (x) * (y))
#else
#define MADD(acc, x, y) ((long)((ulong)(acc) + (ulong)(x) * (ulong)(y)))
#endif

__kernel __attribute__((reqd_work_group_size(16, 16, 1)))
void K(gemm)(CAT(MGeom_, SFX) g, __global S* c, __global const S* a, __global const S* b) {
  __local ACC As[TK][TM];
  __local ACC Bs[TK][TN];
  const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * 16 + tx;
  const long bt = get_group_id(2);
  const long row0 = get_group_id(1) * TM, col0 = get_group_id(0) * TN;
  const long ao = g.aoff + bt * g.sa[0], bo = g.boff + bt * g.sb[0];
  const int a_kfast = g.sa[2] == 1 || g.sa[1] != 1;   // read a along k (row-major a)
  const int b_mfast = g.sb[2] == 1 || g.sb[1] != 1;   // read b along m (row-major b)
  ACC acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0;
  for (long k0 = 0; k0 < g.k; k0 += TK) {
    for (int l = 0; l < (TM * TK) / 256; ++l) {
      const int e = tid + l * 256;
      const int r = a_kfast ? e / TK : e % TM, kk = a_kfast ? e % TK : e / TM;
      const long gr = row0 + r, gk = k0 + kk;
      As[kk][r] = (gr < g.n && gk < g.k) ? (ACC)LD(a, ao + gr * g.sa[1] + gk * g.sa[2]) : (ACC)0;
    }
    for (int l = 0; l < (TN * TK) / 256; ++l) {
      const int e = tid + l * 256;
      const int cc = b_mfast ? e % TN : e / TK, kk = b_mfast ? e / TN : e % TK;
      const long gc = col0 + cc, gk = k0 + kk;
      Bs[kk][cc] = (gc < g.m && gk < g.k) ? (ACC)LD(b, bo + gk * g.sb[1] + gc * g.sb[2]) : (ACC)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < TK; ++kk) {
      ACC av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = MADD(acc[i][j], av[i], bv[j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const long co = g.coff + bt * g.sc[0];
  for (int i = 0; i < 4; ++i) {
    const long r = row0 + ty + 16 * i;
    if (r >= g.n) continue;
    for (int j = 0; j < 4; ++j) {
      const long cc = col0 + tx + 16 * j;
      if (cc < g.m) ST(c, co + r * g.sc[1] + cc * g.sc[2], (C)acc[i][j]);
    }
  }
}
#undef MADD
#endif
