// Depthwise convolution (groups == channels, one filter per channel), 1 to 3 spatial dims,
// computed directly: no im2col matrix K times the input's size, no GEMMs of one row. Three
// kernels, each the adjoint pair of the others (the schema's gradient formulas chain them):
//   depthwise_conv         out (N, C, *B) = sum_k w[c, k] x[n, c, b*S - P + k*D]
//   depthwise_conv_input   out (N, C, *I) = the same sum sent back to the input positions
//   depthwise_conv_weight  out (C, 1, *K) = sum over n, b of g[n, c, b] x[n, c, b*S - P + k*D]
// Kernel arguments: (out, a, b, kernel, dilation, padding, stride, sizes), the convention
// of im2col (<ember/ops.h>). Sums run in the compute type (float for half types).
//
// Channels are processed in blocks of V = 8: a task copies its (n, channel block) input
// into a zero-padded buffer laid out (*I_padded, V), so every tap is V multiply-adds over
// consecutive lanes (vectorised, with no bounds checks), and copies its (*B, V) result back
// to the NCHW layout (the blocked layout oneDNN uses for the same reason).
#include <vector>

#include <ember/ops.h>

#include "ember.h"

namespace ember {

namespace {

struct DwArgs {
  Tensor out, a, b;
  int nd;
  ConvGeom g;
};

// Parse and check; ``geom_of`` is the (N, C, *I) tensor giving the input sizes, ``blocks_of``
// the (N, C, *B) tensor giving the output blocks, ``weight`` the (C, 1, *K) filter.
DwArgs parse(const char* op, PyObject* const* a, Py_ssize_t n, PyObject* kw, int geom_of,
             int blocks_of, int weight) {
  Args args(op, a, n, kw, {"out", "a", "b", "kernel", "dilation", "padding", "stride", "sizes"}, 8);
  DwArgs r{args.out(0), args.tensor(1), args.tensor(2), 0, {}};
  const Tensor* t[3] = {&r.out, &r.a, &r.b};
  check_same_dtype(op, r.out, r.a);
  check_same_dtype(op, r.out, r.b);
  int64_t sizes[3];
  r.g = detail::read_conv_geom(args, 3, *t[geom_of], r.nd, sizes);
  const int nd = r.nd;
  const Tensor& bl = *t[blocks_of];
  const Tensor& w = *t[weight];
  if (bl.ndim != 2 + nd || bl.shape[0] != r.g.N || bl.shape[1] != r.g.C)
    raise(PyExc_ValueError, "%s(): %s does not match the input %s", op, shape_str(bl).c_str(),
          shape_str(*t[geom_of]).c_str());
  if (w.ndim != 2 + nd || w.shape[0] != r.g.C || w.shape[1] != 1)
    raise(PyExc_ValueError, "%s(): the filter %s must be (C, 1, *kernel) with C = %lld", op,
          shape_str(w).c_str(), (long long)r.g.C);
  for (int i = 0; i < nd; ++i)
    if (w.shape[2 + i] != r.g.K[3 - nd + i])
      raise(PyExc_ValueError, "%s(): the filter %s does not match the kernel size", op,
            shape_str(w).c_str());
  shape3(bl, 2, nd, r.g.B);
  return r;
}

constexpr int V = 8;  // channels per block (lanes)

// V lanes of the compute type as 16-byte GCC vectors (the baseline target's SSE registers;
// a wider generic vector would be lowered element by element), loaded and stored unaligned
template <class A>
struct Lanes {
  static constexpr int W = 16 / (int)sizeof(A), N = V / W;
  typedef A vec __attribute__((vector_size(16)));
  typedef A uvec __attribute__((vector_size(16), aligned(alignof(A))));  // unaligned access
  vec r[N];
  static Lanes zero() {
    Lanes l;
    for (int i = 0; i < N; ++i) l.r[i] = vec{};
    return l;
  }
  static Lanes load(const A* p) {
    Lanes l;
    for (int i = 0; i < N; ++i) l.r[i] = *(const uvec*)(p + i * W);
    return l;
  }
  void store(A* p) const {
    for (int i = 0; i < N; ++i) *(uvec*)(p + i * W) = r[i];
  }
  void madd(const Lanes& a, const Lanes& b) {  // this += a * b
    for (int i = 0; i < N; ++i) r[i] += a.r[i] * b.r[i];
  }
};

// The blocked geometry shared by the three kernels: padded input sizes Ip, so that every
// tap of every output block reads inside the buffer (the low side shifted by P).
struct Blocked {
  const ConvGeom& g;
  int64_t Ip[3];
  int64_t cblocks, kn, bn, ipn;
  explicit Blocked(const ConvGeom& g_) : g(g_) {
    for (int d = 0; d < 3; ++d)
      Ip[d] = std::max(g.I[d] + g.P[d], (g.B[d] - 1) * g.S[d] + (g.K[d] - 1) * g.D[d] + 1);
    cblocks = (g.C + V - 1) / V;
    kn = g.K[0] * g.K[1] * g.K[2];
    bn = g.B[0] * g.B[1] * g.B[2];
    ipn = Ip[0] * Ip[1] * Ip[2];
  }
  // lane offset (in units of V) of tap k in the padded buffer, relative to block b's origin
  int64_t tap(int64_t k0, int64_t k1, int64_t k2) const {
    return (k0 * g.D[0] * Ip[1] + k1 * g.D[1]) * Ip[2] + k2 * g.D[2];
  }
  int64_t origin(int64_t b0, int64_t b1, int64_t b2) const {
    return (b0 * g.S[0] * Ip[1] + b1 * g.S[1]) * Ip[2] + b2 * g.S[2];
  }
  // the padded-buffer index of input position i
  int64_t padded(int64_t i0, int64_t i1, int64_t i2) const {
    return ((i0 + g.P[0]) * Ip[1] + (i1 + g.P[1])) * Ip[2] + (i2 + g.P[2]);
  }
  // a task's work in multiply-adds (for the grain)
  int64_t grain() const { return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, bn * kn * V + ipn * V)); }
};

