// Elementwise kernels. Their scalar bodies are generated from ember's op definitions
// (<ember_generated/elementwise.h>, written at build time by ember.dispatcher.codegen, the
// same text the cpu backend compiles); this file launches them (ElementwiseCall) on the
// grid: the vectorised same-type launcher when every operand has the op's dtype, a strided
// one that loads each operand as its own type otherwise (bool conditions and results).
#include <utility>

#include "kernels.cuh"

#include <ember/elementwise.h>

namespace ember {

// out (To) = f(inputs of types Ti...), p[k] pointing at operand k
template <class To, class F, class... Ti>
struct MixedF {
  F f;
  __device__ void operator()(char** p) const { apply(p, std::index_sequence_for<Ti...>{}); }
  template <size_t... K>
  __device__ void apply(char** p, std::index_sequence<K...>) const {
    *(To*)p[0] = f(*(const Ti*)p[K + 1]...);
  }
};

// A bool op's operands load as bytes and become bool here: a byte other than 0 / 1 (a
// bool tensor over foreign memory) reads as true, as in PyTorch.
template <class F>
struct BoolLoads {
  F f;
  template <class... V>
  __device__ auto operator()(V... v) const {
    return f(static_cast<bool>(v)...);
  }
};

// The loops of the generated kernels on the grid.
struct CudaLoops {
  // the vectorised same-type launcher, or the strided one with each operand's own type
  template <class T, class To, int... In, class F>
  static void launch(const char* op, const Tensor& out, const Tensor* ins, F f) {
    constexpr int N = sizeof...(In);
    const Tensor* ts[N + 1] = {&out};
    for (int i = 0; i < N; ++i) ts[i + 1] = &ins[i];
    if constexpr (std::is_same_v<T, bool>) {
      strided<uint8_t, To, In...>(op, ts, BoolLoads<F>{f}, std::make_index_sequence<N>{});
    } else if constexpr (std::is_same_v<To, T> && ((In == E_T) && ...)) {
      same_type_op<T, N>(op, ts, f);
    } else {
      strided<T, To, In...>(op, ts, f, std::make_index_sequence<N>{});
    }
  }

  // The checks (integer division by zero, negative integer powers) would need a host sync
  // to raise: on cuda the intrinsics give 0 there instead (PyTorch's result is undefined).
  template <unsigned Mask, class P>
  static void check(const char*, const Tensor&, P, const char*) {}

 private:
  template <class T, class To, int... In, class F, size_t... K>
  static void strided(const char* op, const Tensor* const* ts, F f, std::index_sequence<K...>) {
    Geom<sizeof...(K) + 1> g;
    const int64_t n = make_geom<sizeof...(K) + 1>(g, ts, op);
    launch_elementwise<sizeof...(K) + 1>(op, g, n, ts[0]->device,
                                          MixedF<To, F, operand_t<T, K, In...>...>{f});
  }
};
using ElementwiseCall = ElementwiseCallT<CudaLoops, MAXD>;

}  // namespace ember

#include <ember_generated/elementwise.h>

namespace ember {

namespace {

const bool kRegistered = [] {
  for (const PyMethodDef& d : kGeneratedKernels) kernel_table().push_back(d);
  return true;
}();

}  // namespace

const char* generated_table_hash() { return EMBER_OPS_TABLE_HASH; }

}  // namespace ember
