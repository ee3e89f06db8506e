// oneDNN (Intel's deep learning primitives) for float32 dense convolution (forward, input
// gradient, filter gradient) and matrix products. Optional: the library comes from the
// onednn-cpu-gomp wheel (pip install "ember-cpu[onednn]"); the plugin dlopens it by
// load_onednn, as OpenBLAS is loaded, and without it every call runs ember's own kernels
// (im2col + GEMM, OpenBLAS), which remain the reference the tests compare oneDNN with.
// docs/performance.md has the figures behind using it.
//
// Threads: like OpenBLAS, oneDNN runs single-threaded on ember's pool. Each pool thread
// sets its OpenMP thread count to 1 and runs a part of the call (a chunk of the batch, of
// the channels or of the rows), so OpenMP never starts threads of its own that would spin
// on the cores ember's next kernel needs. Scratchpads are per call (user mode), memory
// objects and streams per thread, so parts of one call run concurrently.
//
// Only the entry points of oneDNN's C API (v3) used here are declared, by hand: handles are
// opaque pointers, enums plain ints with the values of the API. Each operand is described
// with ember's own strides (any strided layout, channels-last included); convolutions let
// the primitive choose its layouts ("any") and reorder into and out of them where they
// differ. Plans (primitive descriptors, primitives, reorders) are cached per geometry and
// layout for the life of the process.
#include "onednn.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <climits>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

