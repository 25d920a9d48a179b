// cuBLAS is loaded on first use, not linked (core/cublas_library.h): in a CUDA build the loader
// finds the toolkit's library and every function qgrad calls, no GPU needed.
#include <catch2/catch.hpp>

#ifdef QGRAD_WITH_CUDA
#include <string>

#include "core/cublas_library.h"

TEST_CASE("cublas library: loaded on first use with every function qgrad calls") {
  const qgrad::CublasLibrary& lib = qgrad::cublas_library("test");
  CHECK(lib.create != nullptr);
  CHECK(lib.set_stream != nullptr);
  CHECK(lib.set_math_mode != nullptr);
  CHECK(lib.sgemm_strided_batched != nullptr);
  CHECK(lib.dgemm_strided_batched != nullptr);
  CHECK(std::string(lib.status_name(CUBLAS_STATUS_NOT_INITIALIZED)) ==
        "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK(&qgrad::cublas_library("test") == &lib);  // loaded once
}
#endif
