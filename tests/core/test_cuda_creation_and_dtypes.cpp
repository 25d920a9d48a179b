// Every dtype and the creation functions on the GPU (part of test_gpu, Skipped without a GPU):
// each dtype goes to the GPU and back unchanged; converting copies between every pair of dtypes,
// of contiguous and transposed views, give the CPU's bytes (core/convert.h is host/device: NaN
// to 0, clamping; a NaN stays a NaN, its payload aside); fills of whole tensors and of strided
// views match the CPU's; and the creation functions with a CUDA device option give the CPU's
// values, the random ones for the same seed (with the generator advanced as far), so a seed means
// the same numbers on both devices.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/factory.h"
#include "core/generator.h"

using namespace qgrad;

namespace {

const std::vector<DType> kDTypes = {kFloat32, kFloat64, kInt8, kUInt8, kInt16, kInt32, kInt64};

// Whether two float tensors' elements are bit for bit equal or both NaN. NaN payloads may
// differ: an NVIDIA GPU's float64 -> float32 conversion may give its canonical NaN 0x7fffffff
// where the CPU keeps the payload's top bits (0x7fc00000).
template <typename T>
bool same_floats(const Tensor& x, const Tensor& y) {
  const T* a = static_cast<const T*>(x.raw_data());
  const T* b = static_cast<const T*>(y.raw_data());
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return false;
  }
  return true;
}

// Whether two tensors hold the same dtype, shape and bytes (NaN as NaN, any payload).
bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor x = a.to(kCPU).contiguous(), y = b.to(kCPU).contiguous();
  if (x.dtype() == kFloat32) return same_floats<float>(x, y);
  if (x.dtype() == kFloat64) return same_floats<double>(x, y);
  return std::memcmp(x.raw_data(), y.raw_data(),
                     static_cast<std::size_t>(x.numel()) * x.element_size()) == 0;
}

}  // namespace

TEST_CASE("cuda dtypes: every dtype to the GPU and back, converting copies and fills as the CPU") {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v = {
      -3e9,    -40000.2, -300.7, -128.5, -1.5,  -0.5,
      0.0,     0.5,      1.5,    2.5,    127.5, 255.9,
      40000.2, 3e9,      1e20,   -inf,   inf,   std::numeric_limits<double>::quiet_NaN()};
  const Tensor base = from_vector<double>(v, {3, 6});
  for (const DType from : kDTypes) {
    const Tensor src = base.to(from);  // converted on the CPU
    const Tensor dev = src.to(kCUDA);
    INFO("from " << dtype_name(from));
    CHECK(dev.device() == kCUDA);
    CHECK(same_bytes(dev.to(kCPU), src));
    for (const DType to : kDTypes) {
      INFO("to " << dtype_name(to));
      CHECK(same_bytes(dev.to(to), src.to(to)));
      CHECK(same_bytes(dev.t().to(to), src.t().to(to)));               // strided read
      CHECK(same_bytes(dev.t().contiguous().to(to), src.t().to(to)));  // strided copy first
    }
    for (const double value : {0.0, 1.0, 42.0, -7.25, 2.5}) {
      INFO("fill " << value);
      const bool is_signed_or_float = from != kUInt8;
      if (value < 0 && !is_signed_or_float) continue;
      Tensor c = zeros({4, 6}, TensorOptions().dtype(from));
      Tensor g = zeros({4, 6}, TensorOptions().dtype(from).device(kCUDA));
      c.narrow(1, 1, 3).fill_(value);
      g.narrow(1, 1, 3).fill_(value);
      CHECK(same_bytes(g, c));
      CHECK(same_bytes(full({2, 3}, value, TensorOptions().dtype(from).device(kCUDA)),
                       full({2, 3}, value, TensorOptions().dtype(from))));
    }
  }
}

TEST_CASE("cuda creation: the creation functions with a CUDA device give the CPU's values") {
  const TensorOptions gpu = TensorOptions().device(kCUDA);
  for (const DType dt : kDTypes) {
    INFO(dtype_name(dt));
    const TensorOptions c = TensorOptions().dtype(dt);
    const TensorOptions g = TensorOptions().dtype(dt).device(kCUDA);
    CHECK(same_bytes(zeros({3, 5}, g), zeros({3, 5}, c)));
    CHECK(same_bytes(ones({3, 5}, g), ones({3, 5}, c)));
    CHECK(same_bytes(full({7}, 3.0, g), full({7}, 3.0, c)));
    CHECK(same_bytes(arange(0.0, 11.0, 2.0, g), arange(0.0, 11.0, 2.0, c)));
    CHECK(same_bytes(from_vector<double>({1, 2, 3, 4}, {2, 2}, g),
                     from_vector<double>({1, 2, 3, 4}, {2, 2}, c)));
    CHECK(same_bytes(scalar_tensor(5.0, g), scalar_tensor(5.0, c)));
  }
  CHECK(same_bytes(tensor({0.5, -1.5}, gpu), tensor({0.5, -1.5})));
  CHECK(same_bytes(arange(0.0, 3.0, 0.25, gpu), arange(0.0, 3.0, 0.25)));

  // The same seed, the same numbers, and the generator advanced equally. 1001 elements: not a
  // multiple of a Philox block's 4 words.
  const Shape shape = {7, 11, 13};
  for (const DType dt : {kFloat32, kFloat64}) {
    INFO(dtype_name(dt));
    const TensorOptions c = TensorOptions().dtype(dt);
    const TensorOptions g = TensorOptions().dtype(dt).device(kCUDA);
    Generator gc(123), gg(123);
    CHECK(same_bytes(rand(shape, gg, g), rand(shape, gc, c)));
    CHECK(same_bytes(randn(shape, gg, g), randn(shape, gc, c)));
    CHECK(same_bytes(uniform(shape, -2.0, 3.0, gg, g), uniform(shape, -2.0, 3.0, gc, c)));
    CHECK(same_bytes(normal(shape, 1.0, 0.5, gg, g), normal(shape, 1.0, 0.5, gc, c)));
    CHECK(same_bytes(bernoulli(shape, 0.3, gg, g), bernoulli(shape, 0.3, gc, c)));
    CHECK(gg.offset() == gc.offset());
  }
  Generator gc(7), gg(7);
  CHECK(same_bytes(randint(-5, 9, shape, gg, TensorOptions().dtype(kInt64).device(kCUDA)),
                   randint(-5, 9, shape, gc, TensorOptions().dtype(kInt64))));
  CHECK(gg.offset() == gc.offset());
}
