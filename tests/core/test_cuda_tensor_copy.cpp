// Tensors to the GPU and back (part of test_gpu, Skipped without a GPU): a non-contiguous view
// copied to the device and back keeps its values, to_vector and item read a device tensor through
// the host, and a device index the machine does not have is a DeviceError.
#include <catch2/catch.hpp>

#include "core/factory.h"
#include "core/tensor_testing.h"

using namespace qgrad;

TEST_CASE(
    "cuda tensor copy: a view goes to the GPU and back unchanged, and a bad index is an error") {
  const Tensor x = qgrad::testing::iota({3, 4}).t();
  const Tensor g = x.to(kCUDA);
  CHECK(g.device() == kCUDA);
  CHECK(g.to(kCPU).to_vector<double>() == x.to_vector<double>());
  CHECK(g.to_vector<double>() == x.to_vector<double>());
  CHECK(g.select(0, 1).select(0, 2).item<double>() == x.select(0, 1).select(0, 2).item<double>());
  CHECK(g.to(kFloat32).to(kCPU).to_vector<float>() == x.to_vector<float>());
  CHECK_THROWS_AS(empty({2}, TensorOptions().device(Device(DeviceType::CUDA, 1000))), DeviceError);
}
