// CUDA batched matrix product through cuBLAS (S/DgemmStridedBatched). Each operand is passed
// as it lies when its matrices are row- or column-major (a transposed view becomes a transpose
// flag) and its batch dims collapse into one batch stride (stride 0 when broadcast);
// otherwise it is first copied into a contiguous [batch..., rows, cols] block. Row-major
// C = A B is computed as the column-major C^T = B^T A^T. The bias is broadcast into `out`
// first and the product added with beta = 1. One cuBLAS handle per device, created on first
// use, kept for the process and bound to the device's qgrad stream before every call; its math
// mode is CUBLAS_PEDANTIC_MATH, so float32 products never use TF32 and stay comparable with
// the CPU's. cuBLAS itself is loaded on first use (core/cublas_library.h).
#include <cublas_api.h>

#include <array>
#include <climits>
#include <cstdint>
#include <mutex>

#include "core/cuda_check.h"
#include "core/cuda_cublas_check.h"
#include "core/cuda_stream.h"
#include "ops/matmul/matmul_kernels.h"

namespace qgrad {

namespace {

constexpr int kMaxHandleDevices = 64;

// The explicit handle cache: one immortal handle per device (destroying handles at exit, after
// the runtime may have shut down, would be an error, as for the streams), each with the mutex
// that serialises its use (a handle's stream binding is shared state).
struct HandleSlot {
  std::mutex mutex;
  cublasHandle_t handle = nullptr;
};

HandleSlot& handle_slot(int device) {
  static std::array<HandleSlot, kMaxHandleDevices> slots;
  check_cuda_device_index("matmul", device);
  QGRAD_CHECK(device < kMaxHandleDevices, DeviceError, "matmul: CUDA device index ", device,
              " is past the ", kMaxHandleDevices, " devices the cuBLAS handle cache holds");
  return slots[static_cast<std::size_t>(device)];
}

// A matrix operand as cuBLAS reads it, in cuBLAS's column-major terms.
struct GemmOperand {
  Tensor data;              // the tensor whose memory is read (a copy when the view was not usable)
  bool transposed = false;  // column-major matrices: cuBLAS must transpose them
  std::int64_t ld = 1;
  std::int64_t batch_stride = 0;
};

// Whether the batch dims (all but the last two) of `t`, seen with `batch` sizes, step through
// memory with one stride; sets `stride` (0 when every batch dim is broadcast).
bool one_batch_stride(const Tensor& t, const Shape& batch, std::int64_t& stride) {
  stride = 0;
  std::int64_t next_size = 0, next_stride = 0;  // the nearest inner batch dim of size > 1
  bool have_inner = false;
  for (std::size_t d = batch.size(); d-- > 0;) {
    if (batch[d] == 1) continue;
    const std::int64_t s = t.shape()[d] == 1 ? 0 : t.strides()[d];
    if (!have_inner) {
      stride = s;
      have_inner = true;
    } else if (s != next_stride * next_size) {
      return false;
    }
    next_size = batch[d];
    next_stride = s;
  }
  return true;
}

// Describes `t` ([batch..., r, c], batch dims equal to `batch` or 1) for cuBLAS, copying it
// when its layout cannot be described.
GemmOperand describe(const Tensor& t, const Shape& batch) {
  const std::size_t n = t.shape().size();
  const std::int64_t r = t.shape()[n - 2], c = t.shape()[n - 1];
  for (int attempt = 0; attempt < 2; ++attempt) {
    GemmOperand op;
    if (attempt == 0) {
      op.data = t;
    } else {
      // Every batch dim materialised: a plain contiguous block.
      Shape full = batch;
      full.push_back(r);
      full.push_back(c);
      op.data = t.expand(full).contiguous();
    }
    const Shape& st = op.data.strides();
    const std::int64_t sr = st[n - 2], sc = st[n - 1];
    const bool row_major = (c == 1 || sc == 1) && (r == 1 || sr >= std::max<std::int64_t>(c, 1));
    const bool col_major = (r == 1 || sr == 1) && (c == 1 || sc >= std::max<std::int64_t>(r, 1));
    if (row_major) {
      op.transposed = false;
      op.ld = r == 1 ? std::max<std::int64_t>(c, 1) : sr;
    } else if (col_major) {
      op.transposed = true;
      op.ld = c == 1 ? std::max<std::int64_t>(r, 1) : sc;
    } else {
      continue;
    }
    if (!one_batch_stride(op.data, batch, op.batch_stride)) continue;
    if (op.ld > INT_MAX) continue;
    return op;
  }
  throw ShapeError(detail::concat("matmul: operand of shape ", t.shape(),
                                  " has a leading dimension too large for cuBLAS"));
}

int as_int(std::int64_t v, const char* what) {
  QGRAD_CHECK(v <= INT_MAX, ShapeError, "matmul: ", what, " ", v,
              " exceeds the int range of the cuBLAS API");
  return static_cast<int>(v);
}

cublasStatus_t gemm(const CublasLibrary& lib, cublasHandle_t h, cublasOperation_t ta,
                    cublasOperation_t tb, int m, int n, int k, const float* a, int lda,
                    long long sa, const float* b, int ldb, long long sb, float* c, int ldc,
                    long long sc, int batch) {
  const float one = 1.0f;
  return lib.sgemm_strided_batched(h, ta, tb, m, n, k, &one, a, lda, sa, b, ldb, sb, &one, c, ldc,
                                   sc, batch);
}
cublasStatus_t gemm(const CublasLibrary& lib, cublasHandle_t h, cublasOperation_t ta,
                    cublasOperation_t tb, int m, int n, int k, const double* a, int lda,
                    long long sa, const double* b, int ldb, long long sb, double* c, int ldc,
                    long long sc, int batch) {
  const double one = 1.0;
  return lib.dgemm_strided_batched(h, ta, tb, m, n, k, &one, a, lda, sa, b, ldb, sb, &one, c, ldc,
                                   sc, batch);
}

template <typename T>
void matmul_typed(const Tensor& a, const Tensor& b, const Tensor& out) {
  const Shape& os = out.shape();
  const std::size_t nd = os.size();
  const std::int64_t M = os[nd - 2], N = os[nd - 1], K = a.shape()[nd - 1];
  const Shape batch(os.begin(), os.end() - 2);
  std::int64_t batch_count = 1;
  for (std::int64_t s : batch) batch_count *= s;
  const GemmOperand A = describe(a, batch), B = describe(b, batch);

  const int device = out.device().index;
  const CudaDeviceGuard guard(device);
  HandleSlot& slot = handle_slot(device);
  const CublasLibrary& lib = cublas_library("matmul");
  const std::lock_guard<std::mutex> lock(slot.mutex);
  if (!slot.handle) {
    QGRAD_CUBLAS_CHECK(lib.create(&slot.handle), "matmul", "device ", device);
    QGRAD_CUBLAS_CHECK(lib.set_math_mode(slot.handle, CUBLAS_PEDANTIC_MATH), "matmul");
  }
  QGRAD_CUBLAS_CHECK(lib.set_stream(slot.handle, cuda_stream(device)), "matmul");
  // Column-major C^T [N, M] (ld N) = B^T [N, K] * A^T [K, M]. A row-major operand already is
  // its transpose in column-major terms (op N); a column-major one needs op T.
  QGRAD_CUBLAS_CHECK(
      gemm(lib, slot.handle, B.transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
           A.transposed ? CUBLAS_OP_T : CUBLAS_OP_N, as_int(N, "N"), as_int(M, "M"), as_int(K, "K"),
           static_cast<const T*>(B.data.raw_data()), static_cast<int>(B.ld), B.batch_stride,
           static_cast<const T*>(A.data.raw_data()), static_cast<int>(A.ld), A.batch_stride,
           static_cast<T*>(out.raw_data()), as_int(N, "N"), M * N,
           as_int(batch_count, "batch count")),
      "matmul", a.shape(), " x ", b.shape(), " -> ", out.shape());
}

void matmul_cuda(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out) {
  if (out.numel() == 0) return;
  // beta = 1 below: out starts as the bias (broadcast over rows) or zeros.
  if (bias.defined())
    Tensor(out).copy_(bias);
  else
    Tensor(out).zero_();
  if (a.shape().back() == 0) return;  // empty sum: the bias alone
  QGRAD_DISPATCH_FLOAT(out.dtype(), "matmul", [&] { matmul_typed<scalar_t>(a, b, out); });
}

}  // namespace

void register_matmul_cuda_kernels(KernelRegistry& r) {
  r.table(kMatmulKernels).define(DeviceType::CUDA, &matmul_cuda, kFloatingDTypes);
}

}  // namespace qgrad
