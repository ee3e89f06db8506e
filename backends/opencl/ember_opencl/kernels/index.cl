// index.cl: gather and scatter along one dim (index tensors are int64).
//
// Indices are checked on the device: a bad one is reported through `err` (raised by the
// host at the next synchronisation). scatter first checks every index (index_check) and
// writes nothing if any is bad. scatter walks the dim serially per position (every other
// coordinate), so duplicate targets resolve deterministically, as on the CPU: the last
// write wins, or the reductions accumulate in index order.

#if defined(BYTES)
// Geom operands: 0 out, 1 index, 2 x with its stride along dim zeroed (xdst is that stride)
__kernel void K(gather)(Geom g, __global S* o, __global const long* index,
                        __global const S* x, long xdst, long size, int dim,
                        __global int* err) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[3];
  EW_OFFSETS(&g, i, 3, off);
  const long t = index[off[1]];
  if (t < 0 || t >= size) {
    report_error(err, ERR_INDEX, (EOP_GATHER << 8) | dim, t, size);
    o[off[0]] = 0;
    return;
  }
  o[off[0]] = x[off[2] + t * xdst];
}

// Geom over every index element (operand 0: index)
__kernel void K(index_check)(Geom g, __global const long* index, long size, int arg,
                             __global int* err) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[1];
  EW_OFFSETS(&g, i, 1, off);
  const long t = index[off[0]];
  if (t < 0 || t >= size) report_error(err, ERR_INDEX, arg, t, size);
}

// Geom over positions (index's shape without dim); operands 0 out, 1 index, 2 src.
// len: index's size along dim; *dst: strides along dim.
__kernel void K(scatter)(Geom g, __global S* o, __global const long* index,
                         __global const S* src, long len, long odst, long idst, long sdst,
                         __global const int* err) {
  const long i = get_global_id(0);
  if (i >= g.n || err[0] != 0) return;   // a pending error: write nothing
  long off[3];
  EW_OFFSETS(&g, i, 3, off);
  for (long j = 0; j < len; ++j) o[off[0] + index[off[1] + j * idst] * odst] = src[off[2] + j * sdst];
}

#elif defined(TYPE)
__kernel void K(scatter_reduce)(int op, Geom g, __global S* o, __global const long* index,
                                __global const S* src, long len, long odst, long idst,
                                long sdst, __global const int* err) {
  const long i = get_global_id(0);
  if (i >= g.n || err[0] != 0) return;
  long off[3];
  EW_OFFSETS(&g, i, 3, off);
  for (long j = 0; j < len; ++j) {
    const long p = off[0] + index[off[1] + j * idst] * odst;
    const C a = LD(o, p), b = LD(src, off[2] + j * sdst);
    C r;
#if KIND == 2
    r = op == OP_MUL ? a * b : a + b;
#elif KIND == 1
    r = op == OP_MUL ? (S)((UT)a * (UT)b) : (S)((UT)a + (UT)b);
#else
    r = op == OP_MUL ? (a & b) : (a | b);
#endif
    ST(o, p, r);
  }
}
#endif
