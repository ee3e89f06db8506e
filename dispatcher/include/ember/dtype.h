// ember's dtypes for C++ and CUDA kernels: the codes of ember.dispatcher.dtypes (dtype.code),
// names and sizes, one float16 and one bfloat16 type usable on the host and on the device,
// conversions, type traits and the dtype dispatch every kernel starts with.
//
// Shared by the cpu and cuda backends and by generated kernels (#include <ember/dtype.h>,
// include path from ember.dispatcher.get_include()). Needs no Python: the only error, a dtype
// a kernel does not handle, is raised by raise_dtype, which <ember/python.h> defines.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// EMBER_HD: compiled for the host and, under nvcc, for the device.
// EMBER_INLINE: for small helpers that stand for code written in a kernel's loop body: always
// inlined, so the loop compiles as if the code stood there.
// EMBER_UNROLL: before a loop over the (up to 3) dims of a small array: unrolled, so the array
// lives in registers.
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define EMBER_HD __host__ __device__
#define EMBER_INLINE __forceinline__
#else
#define EMBER_HD
#define EMBER_INLINE inline __attribute__((always_inline))
#endif
#if defined(__CUDACC__)
#define EMBER_UNROLL _Pragma("unroll")
#else
#define EMBER_UNROLL _Pragma("GCC unroll 4")
#endif

// hidden: each extension module built on these headers keeps its own copies (see python.h)
#pragma GCC visibility push(hidden)

