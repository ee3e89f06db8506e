// unary.cl: out = f(x) for every unary elementwise op (op codes OP_*, see ops/elementwise.py),
// and the bool-valued classifications isnan / isinf / isfinite / logical_not.

#if defined(TYPE)
__kernel void K(unary)(int op, Geom g, __global S* o, __global const S* x) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[2];
  EW_OFFSETS(&g, i, 2, off);
  const C v = LD(x, off[1]);
  C r;
  switch (op) {
#if KIND == 2
    case OP_EXP: r = exp(v); break;
    case OP_LOG: r = log(v); break;
    case OP_SIN: r = sin(v); break;
    case OP_COS: r = cos(v); break;
    case OP_TAN: r = tan(v); break;
    case OP_SQRT: r = sqrt(v); break;
    case OP_RSQRT: r = (C)1 / sqrt(v); break;
    case OP_ERF: r = erf(v); break;
    case OP_TANH: r = tanh(v); break;
    case OP_SIGMOID: r = (C)1 / ((C)1 + exp(-v)); break;
    case OP_RECIPROCAL: r = (C)1 / v; break;
    case OP_LOG1P: r = log1p(v); break;
    case OP_EXPM1: r = expm1(v); break;
    case OP_LOG2: r = log2(v); break;
    case OP_FLOOR: r = floor(v); break;
    case OP_CEIL: r = ceil(v); break;
    case OP_TRUNC: r = trunc(v); break;
    case OP_ROUND: r = rint(v); break;            // half to even
    case OP_NEG: r = -v; break;
    case OP_ABS: r = fabs(v); break;
    case OP_SIGN: r = (C)((v > 0) - (v < 0)); break;   // NaN -> 0, as PyTorch
#elif KIND == 1
    case OP_NEG: r = (S)((UT)0 - (UT)v); break;
#if SIGNED
    case OP_ABS: r = v < 0 ? (S)((UT)0 - (UT)v) : v; break;
#endif
    case OP_SIGN: r = (S)((v > 0) - (v < 0)); break;
    case OP_BITWISE_NOT: r = (S)(~v); break;
#else
    case OP_BITWISE_NOT: r = (uchar)!v; break;
#endif
    default: r = v;   // rounding of integers, abs of unsigned, sign of bool
  }
  ST(o, off[0], r);
}

__kernel void K(classify)(int op, Geom g, __global uchar* o, __global const S* x) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[2];
  EW_OFFSETS(&g, i, 2, off);
  const C v = LD(x, off[1]);
  int r;
  switch (op) {
#if KIND == 2
    case OP_ISNAN: r = isnan(v); break;
    case OP_ISINF: r = isinf(v); break;
    case OP_ISFINITE: r = isfinite(v); break;
#else
    case OP_ISNAN: r = 0; break;
    case OP_ISINF: r = 0; break;
    case OP_ISFINITE: r = 1; break;
#endif
    default: r = v == (C)0;   // logical_not
  }
  o[off[0]] = (uchar)(r != 0);
}
#endif
