// cuBLAS, opened at run time (dlopen) so that the module imports on machines without it:
// from the nvidia-cublas wheel when installed, else the system's (the Python plugin passes
// the candidate paths). One handle per device, bound to the current stream at every call.
#include <dlfcn.h>
#include <library_types.h>

#include <mutex>

#include "common.h"

namespace ember {

namespace {

using Handle = void*;
using create_t = int (*)(Handle*);
using set_stream_t = int (*)(Handle, cudaStream_t);
using gemm_ex_t = int (*)(Handle, int, int, int, int, int, const void*, const void*, cudaDataType_t, int, long long,
                          const void*, cudaDataType_t, int, long long, const void*, void*, cudaDataType_t, int,
                          long long, int, int, int);
enum { kComputeF32 = 68, kComputeF64 = 70, kGemmDefault = -1 };

void* g_lib = nullptr;
std::string g_path;
create_t g_create = nullptr;
set_stream_t g_set_stream = nullptr;
gemm_ex_t g_gemm = nullptr;
Handle g_handles[64] = {};
std::mutex g_mu;

}  // namespace

bool load_cublas(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_lib) return true;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  auto c = (create_t)dlsym(lib, "cublasCreate_v2");
  auto s = (set_stream_t)dlsym(lib, "cublasSetStream_v2");
  auto g = (gemm_ex_t)dlsym(lib, "cublasGemmStridedBatchedEx");
  if (!c || !s || !g) {
    dlclose(lib);
    return false;
  }
  g_lib = lib;
  g_path = path;
  g_create = c;
  g_set_stream = s;
  g_gemm = g;
  return true;
}

bool cublas_loaded() { return g_lib != nullptr; }
const std::string& cublas_path() { return g_path; }

// C (col-major m x n, ldc) = op(A) (m x k) * op(B) (k x n), batched with element strides.
// dtype: kFloat16 / kBFloat16 / kFloat32 / kFloat64. Returns false when cuBLAS is absent.
bool cublas_gemm(int device, int dtype, bool ta, bool tb, int m, int n, int k, const void* A, int lda,
                 long long sA, const void* B, int ldb, long long sB, void* C, int ldc, long long sC, int batch) {
  if (!g_lib) return false;
  Handle& h = g_handles[device];
  if (!h) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!h && g_create(&h) != 0) raise(PyExc_RuntimeError, "cublasCreate failed on cuda:%d", device);
  }
  g_set_stream(h, current_stream(device));
  const float f1 = 1.0f, f0 = 0.0f;
  const double d1 = 1.0, d0 = 0.0;
  cudaDataType_t t;
  int compute = kComputeF32;
  const void *alpha = &f1, *beta = &f0;
  switch (dtype) {
    case kFloat16: t = CUDA_R_16F; break;
    case kBFloat16: t = CUDA_R_16BF; break;
    case kFloat32: t = CUDA_R_32F; break;
    default:
      t = CUDA_R_64F;
      compute = kComputeF64;
      alpha = &d1;
      beta = &d0;
  }
  const int st = g_gemm(h, ta ? 1 : 0, tb ? 1 : 0, m, n, k, alpha, A, t, lda, sA, B, t, ldb, sB, beta, C, t, ldc, sC,
                        batch, compute, kGemmDefault);
  if (st != 0) raise(PyExc_RuntimeError, "bmm(): cublasGemmStridedBatchedEx failed with status %d", st);
  return true;
}

}  // namespace ember
