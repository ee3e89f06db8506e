// conv.cl: the convolution and pooling building blocks, as the CPU backend's conv.cpp.
//
//   im2col   x (N, C, *sp) -> cols (N, C, *kernel, *blocks); outside the input: `value`
//   col2im   cols (N, C, *kernel, *blocks) summed into (N, C, *size); outside: dropped
//   max_pool window maxima (NaN wins) and flat indices into each input plane
//
// 1 to 3 spatial dims, padded to 3 by the host with size-1 leading dims. One work-item
// per row (every coordinate but the last spatial one) walking the row, so the index
// arithmetic is paid once per row, not per element.

#ifndef CONV_GEOM_DEFINED
#define CONV_GEOM_DEFINED
// img: the (N, C, *sp) tensor, col: the (N, C, *kernel, *blocks) tensor (max_pool: the
// (N, C, *blocks) values, kernel strides 0), idx: max_pool's indices (N, C, *blocks).
typedef struct {
  long rows;                                    // work-items
  long nb, nc;                                  // batch, channels
  long size[3], ker[3], dil[3], pad[3], str[3], blk[3];  // input size, kernel, dilation,
                                                      // padding, stride, blocks
  long img_off, img_n, img_c, img_s[3];
  long col_off, col_n, col_c, col_k[3], col_b[3];
  long idx_off, idx_n, idx_c, idx_b[3];
} CGeom;

inline int in_range(long i, long n) { return i >= 0 && i < n; }
#endif

#if defined(TYPE)
// rows: (n, c, k0, k1, k2, b0, b1); each walks b2
__kernel void K(im2col)(CGeom g, __global S* o, __global const S* x, VT value) {
  const long r = get_global_id(0);
  if (r >= g.rows) return;
  long q = r;
  const long b1 = q % g.blk[1]; q /= g.blk[1];
  const long b0 = q % g.blk[0]; q /= g.blk[0];
  const long k2 = q % g.ker[2]; q /= g.ker[2];
  const long k1 = q % g.ker[1]; q /= g.ker[1];
  const long k0 = q % g.ker[0]; q /= g.ker[0];
  const long c = q % g.nc, n = q / g.nc;
  const long i0 = b0 * g.str[0] - g.pad[0] + k0 * g.dil[0];
  const long i1 = b1 * g.str[1] - g.pad[1] + k1 * g.dil[1];
  const long off = k2 * g.dil[2] - g.pad[2];
  const int row_in = in_range(i0, g.size[0]) && in_range(i1, g.size[1]);
  const long xr = g.img_off + n * g.img_n + c * g.img_c + i0 * g.img_s[0] + i1 * g.img_s[1];
  const long orow = g.col_off + n * g.col_n + c * g.col_c + k0 * g.col_k[0] + k1 * g.col_k[1]
                    + k2 * g.col_k[2] + b0 * g.col_b[0] + b1 * g.col_b[1];
  const C fill = (C)value;
  for (long b = 0; b < g.blk[2]; ++b) {
    const long i2 = b * g.str[2] + off;
    const C v = row_in && in_range(i2, g.size[2]) ? (C)LD(x, xr + i2 * g.img_s[2]) : fill;
    ST(o, orow + b * g.col_b[2], v);
  }
}

