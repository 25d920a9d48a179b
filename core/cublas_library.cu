// cuBLAS loaded with dlopen on first use (see cublas_library.h for why).
#include "core/cublas_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "core/error.h"

namespace qgrad {

namespace {

template <typename Fn>
void resolve(void* lib, const char* name, Fn& fn, const char* op) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (fn == nullptr) {
    const char* why = dlerror();
    throw DeviceError(std::string(op) + ": the cuBLAS library has no function " + name + " (" +
                      (why ? why : "dlsym found nothing") + ")");
  }
}

}  // namespace

const CublasLibrary& cublas_library(const char* op) {
  // The explicit cache: the loaded library, immortal (dlclose at exit could run after the CUDA
  // runtime has shut down).
  static std::mutex mutex;
  static CublasLibrary api{};
  static bool loaded = false;
  const std::lock_guard<std::mutex> lock(mutex);
  if (loaded) return api;
  void* lib = nullptr;
  std::string tried;
  for (const char* file : {QGRAD_CUBLAS_SONAME, QGRAD_CUBLAS_PATH}) {
    lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* why = dlerror();
    tried += std::string("\n  ") + file + ": " + (why ? why : "not found");
  }
  if (lib == nullptr)
    throw DeviceError(std::string(op) +
                      ": cannot load cuBLAS, which GPU matrix products need; tried:" + tried +
                      "\n(install the CUDA toolkit's cuBLAS, or add its folder to "
                      "LD_LIBRARY_PATH)");
  CublasLibrary a{};
  resolve(lib, "cublasCreate_v2", a.create, op);
  resolve(lib, "cublasSetStream_v2", a.set_stream, op);
  resolve(lib, "cublasSetMathMode", a.set_math_mode, op);
  resolve(lib, "cublasSgemmStridedBatched", a.sgemm_strided_batched, op);
  resolve(lib, "cublasDgemmStridedBatched", a.dgemm_strided_batched, op);
  resolve(lib, "cublasGetStatusString", a.status_string, op);
  resolve(lib, "cublasGetStatusName", a.status_name, op);
  api = a;
  loaded = true;
  return api;
}

}  // namespace qgrad
