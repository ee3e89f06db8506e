// matmul.cl: batched GEMM c[b] = a[b] @ b[b] on strided operands (a transposed input is
// just other strides). Two kernels:
//   gemm      GPUs and every dtype: tiles of TM x TN outputs per 16x16 work-group, each
//             work-item a 4x4 register block; TK-deep slices of a and b staged in local
//             memory.
//   gemm_cpu  CPU devices (PoCL), float32: no local memory and no barriers (PoCL runs a
//             work-group as a loop, and staging through local memory only adds copies);
//             each work-item keeps a CPU_CM x (2 * CPU_VW) block of c in registers (two
//             vectors of the device's width per row) and walks k, reading one row of a
//             packed panel of b (see pack_b) and CPU_CM scalars of a per step.

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

#if KIND == 2 && MANT == 24   // float32 only
// CPU_VW float lanes per vector (the device's native width, 16 with AVX-512, 8 with AVX2)
// and CPU_CM rows of c per work-item: 2 * CPU_CM vector accumulators, 2 of b and the
// broadcast of a fit the register file (32 zmm: CM 12; 16 ymm: CM 6). PW = 2 * CPU_VW
// columns of c per work-item.
//
// Every accumulator is a variable of its own (ROWS spells the rows out) and vectors are
// loaded and stored element by element, which the compiler turns into one vector move:
// PoCL compiles vloadN / vstoreN as calls to its library, and a call in the k loop made
// the compiler keep every accumulator on the stack around it (measured on PoCL, AVX2,
// 1024^3: 48 GFLOP/s with vload8, 200 without).
#define PW (2 * CPU_VW)
#define VF CAT(float, CPU_VW)
#if CPU_VW == 16
#define VLDU(p) ((VF)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7], \
                      (p)[8], (p)[9], (p)[10], (p)[11], (p)[12], (p)[13], (p)[14], (p)[15]))
#define VSTU(v, p) do { VF v_ = (v); (p)[0] = v_.s0; (p)[1] = v_.s1; (p)[2] = v_.s2; \
    (p)[3] = v_.s3; (p)[4] = v_.s4; (p)[5] = v_.s5; (p)[6] = v_.s6; (p)[7] = v_.s7; \
    (p)[8] = v_.s8; (p)[9] = v_.s9; (p)[10] = v_.sa; (p)[11] = v_.sb; (p)[12] = v_.sc; \
    (p)[13] = v_.sd; (p)[14] = v_.se; (p)[15] = v_.sf; } while (0)
#elif CPU_VW == 8
#define VLDU(p) ((VF)((p)[0], (p)[1], (p)[2], (p)[3], (p)[4], (p)[5], (p)[6], (p)[7]))
#define VSTU(v, p) do { VF v_ = (v); (p)[0] = v_.s0; (p)[1] = v_.s1; (p)[2] = v_.s2; \
    (p)[3] = v_.s3; (p)[4] = v_.s4; (p)[5] = v_.s5; (p)[6] = v_.s6; (p)[7] = v_.s7; } while (0)
#else
#error "gemm_cpu: CPU_VW must be 8 or 16"
#endif
#if CPU_CM == 12
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#elif CPU_CM == 6
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#else
#error "gemm_cpu: CPU_CM must be 6 or 12"
#endif

