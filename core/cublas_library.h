// cuBLAS, loaded on first use. qgrad does not link libcublas: linking it costs every process
// about 215 MB of resident memory at start-up (libcublasLt's relocations), a CPU-only run
// included. The first GPU matmul dlopens the toolkit's libcublas (its soname, then the path of
// the toolkit qgrad was built with) and resolves the few functions qgrad calls. Include only
// from .cu files or files compiled in CUDA builds (QGRAD_WITH_CUDA).
#pragma once

#include <cublas_api.h>

namespace qgrad {

// The cuBLAS functions qgrad uses, as pointers into the loaded library.
struct CublasLibrary {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
  decltype(&cublasGetStatusString) status_string;
  decltype(&cublasGetStatusName) status_name;
};

// The library, loaded by the first call (thread-safe) and kept for the process. Throws
// DeviceError naming `op`, the files tried and dlerror's text when it cannot be loaded or lacks
// a function; later calls retry.
const CublasLibrary& cublas_library(const char* op);

}  // namespace qgrad