// lanes [0, nc) of the (N, C, *sizes) tensor t at batch n, channels c0.., into buf
// (positions, V) at index(position); the other lanes and positions are left as they are
template <class T, class A, class Index>
void gather_block(const Tensor& t, const int64_t* ts, const int64_t* sz, int64_t n, int64_t c0, int nc, A* buf,
                  Index&& index) {
  const T* base = (const T*)t.data + n * t.stride[0] + c0 * t.stride[1];
  for (int v = 0; v < nc; ++v) {
    const T* p = base + v * t.stride[1];
    for (int64_t i0 = 0; i0 < sz[0]; ++i0)
      for (int64_t i1 = 0; i1 < sz[1]; ++i1) {
        const T* row = p + i0 * ts[0] + i1 * ts[1];
        A* dst = buf + index(i0, i1, 0) * V + v;
        if (ts[2] == 1) {
          for (int64_t i2 = 0; i2 < sz[2]; ++i2) dst[i2 * V] = (A)row[i2];
        } else {
          for (int64_t i2 = 0; i2 < sz[2]; ++i2) dst[i2 * V] = (A)row[i2 * ts[2]];
        }
      }
  }
}

// the inverse: lanes [0, nc) of buf (positions, V) into t at batch n, channels c0..
template <class T, class A, class Index>
void scatter_block(const Tensor& t, const int64_t* ts, const int64_t* sz, int64_t n, int64_t c0, int nc, const A* buf,
                   Index&& index) {
  T* base = (T*)t.data + n * t.stride[0] + c0 * t.stride[1];
  for (int v = 0; v < nc; ++v) {
    T* p = base + v * t.stride[1];
    for (int64_t i0 = 0; i0 < sz[0]; ++i0)
      for (int64_t i1 = 0; i1 < sz[1]; ++i1) {
        T* row = p + i0 * ts[0] + i1 * ts[1];
        const A* src = buf + index(i0, i1, 0) * V + v;
        for (int64_t i2 = 0; i2 < sz[2]; ++i2) row[i2 * ts[2]] = cvt<T>(src[i2 * V]);
      }
  }
}