// b packed by pack_b as panels of PW columns, each [k][PW] contiguous (zero beyond m): a
// work-item streams one panel front to back (no cache-set conflicts between rows of b, no
// ragged edge). Global size (ceil(m / PW), ceil(ceil(n / CM) / rb), batch): each work-item
// computes rb blocks of CPU_CM rows in turn with the same panel (warm in its cache; PoCL
// pays per work-group, which matters when k is short); requires g.sc[2] == 1.
__kernel void K(gemm_cpu)(CAT(MGeom_, SFX) g, __global float* c, __global const float* a,
                          __global const float* panels, long poff, int rb) {
  const long p = get_global_id(0), col0 = p * PW;
  const long bt = get_global_id(2);
  const long ao = g.aoff + bt * g.sa[0];
  const __global float* bp = panels + poff + (bt * get_global_size(0) + p) * g.k * PW;
  const long co = g.coff + bt * g.sc[0];
  const long ncol = min((long)PW, g.m - col0);
  const long sa2 = g.sa[2];
  for (int blk = 0; blk < rb; ++blk) {
    const long row0 = (get_global_id(1) * rb + blk) * CPU_CM;
    if (row0 >= g.n) break;
    // rows past n read row n - 1 (in bounds) and are not stored
#define ROW_INIT(i) \
    const __global float* a##i = a + ao + min(row0 + i, g.n - 1) * g.sa[1]; \
    VF c##i##_0 = (VF)(0.0f), c##i##_1 = (VF)(0.0f);
    ROWS(ROW_INIT)
    const __global float* bk = bp;
    long ak = 0;
    for (long kk = 0; kk < g.k; ++kk, bk += PW, ak += sa2) {
      const VF b0 = VLDU(bk), b1 = VLDU(bk + CPU_VW);
#define ROW_STEP(i) { \
      const VF av = (VF)(a##i[ak]); \
      c##i##_0 += av * b0; \
      c##i##_1 += av * b1; }
      ROWS(ROW_STEP)
    }
#define ROW_STORE(i) \
    if (row0 + i < g.n) { \
      __global float* cr = c + co + (row0 + i) * g.sc[1] + col0; \
      if (ncol == PW) { \
        VSTU(c##i##_0, cr); \
        VSTU(c##i##_1, cr + CPU_VW); \
      } else { \
        float t[PW]; \
        VSTU(c##i##_0, t); \
        VSTU(c##i##_1, t + CPU_VW); \
        for (int j = 0; j < ncol; ++j) cr[j] = t[j]; \
      } \
    }
    ROWS(ROW_STORE)
#undef ROW_INIT
#undef ROW_STEP
#undef ROW_STORE
  }
}

// b [B, k, m] (any strides) -> gemm_cpu's panels [B][ceil(m / PW)][k][PW]. Global size
// (panels, ceil(k / PACK_K), B): a work-item copies PACK_K rows of one panel, with vector
// loads when b's rows are contiguous (b row-major), reading along k when its columns are
// (k_fast: b = w.t(), a Linear's weight), element by element otherwise.
__kernel void K(pack_b)(CAT(MGeom_, SFX) g, __global float* out, long ooff,
                        __global const float* b, int k_fast) {
  const long p = get_global_id(0), k0 = get_global_id(1) * PACK_K, bt = get_global_id(2);
  const long col0 = p * PW, kend = min(k0 + PACK_K, g.k);
  const long ncol = min((long)PW, g.m - col0);
  __global float* o = out + ooff + (bt * get_global_size(0) + p) * g.k * PW;
  const __global float* src = b + g.boff + bt * g.sb[0];
  if (g.sb[2] == 1 && ncol == PW) {
    for (long kk = k0; kk < kend; ++kk) {
      const __global float* r = src + kk * g.sb[1] + col0;
      VSTU(VLDU(r), o + kk * PW);
      VSTU(VLDU(r + CPU_VW), o + kk * PW + CPU_VW);
    }
  } else if (k_fast) {
    for (int j = 0; j < PW; ++j) {
      const __global float* col = src + (col0 + j) * g.sb[2];
      for (long kk = k0; kk < kend; ++kk) o[kk * PW + j] = j < ncol ? col[kk] : 0.0f;
    }
  } else {
    for (long kk = k0; kk < kend; ++kk)
      for (int j = 0; j < PW; ++j)
        o[kk * PW + j] = j < ncol ? src[kk * g.sb[1] + (col0 + j) * g.sb[2]] : 0.0f;
  }
}
#undef PW
#undef VF
#undef VLDU
#undef VSTU
#undef ROWS
#endif
#endif