namespace ember {

namespace {

using dims_t = int64_t[12];  // dnnl_dims_t (DNNL_MAX_NDIMS = 12)
struct ExecArg {             // dnnl_exec_arg_t
  int arg;
  void* memory;
};

// values of the C API's enums and argument indices
constexpr int kSuccess = 0, kF32 = 3, kCpuEngine = 1, kFormatAny = 1, kInOrder = 1, kScratchpadUser = 1;
constexpr int kForwardTraining = 64, kConvolutionDirect = 1, kQueryImplInfoStr = 8, kQueryExecArgMd = 255;
constexpr int kArgSrc = 1, kArgDst = 17, kArgWeights = 33, kArgBias = 41, kArgScratchpad = 80, kArgDiffSrc = 129,
              kArgDiffDst = 145, kArgDiffWeights = 161;

struct Api {
  int (*engine_create)(void**, int, size_t);
  int (*stream_create)(void**, void*, unsigned);
  int (*md_create_with_strides)(void**, int, const int64_t*, int, const int64_t*);
  int (*md_create_with_tag)(void**, int, const int64_t*, int, int);
  int (*md_destroy)(void*);
  int (*md_equal)(const void*, const void*);
  size_t (*md_get_size)(const void*);
  int (*attr_create)(void**);
  int (*attr_set_scratchpad_mode)(void*, int);
  int (*conv_forward_pd)(void**, void*, int, int, const void*, const void*, const void*, const void*,
                         const int64_t*, const int64_t*, const int64_t*, const int64_t*, const void*);
  int (*conv_backward_data_pd)(void**, void*, int, const void*, const void*, const void*, const int64_t*,
                               const int64_t*, const int64_t*, const int64_t*, const void*, const void*);
  int (*conv_backward_weights_pd)(void**, void*, int, const void*, const void*, const void*, const void*,
                                  const int64_t*, const int64_t*, const int64_t*, const int64_t*, const void*,
                                  const void*);
  int (*matmul_pd)(void**, void*, const void*, const void*, const void*, const void*, const void*);
  int (*reorder_pd)(void**, const void*, void*, const void*, void*, const void*);
  const void* (*pd_query_md)(const void*, int, int);
  int (*pd_query)(const void*, int, int, void*);
  int (*pd_destroy)(void*);
  int (*primitive_create)(void**, const void*);
  int (*primitive_destroy)(void*);
  int (*primitive_execute)(const void*, void*, int, const ExecArg*);
  int (*memory_create)(void**, const void*, void*, void*);
  int (*memory_destroy)(void*);
  void (*omp_set_num_threads)(int);  // the OpenMP runtime oneDNN was built with
  int (*omp_get_max_threads)();
};

Api g_api;
bool g_loaded = false;
std::atomic<bool> g_enabled{false};
void* g_engine = nullptr;
void* g_attr = nullptr;  // user-managed scratchpad, for every primitive
std::mutex g_mutex;      // the plan cache, and loading
std::atomic<int64_t> g_calls{0};  // primitives oneDNN ran (tests check that the path was taken)
// matrix products from this many multiply-adds (n * k * m over the batch): below it
// OpenBLAS's lower call overhead wins (measured: 128x64x128 in 9.5 us with oneDNN, 8.6 us
// with OpenBLAS; 128x128x128 in 14.4 and 23.7 us)
constexpr int64_t kMatmulMin = int64_t(1) << 21;

void check(int status, const char* what) {
  if (status != kSuccess)
    raise(PyExc_RuntimeError, "oneDNN failed in %s (status %d); EMBER_ONEDNN=0 runs ember's own kernels", what,
          status);
}

// One argument of a plan: the tensor's own layout and, where the primitive chose another,
// the reorder between the two (tensor -> primitive for inputs, back for the output).
struct Operand {
  int arg = 0;
  void* user_md = nullptr;
  const void* inner_md = nullptr;  // owned by the primitive descriptor; null: no reorder
  void* reorder = nullptr;
  void* reorder_pd = nullptr;  // kept: its scratchpad descriptor is read per call
  size_t inner_bytes = 0;
};

struct Plan {
  bool ok = false;  // false: no fast implementation (ember's kernel runs)
  void* pd = nullptr;
  void* prim = nullptr;
  size_t scratch = 0;  // bytes: the largest scratchpad of the primitive and its reorders
  Operand in[2], out;
  void* bias_md = nullptr;  // a matmul's bias (its own strides): no reorder
  Plan() = default;
  Plan(const Plan&) = delete;
  ~Plan() {
    if (bias_md) g_api.md_destroy(bias_md);
    for (Operand* o : {&in[0], &in[1], &out}) {
      if (o->reorder) g_api.primitive_destroy(o->reorder);
      if (o->reorder_pd) g_api.pd_destroy(o->reorder_pd);
      if (o->user_md) g_api.md_destroy(o->user_md);
    }
    if (prim) g_api.primitive_destroy(prim);
    if (pd) g_api.pd_destroy(pd);
  }
};
using PlanPtr = std::shared_ptr<const Plan>;

// Plans by key. A model has a few dozen geometries; past kMaxPlans (shapes that keep
// changing) the cache starts over (calls in flight keep their plans alive).
constexpr size_t kMaxPlans = 1024;
std::map<std::vector<int64_t>, PlanPtr> g_plans;

size_t scratch_of(const void* pd) {
  const void* md = g_api.pd_query_md(pd, kQueryExecArgMd, kArgScratchpad);
  return md ? g_api.md_get_size(md) : 0;
}

// A memory descriptor of nd dims with these strides (size-1 dims: any stride addresses
// the same element; they get their contiguous one). Null for a broadcast (0) or negative
// stride, which oneDNN cannot describe, and for an empty dim (ember's kernels fill those).
void* strided_md(int nd, const int64_t* dims_in, const int64_t* strides_in) {
  dims_t dims{}, strides{};
  int64_t expect = 1;
  for (int d = nd - 1; d >= 0; --d) {
    dims[d] = dims_in[d];
    strides[d] = dims[d] == 1 ? expect : strides_in[d];
    if (dims[d] <= 0 || strides[d] <= 0) return nullptr;
    expect = std::max(expect, strides[d] * dims[d]);
  }
  void* md = nullptr;
  if (g_api.md_create_with_strides(&md, nd, dims, kF32, strides) != kSuccess) return nullptr;
  return md;
}

// The tensor's dims as oneDNN sees them (a grouped filter (O, C/G, *K) is (G, O/G, C/G,
// *K)) and its strides; returns the number of dims.
int dims_of(const Tensor& t, int64_t groups, int64_t* dims, int64_t* strides) {
  int nd = 0;
  if (groups > 1) {
    dims[nd] = groups;
    strides[nd++] = (t.shape[0] / groups) * t.stride[0];
    dims[nd] = t.shape[0] / groups;
  } else {
    dims[nd] = t.shape[0];
  }
  strides[nd++] = t.stride[0];
  for (int d = 1; d < t.ndim; ++d) {
    dims[nd] = t.shape[d];
    strides[nd++] = t.stride[d];
  }
  return nd;
}

void* any_md(const int64_t* dims, int nd) {
  void* md = nullptr;
  check(g_api.md_create_with_tag(&md, nd, dims, kF32, kFormatAny), "memory_desc_create_with_tag");
  return md;
}

// Whether oneDNN chose one of its reference implementations (plain loops, slower than
// ember's kernels): those calls stay with ember.
bool is_reference(const void* pd) {
  const char* impl = nullptr;
  return g_api.pd_query(pd, kQueryImplInfoStr, 0, &impl) != kSuccess || !impl || std::strncmp(impl, "ref", 3) == 0;
}

// The operand for argument `arg` (the tensor's descriptor `user`, which the plan keeps).
void bind(Plan& p, Operand& o, int arg, void* user, bool input) {
  o.arg = arg;
  o.user_md = user;
  const void* want = g_api.pd_query_md(p.pd, kQueryExecArgMd, arg);
  if (!want) raise(PyExc_RuntimeError, "oneDNN gave no layout for argument %d", arg);
  if (g_api.md_equal(user, want)) return;
  o.inner_md = want;
  o.inner_bytes = g_api.md_get_size(want);
  void* rpd = nullptr;
  check(input ? g_api.reorder_pd(&rpd, user, g_engine, want, g_engine, g_attr)
              : g_api.reorder_pd(&rpd, want, g_engine, user, g_engine, g_attr),
        "reorder_primitive_desc_create");
  o.reorder_pd = rpd;
  p.scratch = std::max(p.scratch, scratch_of(rpd));
  check(g_api.primitive_create(&o.reorder, rpd), "primitive_create (reorder)");
}

// Finishes a plan whose primitive descriptor was created (st): false when there is none,
// or only a reference one. Takes the descriptors of the three operands (in0, in1, out).
void finish(Plan& p, int st, void* pd, const int args[3], void* mds[3]) {
  Operand* ops[3] = {&p.in[0], &p.in[1], &p.out};
  for (int i = 0; i < 3; ++i) ops[i]->user_md = mds[i];  // the plan owns them from here
  if (st != kSuccess || is_reference(pd)) {
    if (st == kSuccess) g_api.pd_destroy(pd);
    return;
  }
  p.pd = pd;
  p.scratch = scratch_of(pd);
  check(g_api.primitive_create(&p.prim, pd), "primitive_create");
  bind(p, p.in[0], args[0], mds[0], true);
  bind(p, p.in[1], args[1], mds[1], true);
  bind(p, p.out, args[2], mds[2], false);
  p.ok = true;
}

std::shared_ptr<Plan> make_conv_plan(ConvPass pass, const Tensor& out, const Tensor& a, const Tensor& b,
                                     const ConvGeom& g, int nd, int64_t groups) {
  auto plan = std::make_shared<Plan>();
  Plan& p = *plan;
  // the tensors by role
  const Tensor& x = pass == ConvPass::forward ? a : pass == ConvPass::backward_data ? out : b;
  const Tensor& w = pass == ConvPass::backward_weights ? out : b;
  const Tensor& y = pass == ConvPass::forward ? out : a;
  dims_t strides{}, dilates{}, pad_l{}, pad_r{};
  for (int i = 0; i < nd; ++i) {
    const int j = 3 - nd + i;
    const int64_t span = (g.K[j] - 1) * g.D[j] + 1;
    strides[i] = g.S[j];
    dilates[i] = g.D[j] - 1;
    pad_l[i] = g.P[j];
    // oneDNN checks B == (I - span + pad_l + pad_r) / S + 1 (floor): PyTorch's symmetric
    // padding satisfies it; otherwise the exact right padding
    pad_r[i] = (g.I[j] - span + 2 * g.P[j]) / g.S[j] + 1 == g.B[j] ? g.P[j]
                                                                   : (g.B[j] - 1) * g.S[j] + span - g.I[j] - g.P[j];
    if (pad_r[i] < 0) return plan;
  }
  dims_t dx{}, sx{}, dw{}, sw{}, dy{}, sy{};
  const int nx = dims_of(x, 1, dx, sx), nw = dims_of(w, groups, dw, sw), ny = dims_of(y, 1, dy, sy);
  void *ux = strided_md(nx, dx, sx), *uw = strided_md(nw, dw, sw), *uy = strided_md(ny, dy, sy);
  if (!ux || !uw || !uy) {
    for (void* m : {ux, uw, uy})
      if (m) g_api.md_destroy(m);
    return plan;
  }
  void *ax = any_md(dx, nx), *aw = any_md(dw, nw), *ay = any_md(dy, ny);
  void *fwd = nullptr, *pd = nullptr;
  int st = g_api.conv_forward_pd(&fwd, g_engine, kForwardTraining, kConvolutionDirect, ax, aw, nullptr, ay, strides,
                                 dilates, pad_l, pad_r, g_attr);
  if (st == kSuccess && pass == ConvPass::forward) {
    pd = fwd;
    fwd = nullptr;
  } else if (st == kSuccess && pass == ConvPass::backward_data) {
    st = g_api.conv_backward_data_pd(&pd, g_engine, kConvolutionDirect, ax, aw, ay, strides, dilates, pad_l, pad_r,
                                     fwd, g_attr);
  } else if (st == kSuccess) {
    st = g_api.conv_backward_weights_pd(&pd, g_engine, kConvolutionDirect, ax, aw, nullptr, ay, strides, dilates,
                                        pad_l, pad_r, fwd, g_attr);
  }
  for (void* m : {ax, aw, ay}) g_api.md_destroy(m);
  if (fwd) g_api.pd_destroy(fwd);
  static const int kArgs[3][3] = {{kArgSrc, kArgWeights, kArgDst},
                                  {kArgDiffDst, kArgWeights, kArgDiffSrc},
                                  {kArgDiffDst, kArgSrc, kArgDiffWeights}};
  void* mds[3][3] = {{ux, uw, uy}, {uy, uw, ux}, {uy, ux, uw}};
  finish(p, st, pd, kArgs[(int)pass], mds[(int)pass]);
  return plan;
}

// C = A @ B (+ bias, a row of C's columns with stride bias_stride, when bias_stride >= 0),
// batched, every operand with its own strides (oneDNN's matmul reads plain strided
// layouts: no reorders).
std::shared_ptr<Plan> make_matmul_plan(const int64_t* da, const int64_t* sa, const int64_t* db, const int64_t* sb,
                                       const int64_t* dc, const int64_t* sc, int nd, int64_t bias_stride = -1) {
  auto plan = std::make_shared<Plan>();
  Plan& p = *plan;
  void *ma = strided_md(nd, da, sa), *mb = strided_md(nd, db, sb), *mc = strided_md(nd, dc, sc);
  if (bias_stride >= 0) {
    int64_t dbias[3] = {1, 1, dc[nd - 1]}, sbias[3] = {0, 0, bias_stride};
    p.bias_md = strided_md(nd, dbias + 3 - nd, sbias + 3 - nd);
  }
  if (!ma || !mb || !mc || (bias_stride >= 0 && !p.bias_md)) {
    for (void* m : {ma, mb, mc})
      if (m) g_api.md_destroy(m);
    return plan;
  }
  void* pd = nullptr;
  const int st = g_api.matmul_pd(&pd, g_engine, ma, mb, p.bias_md, mc, g_attr);
  static const int kArgs[3] = {kArgSrc, kArgWeights, kArgDst};
  void* mds[3] = {ma, mb, mc};
  finish(p, st, pd, kArgs, mds);
  return plan;
}

// OpenMP at one thread on this thread while oneDNN runs (or plans: it sizes its work by
// the thread count), and back afterwards: the OpenMP runtime may be another library's too
// (PyTorch's wheel ships libgomp.so.1, which then also serves oneDNN).
struct OneThread {
  int prev;
  OneThread() : prev(g_api.omp_get_max_threads()) {
    if (prev != 1) g_api.omp_set_num_threads(1);
  }
  ~OneThread() {
    if (prev != 1) g_api.omp_set_num_threads(prev);
  }
};

// The plan for key, made by make() on first use. A plan oneDNN fails to build (an error
// in one of its calls) is cached as declined: ember's kernels run those calls.
template <class Make>
PlanPtr plan_for(const std::vector<int64_t>& key, Make&& make) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_plans.find(key);
  if (it != g_plans.end()) return it->second;
  if (g_plans.size() >= kMaxPlans) g_plans.clear();
  PlanPtr p;
  {
    OneThread one;  // plans are made for one thread
    try {
      p = make();
    } catch (const Error&) {
      p = std::make_shared<Plan>();
    }
  }
  g_plans.emplace(key, p);
  return p;
}

// Per pool thread: a stream and a scratch area, OpenMP at one thread.
struct ThreadState {
  void* stream = nullptr;
  std::vector<char> scratch;
  char* area(size_t n) {
    if (scratch.size() < n + 64) scratch.resize(n + 64);
    return (char*)(((uintptr_t)scratch.data() + 63) & ~uintptr_t(63));
  }
};

struct Memory {  // a memory object for one call
  void* m = nullptr;
  Memory(const void* md, void* data) { check(g_api.memory_create(&m, md, g_engine, data), "memory_create"); }
  Memory(Memory&& o) noexcept : m(o.m) { o.m = nullptr; }
  Memory(const Memory&) = delete;
  ~Memory() {
    if (m) g_api.memory_destroy(m);
  }
};

struct Aligned {  // a 64-byte aligned buffer for one operand in the primitive's layout
  void* p = nullptr;
  explicit Aligned(size_t n) {
    if (n) {
      p = std::aligned_alloc(64, (n + 63) / 64 * 64);
      if (!p) raise(PyExc_MemoryError, "oneDNN: cannot allocate %zu bytes", n);
    }
  }
  ~Aligned() { std::free(p); }
};

// Runs a plan on this thread over the operands' memory: inputs reordered into the
// primitive's layouts where it chose others, the primitive, the output reordered back.
void run_plan(const Plan& p, char* in0, char* in1, char* outp, const char* bias = nullptr) {
  static thread_local ThreadState ts;
  OneThread one;
  if (!ts.stream) check(g_api.stream_create(&ts.stream, g_engine, kInOrder), "stream_create");
  char* scratch = ts.area(p.scratch);
  // each primitive gets the thread's scratch area, described by its own scratchpad layout
  auto exec = [&](const void* prim, const void* pd, int n, ExecArg* args, const char* what) {
    const void* md = g_api.pd_query_md(pd, kQueryExecArgMd, kArgScratchpad);
    if (md && g_api.md_get_size(md) > 0) {
      Memory pad(md, scratch);
      args[n++] = {kArgScratchpad, pad.m};
      check(g_api.primitive_execute(prim, ts.stream, n, args), what);
    } else {
      check(g_api.primitive_execute(prim, ts.stream, n, args), what);
    }
  };
  auto reorder = [&](const Operand& o, void* from, void* to) {
    ExecArg args[3] = {{kArgSrc, from}, {kArgDst, to}};
    exec(o.reorder, o.reorder_pd, 2, args, "reorder");
  };
  char* ins[2] = {in0, in1};
  Aligned b0(p.in[0].inner_bytes), b1(p.in[1].inner_bytes), bo(p.out.inner_bytes);
  Aligned* bufs[2] = {&b0, &b1};
  Memory u0(p.in[0].user_md, ins[0]), u1(p.in[1].user_md, ins[1]), uo(p.out.user_md, outp);
  Memory* users[2] = {&u0, &u1};
  std::vector<Memory> inner;
  inner.reserve(3);
  ExecArg args[4];
  for (int i = 0; i < 2; ++i) {
    const Operand& o = p.in[i];
    void* m = users[i]->m;
    if (o.inner_md) {
      inner.emplace_back(o.inner_md, bufs[i]->p);
      reorder(o, m, inner.back().m);
      m = inner.back().m;
    }
    args[i] = {o.arg, m};
  }
  void* out_m = uo.m;
  if (p.out.inner_md) {
    inner.emplace_back(p.out.inner_md, bo.p);
    out_m = inner.back().m;
  }
  args[2] = {p.out.arg, out_m};
  if (p.bias_md) {
    Memory ub(p.bias_md, const_cast<char*>(bias));
    ExecArg all[5] = {args[0], args[1], args[2], {kArgBias, ub.m}};
    exec(p.prim, p.pd, 4, all, "execute");
  } else {
    exec(p.prim, p.pd, 3, args, "execute");
  }
  if (p.out.inner_md) reorder(p.out, out_m, uo.m);
  ++g_calls;
}

// t with dim d narrowed to [s, s + n)
Tensor narrow(const Tensor& t, int d, int64_t s, int64_t n) {
  Tensor r = t;
  r.data = t.data + s * t.stride[d] * t.itemsize;
  r.shape[d] = n;
  r.numel = t.shape[d] ? t.numel / t.shape[d] * n : 0;
  return r;
}

std::vector<int64_t> conv_key(ConvPass pass, const Tensor& out, const Tensor& a, const Tensor& b, const ConvGeom& g,
                              int nd, int64_t groups) {
  std::vector<int64_t> key{(int64_t)pass, nd, groups};
  for (int j = 0; j < 3; ++j) key.insert(key.end(), {g.K[j], g.D[j], g.P[j], g.S[j], g.B[j], g.I[j]});
  for (const Tensor* t : {&out, &a, &b}) {
    key.push_back(t->ndim);
    key.insert(key.end(), t->shape, t->shape + t->ndim);
    key.insert(key.end(), t->stride, t->stride + t->ndim);
  }
  return key;
}

// The plan of a convolution or of one part of it (the geometry's sizes other than N and C
// are the part's too; the plan reads only those).
PlanPtr conv_plan(ConvPass pass, const Tensor& out, const Tensor& a, const Tensor& b, const ConvGeom& g, int nd,
                  int64_t groups) {
  return plan_for(conv_key(pass, out, a, b, g, nd, groups),
                  [&] { return make_conv_plan(pass, out, a, b, g, nd, groups); });
}

bool too_large(const Tensor& t) { return t.numel > INT_MAX; }  // (oneDNN's JIT indexes in int)

}  // namespace