namespace ember {

// Codes 10, 11 and 15 are complex64, complex128 and complex32, which no kernel sees (the
// dispatcher runs complex ops on the real views of their tensors): their size here is 0 and
// read_dtype refuses them. 12 to 14 are PyTorch's "barebones" unsigned dtypes, which only the
// kernels whose dtype masks name them (M_BAREBONES) take.
enum : int {
  kBool = 0, kUInt8 = 1, kInt8 = 2, kInt16 = 3, kInt32 = 4, kInt64 = 5,
  kFloat16 = 6, kBFloat16 = 7, kFloat32 = 8, kFloat64 = 9,
  kUInt16 = 12, kUInt32 = 13, kUInt64 = 14, kNumDTypes = 16
};
inline constexpr const char* kDTypeNames[kNumDTypes] = {
    "bool",    "uint8",   "int8",      "int16",      "int32",  "int64",  "float16", "bfloat16",
    "float32", "float64", "complex64", "complex128", "uint16", "uint32", "uint64",
    "complex32"};
inline constexpr int kDTypeSizes[kNumDTypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 0, 0, 2, 4, 8, 0};

inline const char* dtype_name(int code) {
  return (code >= 0 && code < kNumDTypes) ? kDTypeNames[code] : "<invalid dtype>";
}
inline bool is_floating_code(int c) { return c >= kFloat16 && c <= kFloat64; }
inline bool is_integral_code(int c) { return (c >= kUInt8 && c <= kInt64) || (c >= kUInt16 && c <= kUInt64); }

// Raise TypeError: `op` has no kernel for dtype `code` / for elements of `itemsize` bytes on
// this backend. Declared here for dispatch(); defined in <ember/python.h>, where C++ errors
// become Python exceptions.
[[noreturn]] inline void raise_dtype(const char* op, int code);
[[noreturn]] inline void raise_itemsize(const char* op, int itemsize);

// ---------------------------------------------------------------------------------------------
// float16 / bfloat16 <-> float32: round to nearest even, NaN kept a (quiet) NaN.
//
// Host: branch-free bit manipulation (after Maratyszcza's FP16 library) so that loops over
// 16-bit arrays vectorise. Device: the hardware conversions of cuda_fp16 / cuda_bf16.
inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float f32_from(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float half_to_float(uint16_t h) {
  const uint32_t w = (uint32_t)h << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const uint32_t exp_offset = 0xE0u << 23;
  const float exp_scale = 0x1.0p-112f;
  const float normalized = f32_from((two_w >> 4) + exp_offset) * exp_scale;
  const uint32_t magic_mask = 126u << 23;
  const float magic_bias = 0.5f;
  const float denormalized = f32_from((two_w >> 17) | magic_mask) - magic_bias;
  const uint32_t cutoff = 1u << 27;
  const uint32_t r = sign | (two_w < cutoff ? f32_bits(denormalized) : f32_bits(normalized));
  return f32_from(r);
}
inline uint16_t float_to_half(float f) {
  const float scale_to_inf = 0x1.0p+112f;
  const float scale_to_zero = 0x1.0p-110f;
  float base = (std::fabs(f) * scale_to_inf) * scale_to_zero;
  const uint32_t w = f32_bits(f);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = f32_from((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = f32_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return (uint16_t)((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}
inline float bf16_to_float(uint16_t b) { return f32_from((uint32_t)b << 16); }
inline uint16_t float_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

// The element type of float16 (Code = kFloat16) / bfloat16 (kBFloat16) tensors: the 16 bits,
// converted through float. Arithmetic happens in compute_t (float); cuBLAS or vector loads
// that want CUDA's __half / __nv_bfloat16 reinterpret the bits.
template <int Code>
struct Float16 {
  static_assert(Code == kFloat16 || Code == kBFloat16, "a 16-bit floating dtype");
  uint16_t x;
  Float16() = default;
  EMBER_HD explicit Float16(float f) {
#if defined(__CUDA_ARCH__)
    if constexpr (Code == kFloat16) x = __half_as_ushort(__float2half_rn(f));
    else x = __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
    if constexpr (Code == kFloat16) x = float_to_half(f);
    else x = float_to_bf16(f);
#endif
  }
  EMBER_HD operator float() const {
#if defined(__CUDA_ARCH__)
    if constexpr (Code == kFloat16) return __half2float(__ushort_as_half(x));
    else return __bfloat162float(__ushort_as_bfloat16(x));
#else
    if constexpr (Code == kFloat16) return half_to_float(x);
    else return bf16_to_float(x);
#endif
  }
};
using Half = Float16<kFloat16>;
using BFloat16 = Float16<kBFloat16>;

template <class T> constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T> constexpr bool is_fp_v = std::is_floating_point_v<T> || is_half_v<T>;
template <class T> constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
// the type arithmetic on T is done in
template <class T> using compute_t = std::conditional_t<is_half_v<T>, float, T>;
// the unsigned type of wrapping integer arithmetic (two's complement; no UB on overflow)
template <class T>
using wrap_t = std::conditional_t<(sizeof(T) < 4), uint32_t,
                                  std::make_unsigned_t<std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>>;

// v as a To: through the compute type; to bool: != 0; floating -> integer truncates;
// integer -> integer wraps.
template <class To, class From>
EMBER_HD inline To cvt(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else {
    using C = compute_t<From>;
    C c = static_cast<C>(v);
    if constexpr (std::is_same_v<To, bool>) {
      return c != C(0);
    } else if constexpr (is_half_v<To>) {
      return To(static_cast<float>(c));
    } else if constexpr (std::is_floating_point_v<To>) {
      return static_cast<To>(c);
    } else if constexpr (std::is_floating_point_v<C>) {  // float -> integer: truncate
      if constexpr (sizeof(To) == 8) return static_cast<To>(c);
      else return static_cast<To>(static_cast<int64_t>(c));
    } else {
      return static_cast<To>(c);  // integer -> integer: wraps (two's complement)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// dtype dispatch: dispatch<M_FLOAT>(t.dtype, "exp", [&](auto tag) { using T = EMBER_T(tag); ... })
template <class T> struct Tag { using type = T; };
#define EMBER_T(tag) typename decltype(tag)::type

enum : unsigned {
  M_BOOL = 1u << kBool, M_U8 = 1u << kUInt8, M_I8 = 1u << kInt8, M_I16 = 1u << kInt16,
  M_I32 = 1u << kInt32, M_I64 = 1u << kInt64, M_F16 = 1u << kFloat16, M_BF16 = 1u << kBFloat16,
  M_F32 = 1u << kFloat32, M_F64 = 1u << kFloat64,
  M_U16 = 1u << kUInt16, M_U32 = 1u << kUInt32, M_U64 = 1u << kUInt64,
  M_INT = M_U8 | M_I8 | M_I16 | M_I32 | M_I64,
  M_FLOAT = M_F16 | M_BF16 | M_F32 | M_F64,
  M_NUM = M_INT | M_FLOAT,
  M_ALL = M_NUM | M_BOOL,
  M_BOOLINT = M_INT | M_BOOL,
  // not in the masks above: a kernel takes them where PyTorch's does (copies, casts, fill,
  // mul, eq / ne, bitwise and / or / xor, sum / prod / cumsum, sort, ...)
  M_BAREBONES = M_U16 | M_U32 | M_U64,
};

// Calls f(Tag<T>{}) for the C++ type of dtype `code` if it is in Mask, else raises TypeError.
template <unsigned Mask, class F>
inline void dispatch(int code, const char* op, F&& f) {
  switch (code) {
#define EMBER_CASE(CODE, MASK, TYPE) \
  case CODE:                         \
    if constexpr ((Mask & MASK) != 0) { f(Tag<TYPE>{}); return; } \
    break;
    EMBER_CASE(kBool, M_BOOL, bool)
    EMBER_CASE(kUInt8, M_U8, uint8_t)
    EMBER_CASE(kInt8, M_I8, int8_t)
    EMBER_CASE(kInt16, M_I16, int16_t)
    EMBER_CASE(kInt32, M_I32, int32_t)
    EMBER_CASE(kInt64, M_I64, int64_t)
    EMBER_CASE(kFloat16, M_F16, Half)
    EMBER_CASE(kBFloat16, M_BF16, BFloat16)
    EMBER_CASE(kFloat32, M_F32, float)
    EMBER_CASE(kFloat64, M_F64, double)
    EMBER_CASE(kUInt16, M_U16, uint16_t)
    EMBER_CASE(kUInt32, M_U32, uint32_t)
    EMBER_CASE(kUInt64, M_U64, uint64_t)
#undef EMBER_CASE
    default: break;
  }
  raise_dtype(op, code);
}

// Dispatch on element size only (pure data movement: copies, gathers, where).
template <class F>
inline void dispatch_size(int itemsize, const char* op, F&& f) {
  switch (itemsize) {
    case 1: f(Tag<uint8_t>{}); return;
    case 2: f(Tag<uint16_t>{}); return;
    case 4: f(Tag<uint32_t>{}); return;
    case 8: f(Tag<uint64_t>{}); return;
    default: raise_itemsize(op, itemsize);
  }
}

}  // namespace ember

#pragma GCC visibility pop
