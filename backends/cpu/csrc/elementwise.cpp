// Elementwise kernels. Their scalar bodies are generated from ember's op definitions
// (<ember_generated/elementwise.h>, written at build time by ember.dispatcher.codegen): this
// file gives them the backend's loops (ElementwiseCall: argument checks, dtype dispatch,
// ElemIter over the thread pool) and registers them, except where a hand-written kernel
// beats the generated one (float32 exp / tanh / sigmoid on the multiversioned loops of
// vecmath.cpp; erf / gelu / gelu_backward on multiversioned loops over their generated
// functors), which is registered explicitly below.
#include <cstring>

#include "ember.h"
#include "vecmath.h"

#include <ember/elementwise.h>

namespace ember {

// The loops of the generated kernels: ElemIter over the thread pool (ember.h).
struct CpuLoops {
  template <class T, class To, int... In, class F>
  static void launch(const char* op, const Tensor& out, const Tensor* ins, F f) {
    if constexpr (std::is_same_v<T, bool>) {
      // bool operands load as bytes and become bool here: a byte other than 0 / 1 (a bool
      // tensor over foreign memory) reads as true, as in PyTorch
      auto g = [f](auto... v) { return f(static_cast<bool>(v)...); };
      launch_loads<uint8_t, To, In...>(op, out, ins, g);
    } else {
      launch_loads<T, To, In...>(op, out, ins, f);
    }
  }

  template <class T, class To, int... In, class F>
  static void launch_loads(const char* op, const Tensor& out, const Tensor* ins, F f) {
    if constexpr (sizeof...(In) == 1) {
      unary_op<To, operand_t<T, 0, In...>>(op, out, ins[0], f);
    } else if constexpr (sizeof...(In) == 2) {
      binary_op<To, operand_t<T, 0, In...>, operand_t<T, 1, In...>>(op, out, ins[0], ins[1], f);
    } else {
      ternary_op<To, operand_t<T, 0, In...>, operand_t<T, 1, In...>, operand_t<T, 2, In...>>(
          op, out, ins[0], ins[1], ins[2], f);
    }
  }

  // a serial scan of the operand before the launch: RuntimeError("<op>(): <message>")
  template <unsigned Mask, class P>
  static void check(const char* op, const Tensor& t, P pred, const char* message) {
    dispatch<Mask>(t.dtype, op, [&](auto tag) {
      using T = EMBER_T(tag);
      if (any_elem<T>(t, [&](T v) { return pred(v); })) raise(PyExc_RuntimeError, "%s(): %s", op, message);
    });
  }
};
using ElementwiseCall = ElementwiseCallT<CpuLoops, MAXD>;

}  // namespace ember

#include <ember_generated/elementwise.h>

namespace ember {

namespace {

// Multiversioned float32 loops over the generated functors of compute-bound ops (erf, log,
// GELU and its gradient): this file is built for baseline x86-64, where their generic loops run
// 4 lanes wide (or not vectorised at all); the AVX-512 / AVX2 clones run the same functor,
// so every clone gives the same bits as the generic loop and as ember.compile's fused code.
#define EMBER_VEC_UNARY(NAME, OP) \
  EMBER_CLONES void NAME(float* o, const float* a, int64_t n) { \
    const OP f{}; \
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]); \
  }
#define EMBER_VEC_BINARY(NAME, OP) \
  EMBER_CLONES void NAME(float* o, const float* a, const float* b, int64_t n) { \
    const OP f{}; \
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]); \
  }
EMBER_VEC_UNARY(verf_f32, gen::erf_op)
EMBER_VEC_UNARY(vlog_f32, gen::log_op)
EMBER_VEC_UNARY(vgelu_f32, gen::gelu_op)
EMBER_VEC_UNARY(vgelu_tanh_f32, gen::gelu_tanh_op)
EMBER_VEC_BINARY(vgelu_backward_f32, gen::gelu_backward_op)
EMBER_VEC_BINARY(vgelu_backward_tanh_f32, gen::gelu_backward_tanh_op)
#undef EMBER_VEC_UNARY
#undef EMBER_VEC_BINARY

// out = Op(x) over float32 tensors of one shape: contiguous runs through Vec, the rest
// through the functor
template <class Op>
void float_unary(const char* name, const Tensor& out, const Tensor& x,
                 void (*vec)(float*, const float*, int64_t)) {
  check_same_dtype(name, out, x);
  const Tensor* ts[2] = {&out, &x};
  ElemIter it;
  it.build(ts, 2, name);
  if (it.numel == 0) return;
  NoGil g(it.numel >= kGilThreshold);
  it.run([vec](char* const* p, const int64_t* s, int64_t m) {
    if (s[0] == 4 && s[1] == 4) {
      vec((float*)p[0], (const float*)p[1], m);
    } else {
      for (int64_t i = 0; i < m; ++i) *(float*)(p[0] + i * s[0]) = Op{}(*(const float*)(p[1] + i * s[1]));
    }
  });
}