bool onednn_conv(ConvPass pass, const Tensor& out, const Tensor& a, const Tensor& b, const ConvGeom& g, int nd,
                 int64_t groups) {
  if (!g_enabled || out.dtype != kFloat32 || a.dtype != kFloat32 || b.dtype != kFloat32 || in_parallel_region() ||
      a.numel == 0 || b.numel == 0 || too_large(out) || too_large(a) || too_large(b))
    return false;
  // oneDNN's filter gradient on outputs of fewer than 9 positions is slower than ember's
  // (512 channels at 2x2: 3.5 against 1.75 ms); 3x3 and up it is faster
  if (pass == ConvPass::backward_weights && g.B[0] * g.B[1] * g.B[2] < 9) return false;
  NoGil nogil(true);
  const int64_t nt = get_num_threads(), N = g.N;
  // One part per thread: chunks of the batch; with fewer samples than threads, chunks of
  // the output channels (forward, filter gradient) or input channels (input gradient) of an
  // ungrouped convolution. The filter gradient's batch chunks sum into their own buffers
  // (the first into out), added to out afterwards in chunk order.
  int dout = -1, da = -1, db = -1;  // the dim each tensor is split along (-1: whole)
  int64_t len = 1, maxparts = nt;
  bool reduce = false;
  if (nt > 1 && N >= nt && pass != ConvPass::backward_weights) {
    dout = da = 0, len = N;
  } else if (nt > 1 && N >= nt && out.is_contiguous() && (groups > 1 || out.numel < b.numel)) {
    // (a filter gradient larger than the input splits over its rows instead, below: partial
    // sums would cost more than each part reading the whole input; 512 channels at 4x4 took
    // 9.3 ms by the batch, ember's own kernel 4.8 ms)
    da = db = 0, len = N, reduce = true;
    // at most 64 MiB of partial sums
    maxparts = std::min<int64_t>(nt, 1 + (int64_t(64) << 20) / std::max<int64_t>(1, out.numel * 4));
  } else if (nt > 1 && groups == 1 && pass == ConvPass::forward) {
    dout = 1, db = 0, len = out.shape[1];
  } else if (nt > 1 && groups == 1 && pass == ConvPass::backward_data) {
    dout = 1, db = 1, len = out.shape[1];
  } else if (nt > 1 && groups == 1) {  // filter gradient of few samples or a small input: its rows
    dout = 0, da = 1, len = out.shape[0];
  }
  const int64_t q = (len + maxparts - 1) / maxparts, parts = (len + q - 1) / q;
  if (nt > 1 && parts == 1) return false;  // ember's kernels use the whole pool
  std::unique_ptr<float[]> partial(reduce ? new float[(size_t)((parts - 1) * out.numel)] : nullptr);
  auto tensors = [&](int64_t i, Tensor& o, Tensor& x, Tensor& y) {
    const int64_t s = i * q, n = std::min(q, len - s);
    o = dout >= 0 ? narrow(out, dout, s, n) : out;
    x = da >= 0 ? narrow(a, da, s, n) : a;
    y = db >= 0 ? narrow(b, db, s, n) : b;
    if (reduce && i > 0) o.data = (char*)(partial.get() + (i - 1) * out.numel);
  };
  // the plans of the first part and of the last (the only other size): both or neither
  PlanPtr head, tail;
  {
    Tensor o, x, y;
    tensors(0, o, x, y);
    head = conv_plan(pass, o, x, y, g, nd, groups);
    tensors(parts - 1, o, x, y);
    tail = parts > 1 ? conv_plan(pass, o, x, y, g, nd, groups) : head;
  }
  if (!head->ok || !tail->ok) return false;
  parallel_for(0, parts, 1, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      Tensor o, x, y;
      tensors(i, o, x, y);
      run_plan(i == parts - 1 ? *tail : *head, x.data, y.data, o.data);
    }
  });
  if (reduce) {
    float* po = (float*)out.data;
    parallel_for(0, out.numel, kGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = 1; i < parts; ++i) {
        const float* pp = partial.get() + (i - 1) * out.numel;
        for (int64_t j = s; j < e; ++j) po[j] += pp[j];
      }
    });
  }
  return true;
}