// the filters of channels c0.. as (K, V), zero in lanes past C
template <class T, class A>
void gather_filters(const Tensor& w, const int64_t* ws, const Blocked& bl, int64_t c0, int nc, A* wb) {
  const ConvGeom& g = bl.g;
  std::fill(wb, wb + bl.kn * V, A(0));
  const T* pw = (const T*)w.data;
  for (int v = 0; v < nc; ++v)
    for (int64_t k0 = 0, k = 0; k0 < g.K[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
        for (int64_t k2 = 0; k2 < g.K[2]; ++k2, ++k)
          wb[k * V + v] = (A)pw[(c0 + v) * w.stride[0] + k0 * ws[0] + k1 * ws[1] + k2 * ws[2]];
}

// Per-thread scratch buffer ``slot`` of at least n elements (the tasks of a kernel reuse
// them instead of allocating their buffers each)
template <class A>
std::vector<A>& scratch(int slot, size_t n) {
  thread_local std::vector<A> bufs[3];
  std::vector<A>& b = bufs[slot];
  if (b.size() != n) b.assign(n, A(0));
  return b;
}

// Runs f(n, c0, nc) over the (batch, channel block) tasks in parallel
template <class F>
void over_blocks(const Blocked& bl, int64_t nbatch, F&& f) {
  const int64_t C = bl.g.C;
  parallel_for(0, nbatch * bl.cblocks, bl.grain(), [&](int64_t s, int64_t e) {
    for (int64_t t = s; t < e; ++t) {
      const int64_t n = t / bl.cblocks, c0 = t % bl.cblocks * V;
      f(n, c0, (int)std::min<int64_t>(V, C - c0));
    }
  });
}

// out (N, C, *B) = depthwise convolution of x (N, C, *I) with w (C, 1, *K)
void k_depthwise_conv(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const DwArgs r = parse("depthwise_conv", a, n, kw, 1, 0, 2);
  const Tensor &out = r.out, &x = r.a, &w = r.b;
  const ConvGeom& g = r.g;
  if (out.numel == 0) return;
  int64_t xs[3], os[3], ws[3];
  strides3(x, 2, r.nd, xs);
  strides3(out, 2, r.nd, os);
  strides3(w, 2, r.nd, ws);
  const Blocked bl(g);
  NoGil nogil(out.numel * bl.kn >= kGilThreshold);
  dispatch<M_FLOAT>(x.dtype, "depthwise_conv", [&](auto tag) {
    using T = EMBER_T(tag);
    using A = compute_t<T>;
    over_blocks(bl, g.N, [&](int64_t nn, int64_t c0, int nc) {
      std::vector<A>& xb = scratch<A>(0, (size_t)(bl.ipn * V));
      std::vector<A>& ob = scratch<A>(1, (size_t)(bl.bn * V));
      std::vector<A>& wb = scratch<A>(2, (size_t)(bl.kn * V));
      std::fill(xb.begin(), xb.end(), A(0));
      std::vector<int64_t> taps((size_t)bl.kn);
      for (int64_t k0 = 0, k = 0; k0 < g.K[0]; ++k0)
        for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
          for (int64_t k2 = 0; k2 < g.K[2]; ++k2) taps[(size_t)k++] = bl.tap(k0, k1, k2) * V;
      gather_filters<T, A>(w, ws, bl, c0, nc, wb.data());
      gather_block<T, A>(x, xs, g.I, nn, c0, nc, xb.data(),
                         [&](int64_t i0, int64_t i1, int64_t i2) { return bl.padded(i0, i1, i2); });
      A* o = ob.data();
      for (int64_t b0 = 0; b0 < g.B[0]; ++b0)
        for (int64_t b1 = 0; b1 < g.B[1]; ++b1)
          for (int64_t b2 = 0; b2 < g.B[2]; ++b2, o += V) {
            const A* xo = xb.data() + bl.origin(b0, b1, b2) * V;
            Lanes<A> acc = Lanes<A>::zero();
            for (int64_t k = 0; k < bl.kn; ++k)
              acc.madd(Lanes<A>::load(wb.data() + k * V), Lanes<A>::load(xo + taps[(size_t)k]));
            acc.store(o);
          }
      scatter_block<T, A>(out, os, g.B, nn, c0, nc, ob.data(),
                          [&](int64_t b0, int64_t b1, int64_t b2) { return (b0 * g.B[1] + b1) * g.B[2] + b2; });
    });
  });
}
EMBER_KERNEL("depthwise_conv", k_depthwise_conv);

// out (N, C, *I) = the gradient of depthwise_conv's input: grad (N, C, *B), w (C, 1, *K)
void k_depthwise_conv_input(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const DwArgs r = parse("depthwise_conv_input", a, n, kw, 0, 1, 2);
  const Tensor &out = r.out, &gr = r.a, &w = r.b;
  const ConvGeom& g = r.g;
  if (out.numel == 0) return;
  int64_t gs[3], os[3], ws[3];
  strides3(gr, 2, r.nd, gs);
  strides3(out, 2, r.nd, os);
  strides3(w, 2, r.nd, ws);
  const Blocked bl(g);
  NoGil nogil(out.numel >= kGilThreshold);
  dispatch<M_FLOAT>(out.dtype, "depthwise_conv_input", [&](auto tag) {
    using T = EMBER_T(tag);
    using A = compute_t<T>;
    bool unit = true;
    for (int d = 0; d < 3; ++d) unit = unit && g.S[d] == 1;
    if (unit) {
      // unit stride: each input position gathers its gradient through the flipped taps
      // from the zero-padded gradient (a full correlation): sums in registers, and only the
      // real input positions computed. Gp: the gradient's padded sizes, shifted by
      // (K - 1) * D so that every flipped tap stays inside.
      int64_t Gp[3], sh[3];
      for (int d = 0; d < 3; ++d) {
        sh[d] = (g.K[d] - 1) * g.D[d];
        Gp[d] = std::max(g.I[d] + g.P[d] + sh[d], g.B[d] + sh[d]);
      }
      const int64_t gpn = Gp[0] * Gp[1] * Gp[2], In = g.I[0] * g.I[1] * g.I[2];
      over_blocks(bl, g.N, [&](int64_t nn, int64_t c0, int nc) {
        std::vector<A>& gz = scratch<A>(0, (size_t)(gpn * V));
        std::vector<A>& ob = scratch<A>(1, (size_t)(In * V));
        std::vector<A>& wb = scratch<A>(2, (size_t)(bl.kn * V));
        std::fill(gz.begin(), gz.end(), A(0));
        std::vector<int64_t> taps((size_t)bl.kn);  // flipped: the last tap first
        for (int64_t k0 = 0, k = 0; k0 < g.K[0]; ++k0)
          for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
            for (int64_t k2 = 0; k2 < g.K[2]; ++k2)
              taps[(size_t)k++] = ((sh[0] - k0 * g.D[0]) * Gp[1] + (sh[1] - k1 * g.D[1])) * Gp[2] * V +
                                  (sh[2] - k2 * g.D[2]) * V;
        gather_filters<T, A>(w, ws, bl, c0, nc, wb.data());
        gather_block<T, A>(gr, gs, g.B, nn, c0, nc, gz.data(), [&](int64_t b0, int64_t b1, int64_t b2) {
          return ((b0 + sh[0]) * Gp[1] + (b1 + sh[1])) * Gp[2] + (b2 + sh[2]);
        });
        A* o = ob.data();
        for (int64_t i0 = 0; i0 < g.I[0]; ++i0)
          for (int64_t i1 = 0; i1 < g.I[1]; ++i1)
            for (int64_t i2 = 0; i2 < g.I[2]; ++i2, o += V) {
              // input position i reads the gradient of block b = i + P - k D (shifted by sh)
              const A* go = gz.data() + ((i0 + g.P[0]) * Gp[1] + (i1 + g.P[1])) * Gp[2] * V + (i2 + g.P[2]) * V;
              Lanes<A> acc = Lanes<A>::zero();
              for (int64_t k = 0; k < bl.kn; ++k)
                acc.madd(Lanes<A>::load(wb.data() + k * V), Lanes<A>::load(go + taps[(size_t)k]));
              acc.store(o);
            }
        scatter_block<T, A>(out, os, g.I, nn, c0, nc, ob.data(),
                            [&](int64_t i0, int64_t i1, int64_t i2) { return (i0 * g.I[1] + i1) * g.I[2] + i2; });
      });
      return;
    }
    // each output block's gradient sent back through every tap into the padded buffer
    over_blocks(bl, g.N, [&](int64_t nn, int64_t c0, int nc) {
      std::vector<A>& ib = scratch<A>(0, (size_t)(bl.ipn * V));
      std::vector<A>& gb = scratch<A>(1, (size_t)(bl.bn * V));
      std::vector<A>& wb = scratch<A>(2, (size_t)(bl.kn * V));
      std::fill(ib.begin(), ib.end(), A(0));
      std::fill(gb.begin(), gb.end(), A(0));
      std::vector<int64_t> taps((size_t)bl.kn);
      for (int64_t k0 = 0, k = 0; k0 < g.K[0]; ++k0)
        for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
          for (int64_t k2 = 0; k2 < g.K[2]; ++k2) taps[(size_t)k++] = bl.tap(k0, k1, k2) * V;
      gather_filters<T, A>(w, ws, bl, c0, nc, wb.data());
      gather_block<T, A>(gr, gs, g.B, nn, c0, nc, gb.data(),
                         [&](int64_t b0, int64_t b1, int64_t b2) { return (b0 * g.B[1] + b1) * g.B[2] + b2; });
      const A* gp = gb.data();
      for (int64_t b0 = 0; b0 < g.B[0]; ++b0)
        for (int64_t b1 = 0; b1 < g.B[1]; ++b1)
          for (int64_t b2 = 0; b2 < g.B[2]; ++b2, gp += V) {
            A* io = ib.data() + bl.origin(b0, b1, b2) * V;
            const Lanes<A> gv = Lanes<A>::load(gp);
            for (int64_t k = 0; k < bl.kn; ++k) {
              A* ip = io + taps[(size_t)k];
              Lanes<A> sum = Lanes<A>::load(ip);
              sum.madd(Lanes<A>::load(wb.data() + k * V), gv);
              sum.store(ip);
            }
          }
      scatter_block<T, A>(out, os, g.I, nn, c0, nc, ib.data(),
                          [&](int64_t i0, int64_t i1, int64_t i2) { return bl.padded(i0, i1, i2); });
    });
  });
}
EMBER_KERNEL("depthwise_conv_input", k_depthwise_conv_input);

// out (C, 1, *K) = the gradient of depthwise_conv's filter: grad (N, C, *B), x (N, C, *I)
void k_depthwise_conv_weight(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  const DwArgs r = parse("depthwise_conv_weight", a, n, kw, 2, 1, 0);
  const Tensor &out = r.out, &gr = r.a, &x = r.b;
  const ConvGeom& g = r.g;
  if (out.numel == 0) return;
  int64_t gs[3], xs[3], os[3];
  strides3(gr, 2, r.nd, gs);
  strides3(x, 2, r.nd, xs);
  strides3(out, 2, r.nd, os);
  const Blocked bl(g);
  NoGil nogil(g.N * bl.bn * bl.kn >= kGilThreshold);
  dispatch<M_FLOAT>(out.dtype, "depthwise_conv_weight", [&](auto tag) {
    using T = EMBER_T(tag);
    using A = compute_t<T>;
    // one task per channel block: its K x V sums over the batch and the output blocks
    over_blocks(bl, 1, [&](int64_t, int64_t c0, int nc) {
      std::vector<A> xb((size_t)(bl.ipn * V), A(0)), gb((size_t)(bl.bn * V)), acc((size_t)(bl.kn * V), A(0));
      std::vector<int64_t> taps((size_t)bl.kn);
      for (int64_t k0 = 0, k = 0; k0 < g.K[0]; ++k0)
        for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
          for (int64_t k2 = 0; k2 < g.K[2]; ++k2) taps[(size_t)k++] = bl.tap(k0, k1, k2) * V;
      for (int64_t nn = 0; nn < g.N; ++nn) {
        gather_block<T, A>(x, xs, g.I, nn, c0, nc, xb.data(),
                           [&](int64_t i0, int64_t i1, int64_t i2) { return bl.padded(i0, i1, i2); });
        gather_block<T, A>(gr, gs, g.B, nn, c0, nc, gb.data(),
                           [&](int64_t b0, int64_t b1, int64_t b2) { return (b0 * g.B[1] + b1) * g.B[2] + b2; });
        for (int64_t k = 0; k < bl.kn; ++k) {
          Lanes<A> sum = Lanes<A>::load(acc.data() + k * V);
          const A* gp = gb.data();
          for (int64_t b0 = 0; b0 < g.B[0]; ++b0)
            for (int64_t b1 = 0; b1 < g.B[1]; ++b1)
              for (int64_t b2 = 0; b2 < g.B[2]; ++b2, gp += V)
                sum.madd(Lanes<A>::load(gp), Lanes<A>::load(xb.data() + bl.origin(b0, b1, b2) * V + taps[(size_t)k]));
          sum.store(acc.data() + k * V);
        }
      }
      T* po = (T*)out.data;
      for (int v = 0; v < nc; ++v)
        for (int64_t k0 = 0, k = 0; k0 < g.K[0]; ++k0)
          for (int64_t k1 = 0; k1 < g.K[1]; ++k1)
            for (int64_t k2 = 0; k2 < g.K[2]; ++k2, ++k)
              po[(c0 + v) * out.stride[0] + k0 * os[0] + k1 * os[1] + k2 * os[2]] = cvt<T>(acc[(size_t)(k * V + v)]);
    });
  });
}
EMBER_KERNEL("depthwise_conv_weight", k_depthwise_conv_weight);

}  // namespace

}  // namespace ember
