// Optimizer updates over a parameter group in one call (multi-tensor kernels): adam_step_
// and sgd_step_.  Each parameter's elements are updated in one pass, split over the pool.
// The arithmetic is the dispatcher's composite (the optimizers' per-tensor loops of
// elementwise ops) operation by operation, in the parameter's dtype with every Python
// number rounded to it first, so the results are bit-identical to the loop's; float32 and
// float64 contiguous tensors only (the dispatcher runs the loop for anything else).
#include <cmath>
#include <type_traits>
#include <vector>

#include "ember.h"

namespace ember {

namespace {

std::vector<Tensor> tensor_list(const Args& args, int i) {
  PyObject* seq = PySequence_Fast(args.v[i], "expected a list of tensors");
  if (!seq) {
    PyErr_Clear();
    raise(PyExc_TypeError, "%s(): argument '%s' must be a list of tensors", args.op, args.names[i]);
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  std::vector<Tensor> r((size_t)n);
  try {
    for (Py_ssize_t k = 0; k < n; ++k)
      detail::read_tensor(PySequence_Fast_GET_ITEM(seq, k), r[(size_t)k], args.op, args.names[i]);
  } catch (...) {
    Py_DECREF(seq);
    throw;
  }
  Py_DECREF(seq);
  return r;
}

// list `lst` (argument i) matches the parameters: one contiguous tensor of the parameter's
// shape and dtype each; `written`: the kernel writes it
void check_like(const Args& args, int i, const std::vector<Tensor>& lst, const std::vector<Tensor>& params,
                bool written) {
  if (lst.size() != params.size())
    raise(PyExc_ValueError, "%s(): '%s' has %d tensors for %d parameters", args.op, args.names[i],
          (int)lst.size(), (int)params.size());
  for (size_t k = 0; k < lst.size(); ++k) {
    const Tensor &t = lst[k], &p = params[k];
    bool same = t.ndim == p.ndim && t.dtype == p.dtype;
    for (int d = 0; same && d < t.ndim; ++d) same = t.shape[d] == p.shape[d];
    if (!same)
      raise(PyExc_ValueError, "%s(): '%s'[%d] is %s %s, its parameter %s %s", args.op, args.names[i], (int)k,
            dtype_name(t.dtype), shape_str(t).c_str(), dtype_name(p.dtype), shape_str(p).c_str());
    if (!t.is_contiguous())
      raise(PyExc_ValueError, "%s(): '%s'[%d] is not contiguous", args.op, args.names[i], (int)k);
    if (written && t.readonly && t.numel > 0)
      raise(PyExc_ValueError, "%s(): '%s'[%d] is backed by a read-only buffer", args.op, args.names[i], (int)k);
  }
}

void check_params(const Args& args, const std::vector<Tensor>& params) {
  for (size_t k = 0; k < params.size(); ++k)
    if (params[k].dtype != kFloat32 && params[k].dtype != kFloat64)
      raise(PyExc_TypeError, "%s(): parameter %d is %s; the kernel takes float32 and float64", args.op, (int)k,
            dtype_name(params[k].dtype));
  check_like(args, 0, params, params, true);
}

int64_t total_numel(const std::vector<Tensor>& ts) {
  int64_t n = 0;
  for (const Tensor& t : ts) n += t.numel;
  return n;
}

// PyTorch's maximum (a NaN operand wins; ties keep a)
template <class T>
inline T nan_max(T a, T b) {
  return a != a ? a : (b != b ? b : (a >= b ? a : b));
}

// ---- Adam / AdamW ------------------------------------------------------------------------
template <class T>
struct AdamScalars {
  T sign, w, one_minus_w, b2, c2, wd, decay, bc2s, eps, neg_step;
  bool lerp_small, l2, amsgrad;
};

// The update of one parameter; the options that change which operations run are template
// parameters (loops without branches, which vectorise); maximize negates by a factor of -1
// and decoupled decay multiplies by 1 - lr * wd (1 without it): exact either way.
template <class T, bool L2, bool LerpSmall, bool Amsgrad>
void adam_loop(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamScalars<T>& s) {
  parallel_for(0, n, kGrain / 4, [&](int64_t b, int64_t e) {
    const T sign = s.sign, w = s.w, omw = s.one_minus_w, b2 = s.b2, c2 = s.c2, wd = s.wd,
            decay = s.decay, bc2s = s.bc2s, eps = s.eps, neg_step = s.neg_step;
    for (int64_t i = b; i < e; ++i) {
      T gi = g[i] * sign;
      T pi = p[i] * decay;                   // p.mul_(1 - lr * wd) (AdamW; else * 1)
      if constexpr (L2) gi = gi + wd * pi;   // grad.add(p, alpha=wd)
      const T mi = m[i];                     // exp_avg.lerp_(grad, 1 - beta1)
      const T d = gi - mi;
      const T mn = LerpSmall ? mi + w * d : gi - d * omw;
      T vi = v[i] * b2;                      // exp_avg_sq.mul_(beta2)
      vi = vi + c2 * (gi * gi);              //   .addcmul_(grad, grad, value=1 - beta2)
      T second = vi;
      if constexpr (Amsgrad) {               // maximum(max_exp_avg_sq, exp_avg_sq, out=...)
        second = nan_max(vmax[i], vi);
        vmax[i] = second;
      }
      const T denom = std::sqrt(second) / bc2s + eps;
      m[i] = mn;
      v[i] = vi;
      p[i] = pi + neg_step * (mn / denom);   // p.addcdiv_(exp_avg, denom, value=-step_size)
    }
  });
}

template <class T>
void adam_tensor(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamScalars<T>& s) {
  const int key = (s.l2 ? 4 : 0) | (s.lerp_small ? 2 : 0) | (s.amsgrad ? 1 : 0);
  switch (key) {
    case 0: adam_loop<T, false, false, false>(p, g, m, v, vmax, n, s); break;
    case 1: adam_loop<T, false, false, true>(p, g, m, v, vmax, n, s); break;
    case 2: adam_loop<T, false, true, false>(p, g, m, v, vmax, n, s); break;
    case 3: adam_loop<T, false, true, true>(p, g, m, v, vmax, n, s); break;
    case 4: adam_loop<T, true, false, false>(p, g, m, v, vmax, n, s); break;
    case 5: adam_loop<T, true, false, true>(p, g, m, v, vmax, n, s); break;
    case 6: adam_loop<T, true, true, false>(p, g, m, v, vmax, n, s); break;
    default: adam_loop<T, true, true, true>(p, g, m, v, vmax, n, s); break;
  }
}

void k_adam_step(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("adam_step_", a, n, kw,
            {"params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "state_steps", "lr", "beta1",
             "beta2", "weight_decay", "eps", "amsgrad", "maximize", "decoupled_weight_decay"},
            14);
  const auto params = tensor_list(args, 0), grads = tensor_list(args, 1), ms = tensor_list(args, 2),
             vs = tensor_list(args, 3), vmaxs = tensor_list(args, 4), steps = tensor_list(args, 5);
  const double lr = args.get_double(6), beta1 = args.get_double(7), beta2 = args.get_double(8),
               wd = args.get_double(9), eps = args.get_double(10);
  const bool amsgrad = args.get_bool(11, false), maximize = args.get_bool(12, false),
             decoupled = args.get_bool(13, false);
  check_params(args, params);
  check_like(args, 1, grads, params, false);
  check_like(args, 2, ms, params, true);
  check_like(args, 3, vs, params, true);
  if (amsgrad) check_like(args, 4, vmaxs, params, true);
  if (steps.size() != params.size())
    raise(PyExc_ValueError, "adam_step_(): %d state_steps for %d parameters", (int)steps.size(),
          (int)params.size());
  for (const Tensor& st : steps)
    if (st.ndim != 0 || (st.dtype != kFloat32 && st.dtype != kFloat64) || st.readonly)
      raise(PyExc_ValueError, "adam_step_(): state_steps must be writable 0-d float32 / float64 tensors");
  NoGil ng(total_numel(params) >= kGilThreshold);
  for (size_t k = 0; k < params.size(); ++k) {
    // state_step += 1, in the counter's dtype; the bias corrections from its value in double
    // (Python's float arithmetic: ** is pow)
    double step;
    if (steps[k].dtype == kFloat32) {
      float* sp = (float*)steps[k].data;
      *sp = *sp + 1.0f;
      step = *sp;
    } else {
      double* sp = (double*)steps[k].data;
      *sp = *sp + 1.0;
      step = *sp;
    }
    const double bc1 = 1 - std::pow(beta1, step);
    const double bc2s = std::pow(1 - std::pow(beta2, step), 0.5);
    const double step_size = lr / bc1;
    auto run = [&](auto tag) {
      using T = decltype(tag);
      AdamScalars<T> s;
      s.sign = maximize ? T(-1) : T(1);
      s.w = (T)(1 - beta1);
      s.one_minus_w = T(1) - s.w;
      s.lerp_small = std::fabs(s.w) < T(0.5);
      s.b2 = (T)beta2;
      s.c2 = (T)(1 - beta2);
      s.l2 = wd != 0 && !decoupled;
      s.wd = (T)wd;
      s.decay = wd != 0 && decoupled ? (T)(1 - lr * wd) : T(1);
      s.amsgrad = amsgrad;
      s.bc2s = (T)bc2s;
      s.eps = (T)eps;
      s.neg_step = (T)(-step_size);
      adam_tensor<T>((T*)params[k].data, (const T*)grads[k].data, (T*)ms[k].data, (T*)vs[k].data,
                     amsgrad ? (T*)vmaxs[k].data : nullptr, params[k].numel, s);
    };
    if (params[k].dtype == kFloat32) run(float());
    else run(double());
  }
}
EMBER_KERNEL("adam_step_", k_adam_step);

// ---- SGD ------------------------------------------------------------------------------------
template <class T>
struct SgdScalars {
  T sign, wd, momentum, damp, neg_lr;
  bool has_wd, has_momentum, nesterov, first;
};

template <class T, bool HasWd, bool Momentum, bool First, bool Nesterov>
void sgd_loop(T* p, const T* g, T* buf, int64_t n, const SgdScalars<T>& s) {
  parallel_for(0, n, kGrain / 4, [&](int64_t b, int64_t e) {
    const T sign = s.sign, wd = s.wd, mom = s.momentum, damp = s.damp, neg_lr = s.neg_lr;
    for (int64_t i = b; i < e; ++i) {
      T gi = g[i] * sign;
      const T pi = p[i];
      if constexpr (HasWd) gi = gi + wd * pi;  // grad.add(p, alpha=wd)
      if constexpr (Momentum) {
        T bi;
        if constexpr (First) bi = gi;           // the buffer starts as the gradient
        else bi = buf[i] * mom + damp * gi;     // buf.mul_(momentum).add_(grad, alpha=1 - dampening)
        buf[i] = bi;
        gi = Nesterov ? gi + mom * bi : bi;
      }
      p[i] = pi + neg_lr * gi;                  // p.add_(grad, alpha=-lr)
    }
  });
}

template <class T>
void sgd_tensor(T* p, const T* g, T* buf, int64_t n, const SgdScalars<T>& s) {
  auto wd = [&](auto hw) {
    constexpr bool W = decltype(hw)::value;
    if (!s.has_momentum) return sgd_loop<T, W, false, false, false>(p, g, buf, n, s);
    if (s.first) {
      if (s.nesterov) return sgd_loop<T, W, true, true, true>(p, g, buf, n, s);
      return sgd_loop<T, W, true, true, false>(p, g, buf, n, s);
    }
    if (s.nesterov) return sgd_loop<T, W, true, false, true>(p, g, buf, n, s);
    sgd_loop<T, W, true, false, false>(p, g, buf, n, s);
  };
  if (s.has_wd) wd(std::true_type{});
  else wd(std::false_type{});
}

void k_sgd_step(PyObject* const* a, Py_ssize_t n, PyObject* kw) {
  Args args("sgd_step_", a, n, kw,
            {"params", "grads", "momentum_buffers", "lr", "weight_decay", "momentum", "dampening", "nesterov",
             "maximize", "is_first_step"},
            10);
  const auto params = tensor_list(args, 0), grads = tensor_list(args, 1), bufs = tensor_list(args, 2);
  const double lr = args.get_double(3), wd = args.get_double(4), momentum = args.get_double(5),
               dampening = args.get_double(6);
  const bool nesterov = args.get_bool(7, false), maximize = args.get_bool(8, false),
             first = args.get_bool(9, false);
  check_params(args, params);
  check_like(args, 1, grads, params, false);
  if (momentum != 0) check_like(args, 2, bufs, params, true);
  NoGil ng(total_numel(params) >= kGilThreshold);
  for (size_t k = 0; k < params.size(); ++k) {
    auto run = [&](auto tag) {
      using T = decltype(tag);
      SgdScalars<T> s;
      s.sign = maximize ? T(-1) : T(1);
      s.has_wd = wd != 0;
      s.wd = (T)wd;
      s.has_momentum = momentum != 0;
      s.momentum = (T)momentum;
      s.damp = (T)(1 - dampening);
      s.neg_lr = (T)(-lr);
      s.nesterov = nesterov;
      s.first = first;
      sgd_tensor<T>((T*)params[k].data, (const T*)grads[k].data, momentum != 0 ? (T*)bufs[k].data : nullptr,
                    params[k].numel, s);
    };
    if (params[k].dtype == kFloat32) run(float());
    else run(double());
  }
}
EMBER_KERNEL("sgd_step_", k_sgd_step);

}  // namespace

}  // namespace ember
