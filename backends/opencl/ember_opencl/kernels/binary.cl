// binary.cl: out = f(a, b) for the arithmetic ops (same dtype in and out) and the
// comparisons / logical ops (bool out). Integer arithmetic wraps (two's complement, via
// UT); an integer division by zero or a negative integer power is reported through `err`.

#if defined(TYPE)
#if KIND == 2
// PyTorch's div_floor_floating
inline C K(div_floor)(C a, C b) {
  if (b == 0) return a / b;
  const C mod = fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= (C)1;
  if (div != 0) {
    C f = floor(div);
    if (div - f > (C)0.5) f += (C)1;
    return f;
  }
  return copysign((C)0, a / b);
}
#elif KIND == 1
inline S K(idiv)(int op, S x, S y) {
#if SIGNED
  if (y == -1) return (op == OP_FMOD || op == OP_REMAINDER) ? (S)0 : (S)((UT)0 - (UT)x);
  const S q = x / y, m = x % y;
  if (op == OP_DIV_TRUNC) return q;
  if (op == OP_DIV_FLOOR) return (m != 0 && ((m < 0) != (y < 0))) ? (S)(q - 1) : q;
  if (op == OP_FMOD) return m;
  return (m != 0 && ((y < 0) != (m < 0))) ? (S)(m + y) : m;
#else
  return (op == OP_FMOD || op == OP_REMAINDER) ? (S)(x % y) : (S)(x / y);
#endif
}

inline S K(ipow)(S base, S e) {
  UT r = 1, b = (UT)base;
  ulong k = (ulong)e;
  while (k) {
    if (k & 1) r *= b;
    b *= b;
    k >>= 1;
  }
  return (S)r;
}
#endif

__kernel void K(binary)(int op, Geom g, __global S* o, __global const S* a,
                        __global const S* b, __global int* err) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[3];
  EW_OFFSETS(&g, i, 3, off);
  const C x = LD(a, off[1]), y = LD(b, off[2]);
  C r;
  switch (op) {
#if KIND == 2
    case OP_ADD: r = x + y; break;
    case OP_SUB: r = x - y; break;
    case OP_MUL: r = x * y; break;
    case OP_DIV: r = x / y; break;
    case OP_DIV_TRUNC: r = trunc(x / y); break;
    case OP_DIV_FLOOR: r = K(div_floor)(x, y); break;
    case OP_MAXIMUM: r = (x != x) ? x : (y != y) ? y : (x >= y ? x : y); break;
    case OP_MINIMUM: r = (x != x) ? x : (y != y) ? y : (x <= y ? x : y); break;
    case OP_FMOD: r = fmod(x, y); break;
    case OP_REMAINDER: {
      C m = fmod(x, y);
      if (m != 0 && ((y < 0) != (m < 0))) m += y;
      r = m;
      break;
    }
    default: r = pow(x, y);   // OP_POW
#elif KIND == 1
    case OP_ADD: r = (S)((UT)x + (UT)y); break;
    case OP_SUB: r = (S)((UT)x - (UT)y); break;
    case OP_MUL: r = (S)((UT)x * (UT)y); break;
    case OP_MAXIMUM: r = x >= y ? x : y; break;
    case OP_MINIMUM: r = x <= y ? x : y; break;
    case OP_BITWISE_AND: r = x & y; break;
    case OP_BITWISE_OR: r = x | y; break;
    case OP_BITWISE_XOR: r = x ^ y; break;
    case OP_POW:
      if (SIGNED && y < 0) {
        report_error(err, ERR_NEG_POW, EOP_POW << 8, 0, 0);
        r = 0;
      } else {
        r = K(ipow)(x, y);
      }
      break;
    default:   // the divisions
      if (y == 0) {
        report_error(err, ERR_ZERO_DIV,
                     (op == OP_FMOD ? EOP_FMOD : op == OP_REMAINDER ? EOP_REMAINDER : EOP_DIV)
                         << 8, 0, 0);
        r = 0;
      } else {
        r = K(idiv)(op, x, y);
      }
#else  // bool: + is or, * is and
    case OP_ADD: case OP_MAXIMUM: case OP_BITWISE_OR: r = x | y; break;
    case OP_MUL: case OP_MINIMUM: case OP_BITWISE_AND: r = x & y; break;
    default: r = x ^ y;   // OP_BITWISE_XOR
#endif
  }
  ST(o, off[0], r);
}

__kernel void K(compare)(int op, Geom g, __global uchar* o, __global const S* a,
                         __global const S* b) {
  const long i = get_global_id(0);
  if (i >= g.n) return;
  long off[3];
  EW_OFFSETS(&g, i, 3, off);
  const C x = LD(a, off[1]), y = LD(b, off[2]);
  int r;
  switch (op) {
    case OP_EQ: r = x == y; break;
    case OP_NE: r = x != y; break;
    case OP_LT: r = x < y; break;
    case OP_LE: r = x <= y; break;
    case OP_GT: r = x > y; break;
    case OP_GE: r = x >= y; break;
    case OP_LOGICAL_AND: r = (x != 0) && (y != 0); break;
    case OP_LOGICAL_OR: r = (x != 0) || (y != 0); break;
    default: r = (x != 0) != (y != 0);   // OP_LOGICAL_XOR
  }
  o[off[0]] = (uchar)(r != 0);
}
#endif