// float32 runs of exp / tanh / sigmoid / erf / log / sin / cos go to the multiversioned (AVX-512 / AVX2) loops;
// every other dtype and layout to the generated functor.
template <void (*Vec)(float*, const float*, int64_t), class Op>
void fast_float_unary(const char* name, PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args(name, a, n, kw, {"out", "x"}, 2);
  Tensor out = args.out(0), x = args.tensor(1);
  check_same_dtype(name, out, x);
  if (x.dtype != kFloat32) {
    dispatch<M_FLOAT>(x.dtype, name, [&](auto tag) {
      using T = EMBER_T(tag);
      unary_op<T, T>(name, out, x, Op{});
    });
    return;
  }
  float_unary<Op>(name, out, x, Vec);
}

void k_exp_fast(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  fast_float_unary<vexp_f32, gen::exp_op>("exp", a, n, kw);
}
void k_tanh_fast(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  fast_float_unary<vtanh_f32, gen::tanh_op>("tanh", a, n, kw);
}
void k_sigmoid_fast(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  fast_float_unary<vsigmoid_f32, gen::sigmoid_op>("sigmoid", a, n, kw);
}
void k_erf_fast(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  fast_float_unary<verf_f32, gen::erf_op>("erf", a, n, kw);
}
void k_log_fast(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  fast_float_unary<vlog_f32, gen::log_op>("log", a, n, kw);
}
void k_sin_fast(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  fast_float_unary<vsin_f32, gen::sin_op>("sin", a, n, kw);
}
void k_cos_fast(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  fast_float_unary<vcos_f32, gen::cos_op>("cos", a, n, kw);
}

// gelu: float32 operands in the multiversioned loops; other dtypes and an unknown
// approximate in the generated kernel
void k_gelu_fast(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("gelu", a, n, kw, {"out", "x", "approximate"}, 2);
  Tensor out = args.out(0), x = args.tensor(1);
  const std::string mode = args.get_str(2);
  if (x.dtype != kFloat32 || out.dtype != kFloat32 || (!mode.empty() && mode != "tanh")) {
    k_gelu(a, n, kw);
    return;
  }
  if (mode.empty()) {
    float_unary<gen::gelu_op>("gelu", out, x, vgelu_f32);
  } else {
    float_unary<gen::gelu_tanh_op>("gelu", out, x, vgelu_tanh_f32);
  }
}

template <class Op>
void float_binary(const char* name, const Tensor& out, const Tensor& g, const Tensor& x,
                  void (*vec)(float*, const float*, const float*, int64_t)) {
  const Tensor* ts[3] = {&out, &g, &x};
  ElemIter it;
  it.build(ts, 3, name);
  if (it.numel == 0) return;
  NoGil gil(it.numel >= kGilThreshold);
  it.run([vec](char* const* p, const int64_t* s, int64_t m) {
    if (s[0] == 4 && s[1] == 4 && s[2] == 4) {
      vec((float*)p[0], (const float*)p[1], (const float*)p[2], m);
    } else {
      for (int64_t i = 0; i < m; ++i)
        *(float*)(p[0] + i * s[0]) = Op{}(*(const float*)(p[1] + i * s[1]), *(const float*)(p[2] + i * s[2]));
    }
  });
}

void k_gelu_backward_fast(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("gelu_backward", a, n, kw, {"out", "a", "b", "approximate"}, 3);
  Tensor out = args.out(0), g = args.tensor(1), x = args.tensor(2);
  const std::string mode = args.get_str(3);
  // (operand shapes: ElemIter::build checks them, as the generated kernel's loop does)
  if (g.dtype != kFloat32 || x.dtype != kFloat32 || out.dtype != kFloat32 ||
      (!mode.empty() && mode != "tanh")) {
    k_gelu_backward(a, n, kw);
    return;
  }
  if (mode.empty()) {
    float_binary<gen::gelu_backward_op>("gelu_backward", out, g, x, vgelu_backward_f32);
  } else {
    float_binary<gen::gelu_backward_tanh_op>("gelu_backward", out, g, x, vgelu_backward_tanh_f32);
  }
}

// the hand-written kernels, then every generated one they do not replace
const PyMethodDef kHandWritten[] = {
    EMBER_DEF("exp", k_exp_fast),
    EMBER_DEF("tanh", k_tanh_fast),
    EMBER_DEF("sigmoid", k_sigmoid_fast),
    EMBER_DEF("erf", k_erf_fast),
    EMBER_DEF("log", k_log_fast),
    EMBER_DEF("sin", k_sin_fast),
    EMBER_DEF("cos", k_cos_fast),
    EMBER_DEF("gelu", k_gelu_fast),
    EMBER_DEF("gelu_backward", k_gelu_backward_fast),
};

const bool kRegistered = [] {
  for (const PyMethodDef& d : kHandWritten) kernel_table().push_back(d);
  for (const PyMethodDef& d : kGeneratedKernels) {
    bool replaced = false;
    for (const PyMethodDef& h : kHandWritten) replaced |= std::strcmp(h.ml_name, d.ml_name) == 0;
    if (!replaced) kernel_table().push_back(d);
  }
  return true;
}();

}  // namespace

const char* generated_table_hash() { return EMBER_OPS_TABLE_HASH; }

}  // namespace ember