bool onednn_matmul(int64_t B, int64_t n, int64_t k, int64_t m, const float* a, const int64_t* sa, const float* b,
                   const int64_t* sb, float* c, const int64_t* sc, const float* bias, int64_t bias_stride) {
  if (!g_enabled || in_parallel_region() || B * n * k * m < kMatmulMin || B * n * k > INT_MAX ||
      B * k * m > INT_MAX || B * n * m > INT_MAX)
    return false;
  // One part per thread: chunks of the batch, else of the longer of rows and columns (at
  // least 16 of them, a multiple of 16)
  const int64_t nt = get_num_threads();
  const int mode = B >= nt ? 1 : n >= m ? 2 : 3;
  const int64_t len = mode == 1 ? B : mode == 2 ? n : m;
  int64_t q = (len + nt - 1) / nt;
  if (mode != 1) q = std::max<int64_t>(16, (q + 15) / 16 * 16);
  const int64_t parts = (len + q - 1) / q;
  struct Part {
    int64_t b0, nb, r0, nr, c0, nc;
  };
  auto part_of = [&](int64_t i) {
    const int64_t s = i * q, e = std::min(len, s + q);
    return mode == 1 ? Part{s, e - s, 0, n, 0, m} : mode == 2 ? Part{0, B, s, e - s, 0, m} : Part{0, B, 0, n, s, e - s};
  };
  auto plan = [&](const Part& p) {
    const int nd = p.nb == 1 ? 2 : 3, o = 3 - nd;  // a batch of one as plain matrices
    const int64_t da[3] = {p.nb, p.nr, k}, db[3] = {p.nb, k, p.nc}, dc[3] = {p.nb, p.nr, p.nc};
    const int64_t bs = bias ? bias_stride : -1;
    std::vector<int64_t> key{3, nd, p.nr, k, p.nc, sa[1], sa[2], sb[1], sb[2], sc[1], sc[2], bs};
    if (nd == 3) key.insert(key.end(), {p.nb, sa[0], sb[0], sc[0]});
    return plan_for(key, [&] { return make_matmul_plan(da + o, sa + o, db + o, sb + o, dc + o, sc + o, nd, bs); });
  };
  NoGil nogil(true);
  // the plans of the first part and of the last (the only other size): both or neither
  const PlanPtr head = plan(part_of(0)), tail = parts > 1 ? plan(part_of(parts - 1)) : head;
  if (!head->ok || !tail->ok) return false;
  parallel_for(0, parts, 1, [&](int64_t s, int64_t e) {
    for (int64_t i = s; i < e; ++i) {
      const Part p = part_of(i);
      run_plan(i == parts - 1 ? *tail : *head, (char*)(a + p.b0 * sa[0] + p.r0 * sa[1]),
               (char*)(b + p.b0 * sb[0] + p.c0 * sb[2]), (char*)(c + p.b0 * sc[0] + p.r0 * sc[1] + p.c0 * sc[2]),
               bias ? (const char*)(bias + p.c0 * bias_stride) : nullptr);
    }
  });
  return true;
}

