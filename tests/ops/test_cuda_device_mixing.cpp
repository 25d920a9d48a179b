// Arguments on different devices (part of test_gpu, Skipped without a GPU): an op given a CPU
// and a GPU tensor throws a DeviceError that names the op, as PyTorch refuses to mix devices,
// rather than reading one device's memory from the other.
#include <catch2/catch.hpp>

#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/concat/concat.h"
#include "ops/loss/loss.h"
#include "ops/matmul/matmul.h"

using namespace qgrad;

TEST_CASE("cuda device mixing: a CPU and a GPU tensor in one op is a DeviceError naming the op") {
  const Tensor cpu = zeros({2, 3}), gpu = zeros({2, 3}).to(kCUDA);
  const Tensor cls_cpu = zeros({2}, TensorOptions().dtype(kInt64));
  const Tensor cls_gpu = cls_cpu.to(kCUDA);
  CHECK_THROWS_AS(concat({cpu, gpu}, 0), DeviceError);
  CHECK_THROWS_WITH(stack({gpu, cpu}, 0), Catch::Contains("stack"));
  CHECK_THROWS_WITH(add(cpu, gpu), Catch::Contains("add"));
  CHECK_THROWS_WITH(matmul(gpu, cpu.t()), Catch::Contains("matmul"));
  CHECK_THROWS_AS(cross_entropy(gpu, cls_cpu), DeviceError);
  CHECK_THROWS_WITH(nll_loss(cpu, cls_gpu), Catch::Contains("nll_loss"));
  CHECK_THROWS_WITH(mse_loss(gpu, cpu), Catch::Contains("mse_loss"));
  // The same ops on one device run.
  CHECK(concat({gpu, gpu}, 0).device() == kCUDA);
  CHECK(cross_entropy(gpu, cls_gpu).item<double>() > 0);
}
