// Contiguous working copies for kernels that compute in float or double over plain arrays
// (the recurrent layers, the batch norm): a tensor's own memory when it already is one.
#pragma once

#include <type_traits>
#include <vector>

#include "ember.h"

namespace ember {

// A contiguous W-typed (float or double) view of a tensor: its own memory when it already is one, else a copy
// (load) that store() writes back.
template <class W>
struct Work {
  static constexpr int kCode = std::is_same_v<W, float> ? kFloat32 : kFloat64;
  const Tensor& t;
  std::vector<W> own;
  W* p;
  Work(const Tensor& t_, bool load) : t(t_) {
    if (t.dtype == kCode && t.is_contiguous()) {
      p = (W*)t.data;
      return;
    }
    own.resize((size_t)t.numel);
    p = own.data();
    if (load) copy_tensor(view(), t);
  }
  Tensor view() { return Tensor::contiguous((char*)own.data(), kCode, t.ndim, t.shape); }
  void store() {
    if (p == own.data()) copy_tensor(t, view());
  }
};

// The working type of a floating dtype: double for float64, float for the others.
template <class F>
void working_dispatch(const char* op, int dtype, F&& f) {
  dispatch<M_FLOAT>(dtype, op, [&](auto tag) {
    using T = EMBER_T(tag);
    if constexpr (std::is_same_v<T, double>) f(double{});
    else f(float{});
  });
}

}  // namespace ember