std::shared_ptr<const void> onednn_matmul_plan(int64_t n, int64_t k, int64_t m, const int64_t* sa,
                                               const int64_t* sb, const int64_t* sc) {
  if (!g_enabled || n * k * m == 0 || n * k > INT_MAX || k * m > INT_MAX || n * m > INT_MAX) return nullptr;
  const int64_t da[2] = {n, k}, db[2] = {k, m}, dc[2] = {n, m};
  std::vector<int64_t> key{3, 2, n, k, m, sa[0], sa[1], sb[0], sb[1], sc[0], sc[1], -1};
  PlanPtr p = plan_for(key, [&] { return make_matmul_plan(da, sa, db, sb, dc, sc, 2); });
  if (!p->ok) return nullptr;
  return std::static_pointer_cast<const void>(p);
}

void onednn_matmul_here(const std::shared_ptr<const void>& plan, const float* a, const float* b, float* c) {
  run_plan(*static_cast<const Plan*>(plan.get()), (char*)a, (char*)b, (char*)c);
}

void load_onednn(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_loaded) return;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) raise(PyExc_OSError, "load_onednn(): cannot load '%s': %s", path.c_str(), dlerror());
  Api api{};
  bool missing = false;
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    missing = missing || !fn;
  };
  sym(api.engine_create, "dnnl_engine_create");
  sym(api.stream_create, "dnnl_stream_create");
  sym(api.md_create_with_strides, "dnnl_memory_desc_create_with_strides");
  sym(api.md_create_with_tag, "dnnl_memory_desc_create_with_tag");
  sym(api.md_destroy, "dnnl_memory_desc_destroy");
  sym(api.md_equal, "dnnl_memory_desc_equal");
  sym(api.md_get_size, "dnnl_memory_desc_get_size");
  sym(api.attr_create, "dnnl_primitive_attr_create");
  sym(api.attr_set_scratchpad_mode, "dnnl_primitive_attr_set_scratchpad_mode");
  sym(api.conv_forward_pd, "dnnl_convolution_forward_primitive_desc_create");
  sym(api.conv_backward_data_pd, "dnnl_convolution_backward_data_primitive_desc_create");
  sym(api.conv_backward_weights_pd, "dnnl_convolution_backward_weights_primitive_desc_create");
  sym(api.matmul_pd, "dnnl_matmul_primitive_desc_create");
  sym(api.reorder_pd, "dnnl_reorder_primitive_desc_create");
  sym(api.pd_query_md, "dnnl_primitive_desc_query_md");
  sym(api.pd_query, "dnnl_primitive_desc_query");
  sym(api.pd_destroy, "dnnl_primitive_desc_destroy");
  sym(api.primitive_create, "dnnl_primitive_create");
  sym(api.primitive_destroy, "dnnl_primitive_destroy");
  sym(api.primitive_execute, "dnnl_primitive_execute");
  sym(api.memory_create, "dnnl_memory_create");
  sym(api.memory_destroy, "dnnl_memory_destroy");
  if (missing) {
    dlclose(h);
    raise(PyExc_OSError, "load_onednn(): '%s' lacks entry points of oneDNN's v3 C API", path.c_str());
  }
  // the OpenMP runtime the library linked (absent from a threadpool or TBB build, which
  // would run its own threads: not supported)
  // (looked up as the dynamic linker binds oneDNN's own calls: the global scope first, then
  // the library's dependencies)
  auto omp = [&](const char* name) {
    void* f = dlsym(RTLD_DEFAULT, name);
    return f ? f : dlsym(h, name);
  };
  api.omp_set_num_threads = reinterpret_cast<void (*)(int)>(omp("omp_set_num_threads"));
  api.omp_get_max_threads = reinterpret_cast<int (*)()>(omp("omp_get_max_threads"));
  if (!api.omp_set_num_threads || !api.omp_get_max_threads) {
    dlclose(h);
    raise(PyExc_OSError, "load_onednn(): '%s' is not an OpenMP build of oneDNN", path.c_str());
  }
  void *engine = nullptr, *attr = nullptr;
  if (api.engine_create(&engine, kCpuEngine, 0) != kSuccess) {
    dlclose(h);
    raise(PyExc_OSError, "load_onednn(): '%s' has no CPU engine", path.c_str());
  }
  if (api.attr_create(&attr) != kSuccess || api.attr_set_scratchpad_mode(attr, kScratchpadUser) != kSuccess)
    raise(PyExc_OSError, "load_onednn(): '%s' does not take user scratchpads", path.c_str());
  g_api = api;
  g_engine = engine;
  g_attr = attr;
  g_loaded = g_enabled = true;
}

bool onednn_loaded() { return g_loaded; }
void set_onednn_enabled(bool on) { g_enabled = on && g_loaded; }
bool onednn_enabled() { return g_enabled; }
int64_t onednn_calls() { return g_calls.load(); }

}  // namespace ember