#if KIND > 0
// rows: (n, c, i0, i1); each walks i2 and gathers the blocks that cover each position, in
// kernel order (the order the CPU backend adds them in)
__kernel void K(col2im)(CGeom g, __global S* o, __global const S* cols) {
  const long r = get_global_id(0);
  if (r >= g.rows) return;
  long q = r;
  const long i1 = q % g.size[1]; q /= g.size[1];
  const long i0 = q % g.size[0]; q /= g.size[0];
  const long c = q % g.nc, n = q / g.nc;
  const long orow = g.img_off + n * g.img_n + c * g.img_c + i0 * g.img_s[0] + i1 * g.img_s[1];
  const long cbase = g.col_off + n * g.col_n + c * g.col_c;
  for (long i2 = 0; i2 < g.size[2]; ++i2) {
    ACC acc = 0;
    for (long k0 = 0; k0 < g.ker[0]; ++k0) {
      const long t0 = i0 + g.pad[0] - k0 * g.dil[0];
      const long b0 = t0 / g.str[0];
      if (t0 < 0 || b0 * g.str[0] != t0 || b0 >= g.blk[0]) continue;
      for (long k1 = 0; k1 < g.ker[1]; ++k1) {
        const long t1 = i1 + g.pad[1] - k1 * g.dil[1];
        const long b1 = t1 / g.str[1];
        if (t1 < 0 || b1 * g.str[1] != t1 || b1 >= g.blk[1]) continue;
        const long crow = cbase + k0 * g.col_k[0] + k1 * g.col_k[1] + b0 * g.col_b[0]
                          + b1 * g.col_b[1];
        for (long k2 = 0; k2 < g.ker[2]; ++k2) {
          const long t2 = i2 + g.pad[2] - k2 * g.dil[2];
          const long b2 = t2 / g.str[2];
          if (t2 < 0 || b2 * g.str[2] != t2 || b2 >= g.blk[2]) continue;
#if KIND == 2
          acc += (ACC)LD(cols, crow + k2 * g.col_k[2] + b2 * g.col_b[2]);
#else
          acc = (ACC)((ulong)acc + (ulong)(long)LD(cols, crow + k2 * g.col_k[2] + b2 * g.col_b[2]));
#endif
        }
      }
    }
    ST(o, orow + i2 * g.img_s[2], (C)acc);
  }
}

// rows: (n, c, b0, b1); each walks b2. PyTorch's rule: the first position inside the
// input is the default index, then a strictly greater value (or a NaN) wins.
__kernel void K(max_pool)(CGeom g, __global S* values, __global long* indices,
                          __global const S* x) {
  const long r = get_global_id(0);
  if (r >= g.rows) return;
  long q = r;
  const long b1 = q % g.blk[1]; q /= g.blk[1];
  const long b0 = q % g.blk[0]; q /= g.blk[0];
  const long c = q % g.nc, n = q / g.nc;
  const long xp = g.img_off + n * g.img_n + c * g.img_c;
  const long vrow = g.col_off + n * g.col_n + c * g.col_c + b0 * g.col_b[0] + b1 * g.col_b[1];
  const long irow = g.idx_off + n * g.idx_n + c * g.idx_c + b0 * g.idx_b[0] + b1 * g.idx_b[1];
  const long s0 = b0 * g.str[0] - g.pad[0], s1 = b1 * g.str[1] - g.pad[1];
  for (long b = 0; b < g.blk[2]; ++b) {
    const long s2 = b * g.str[2] - g.pad[2];
    C best = LOWEST;
    long bi = -1;
    for (long k0 = 0; k0 < g.ker[0]; ++k0) {
      const long i0 = s0 + k0 * g.dil[0];
      if (!in_range(i0, g.size[0])) continue;
      for (long k1 = 0; k1 < g.ker[1]; ++k1) {
        const long i1 = s1 + k1 * g.dil[1];
        if (!in_range(i1, g.size[1])) continue;
        const long xr = xp + i0 * g.img_s[0] + i1 * g.img_s[1];
        const long flat = (i0 * g.size[1] + i1) * g.size[2];
        for (long k2 = 0; k2 < g.ker[2]; ++k2) {
          const long i2 = s2 + k2 * g.dil[2];
          if (!in_range(i2, g.size[2])) continue;
          const C v = LD(x, xr + i2 * g.img_s[2]);
          if (v > best || ISNAN(v) || bi < 0) {
            best = v;
            bi = flat + i2;
          }
        }
      }
    }
    ST(values, vrow + b * g.col_b[2], best);
    indices[irow + b * g.idx_b[2]] = bi < 0 ? 0 : bi;
  }
}
#endif
#endif
