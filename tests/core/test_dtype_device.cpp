// DTypes and devices: names, sizes, promotion; to(dtype) between all seven dtypes (float -> int
// truncates, clamps to the target range and maps NaN to 0; int -> narrower int wraps as in
// PyTorch), int16 conversions and int16 ops against PyTorch (tests/fixtures/gen_core.py); item
// and to_vector; Device::parse/str; CUDA requests in a CPU-only build.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "support/fixtures.h"
#include "tensor_testing.h"

using namespace qgrad;

namespace {
const DType kAll[] = {kFloat32, kFloat64, kInt8, kUInt8, kInt16, kInt32, kInt64};
}

TEST_CASE("dtype names, sizes and promotion", "[core][dtype]") {
  CHECK(dtype_size(kFloat32) == 4);
  CHECK(dtype_size(kFloat64) == 8);
  CHECK(dtype_size(kInt8) == 1);
  CHECK(dtype_size(kUInt8) == 1);
  CHECK(dtype_size(kInt16) == 2);
  CHECK(dtype_size(kInt32) == 4);
  CHECK(dtype_size(kInt64) == 8);
  for (DType d : kAll) CHECK(dtype_from_name(dtype_name(d)) == d);
  CHECK(std::string(dtype_name(kUInt8)) == "uint8");
  CHECK(std::string(dtype_name(kInt16)) == "int16");
  CHECK(dtype_from_name("int16") == kInt16);
  CHECK(dtype_v<std::int16_t> == kInt16);
  CHECK_THROWS_WITH(dtype_from_name("uint16"), Catch::Contains("int16, int32"));
  CHECK_THROWS_AS(dtype_from_name("float16"), DTypeError);
  CHECK_THROWS_WITH(dtype_from_name("bogus"), Catch::Contains("bogus"));
  CHECK(is_floating(kFloat32));
  CHECK_FALSE(is_floating(kInt64));
  CHECK(promote_types(kFloat32, kFloat64) == kFloat64);
  CHECK(promote_types(kInt64, kFloat32) == kFloat32);
  // int8 with uint8 meets in int16 (PyTorch); int16 loses to the wider ints and to floats.
  CHECK(promote_types(kInt8, kUInt8) == kInt16);
  CHECK(promote_types(kUInt8, kInt8) == kInt16);
  CHECK(promote_types(kInt16, kUInt8) == kInt16);
  CHECK(promote_types(kInt8, kInt16) == kInt16);
  CHECK(promote_types(kInt16, kInt32) == kInt32);
  CHECK(promote_types(kInt64, kInt16) == kInt64);
  CHECK(promote_types(kInt16, kFloat32) == kFloat32);
  CHECK(promote_types(kInt16, kInt16) == kInt16);
  CHECK(promote_types(kInt8, kInt64) == kInt64);
  CHECK(promote_types(kUInt8, kUInt8) == kUInt8);
}

TEST_CASE("to(dtype) between every pair of dtypes on exactly representable values",
          "[core][dtype]") {
  const std::vector<double> vals = {0, 1, 2, 7, 100, 127};
  for (DType from : kAll) {
    for (DType to : kAll) {
      Tensor x = from_vector(vals, {2, 3}, TensorOptions().dtype(from));
      Tensor y = x.to(to);
      INFO(dtype_name(from) << " -> " << dtype_name(to));
      CHECK(y.dtype() == to);
      CHECK(y.shape() == Shape{2, 3});
      CHECK(y.to_vector<double>() == vals);
      if (from == to) CHECK(y.is_same(x));
      // And from a non-contiguous source.
      CHECK(x.t().to(to).to_vector<double>() == std::vector<double>{0, 7, 1, 100, 2, 127});
    }
  }
}

TEST_CASE("float -> int conversion truncates, clamps and maps NaN to 0", "[core][dtype]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v = {0.0, 2.7, -2.7, 300.7, -300.7, 1e30, -1e30, nan, inf, -inf, 255.9};
  for (DType src : {kFloat32, kFloat64}) {
    Tensor x = from_vector(v, {-1}, TensorOptions().dtype(src));
    INFO(dtype_name(src));
    CHECK(x.to(kInt8).to_vector<std::int8_t>() ==
          std::vector<std::int8_t>{0, 2, -2, 127, -128, 127, -128, 0, 127, -128, 127});
    CHECK(x.to(kUInt8).to_vector<std::uint8_t>() ==
          std::vector<std::uint8_t>{0, 2, 0, 255, 0, 255, 0, 0, 255, 0, 255});
    CHECK(x.to(kInt16).to_vector<std::int16_t>() ==
          std::vector<std::int16_t>{0, 2, -2, 300, -300, 32767, -32768, 0, 32767, -32768, 255});
    const std::int32_t i32max = std::numeric_limits<std::int32_t>::max();
    const std::int32_t i32min = std::numeric_limits<std::int32_t>::min();
    CHECK(x.to(kInt32).to_vector<std::int32_t>() ==
          std::vector<std::int32_t>{0, 2, -2, 300, -300, i32max, i32min, 0, i32max, i32min, 255});
    const std::int64_t i64max = std::numeric_limits<std::int64_t>::max();
    const std::int64_t i64min = std::numeric_limits<std::int64_t>::min();
    CHECK(x.to(kInt64).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{0, 2, -2, 300, -300, i64max, i64min, 0, i64max, i64min, 255});
  }
  // fill_ and item use the same rule.
  Tensor i8 = zeros({2}, TensorOptions().dtype(kInt8));
  i8.fill_(1000.0);
  CHECK(i8.to_vector<std::int8_t>() == std::vector<std::int8_t>{127, 127});
  i8.fill_(nan);
  CHECK(i8.to_vector<std::int8_t>() == std::vector<std::int8_t>{0, 0});
  CHECK(scalar_tensor(-1e20).item<std::int32_t>() == std::numeric_limits<std::int32_t>::min());
  Tensor i16 = zeros({3}, TensorOptions().dtype(kInt16));
  i16.fill_(-40000.0);
  CHECK(i16.to_vector<std::int16_t>() == std::vector<std::int16_t>(3, -32768));
  i16.fill_(1234.9);
  CHECK(i16.to_vector<std::int16_t>() == std::vector<std::int16_t>(3, 1234));
  CHECK(scalar_tensor(1e9).item<std::int16_t>() == 32767);
  CHECK(scalar_tensor(-7.9).item<std::int16_t>() == -7);
}

TEST_CASE("int -> narrower int wraps as in PyTorch; int64 -> float rounds", "[core][dtype]") {
  Tensor x = from_vector(std::vector<std::int64_t>{300, -1, -129, 70000, (1LL << 40) + 5});
  CHECK(x.to(kInt8).to_vector<std::int8_t>() == std::vector<std::int8_t>{44, -1, 127, 112, 5});
  CHECK(x.to(kUInt8).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{44, 255, 127, 112, 5});
  CHECK(x.to(kInt16).to_vector<std::int16_t>() ==
        std::vector<std::int16_t>{300, -1, -129, 4464, 5});
  CHECK(x.to(kInt32).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{300, -1, -129, 70000, 5});
  Tensor big = from_vector(std::vector<std::int64_t>{(1LL << 53) + 1});
  CHECK(big.to(kFloat64).item<double>() == 9007199254740992.0);
  CHECK(big.to(kFloat32).item<float>() == 9007199254740992.0f);
  Tensor d = from_vector(std::vector<double>{0.1, 1.0 / 3.0});
  CHECK(d.to(kFloat32).to_vector<float>() == std::vector<float>{0.1f, 1.0f / 3.0f});
}

TEST_CASE("int16 conversions match PyTorch's .to()", "[core][dtype]") {
  using qgrad_test::load_fixture;
  // Into int16: in-range floats truncate toward zero, wider ints wrap.
  for (const char* src : {"f64", "f32", "i64", "i32"}) {
    INFO(src);
    const Tensor x = load_fixture("core", std::string("cast_src_") + src);
    const Tensor want = load_fixture("core", std::string("cast_") + src + "_to_i16");
    REQUIRE(want.dtype() == kInt16);
    const Tensor got = x.to(kInt16);
    CHECK(got.dtype() == kInt16);
    CHECK(got.to_vector<std::int16_t>() == want.to_vector<std::int16_t>());
    // The same through copy_ into a strided int16 view, and from a reversed (strided) source.
    Tensor dst = zeros({2, x.numel()}, TensorOptions().dtype(kInt16));
    dst.select(0, 1).copy_(x);
    CHECK(dst.select(0, 1).to_vector<std::int16_t>() == want.to_vector<std::int16_t>());
    CHECK(dst.select(0, 0).to_vector<std::int16_t>() ==
          std::vector<std::int16_t>(static_cast<std::size_t>(x.numel()), 0));
  }
  // Out of int16: narrower ints wrap, wider ints and floats are exact.
  const Tensor i16 = load_fixture("core", "cast_src_i16");
  REQUIRE(i16.dtype() == kInt16);
  for (const char* dst : {"i8", "u8", "i32", "i64", "f32", "f64"}) {
    INFO(dst);
    const Tensor want = load_fixture("core", std::string("cast_i16_to_") + dst);
    const Tensor got = i16.to(want.dtype());
    CHECK(got.dtype() == want.dtype());
    CHECK(got.to_vector<double>() == want.to_vector<double>());
    CHECK(i16.view({1, i16.numel()}).t().to(want.dtype()).to_vector<double>() ==
          want.to_vector<double>());
  }
  // A large (multi-threaded) strided conversion checked element by element.
  Tensor big = arange(0.0, 200000.0, 1.0, TensorOptions().dtype(kInt32)).view({400, 500}).t();
  const std::vector<std::int16_t> b16 = big.to(kInt16).to_vector<std::int16_t>();
  bool ok = b16.size() == 200000;
  for (std::int64_t i = 0; i < 500 && ok; ++i)
    for (std::int64_t j = 0; j < 400 && ok; ++j)
      ok = b16[static_cast<std::size_t>(i * 400 + j)] == static_cast<std::int16_t>(j * 500 + i);
  CHECK(ok);
}

TEST_CASE("int16 elementwise ops and reductions match PyTorch", "[core][dtype]") {
  using qgrad_test::load_fixture;
  const Tensor a = load_fixture("core", "i16op_a"), b = load_fixture("core", "i16op_b");
  REQUIRE(a.dtype() == kInt16);
  auto same = [](const Tensor& got, const char* name) {
    INFO(name);
    const Tensor want = load_fixture("core", std::string("i16op_") + name);
    CHECK(got.dtype() == want.dtype());
    CHECK(got.shape() == want.shape());
    CHECK(got.to_vector<double>() == want.to_vector<double>());
  };
  same(add(a, b), "add");
  same(sub(a, b), "sub");
  same(mul(a, b), "mul");
  same(neg(a), "neg");
  same(abs(a), "abs");
  same(lt(a, b), "lt");
  same(maximum(a, b), "max");
  same(sum(a), "sum");
  same(amax(a), "amax");
  same(div(a, b), "div");
  same(add(load_fixture("core", "i16op_i8"), load_fixture("core", "i16op_u8")), "i8_plus_u8");
  same(pow(a, 2.0), "pow");
  same(add(a, from_vector<std::int32_t>({70000})), "plus_i32");
  // Reductions over a dim, padding and concatenation of an int16 matrix.
  const Tensor m = load_fixture("core", "i16op_m");
  REQUIRE(m.dtype() == kInt16);
  same(sum(m, {0}), "m_sum0");
  same(amax(m, {1}), "m_amax1");
  const auto mn = min(m, 0);
  same(mn.first, "m_min0_values");
  same(mn.second, "m_min0_indices");
  same(argmax(m, 1), "m_argmax1");
  same(pad(m, {1, 2}, "constant", -9), "m_pad");
  same(concat({m, m.slice(0, 0, 1)}, 0), "m_cat0");
  // The same reductions of a transposed (non-contiguous) view.
  CHECK(sum(m.t(), {1}).to_vector<std::int64_t>() ==
        load_fixture("core", "i16op_m_sum0").to_vector<std::int64_t>());
  // Scalar operands keep int16 (an integral scalar does not promote), as in PyTorch.
  CHECK(add(a, 1.0).dtype() == kInt16);
  CHECK(mul(a, 2.5).dtype() == kFloat32);
  // where / clamp / broadcasting / contiguous on int16.
  Tensor c = clamp(a, -10, 10);
  CHECK(c.dtype() == kInt16);
  CHECK(c.to_vector<std::int16_t>() == std::vector<std::int16_t>{10, -10, 10, -7, 0, 10});
  Tensor w = where(gt(a, b), a, b);
  CHECK(w.to_vector<std::int16_t>() == maximum(a, b).to_vector<std::int16_t>());
  Tensor col = a.view({6, 1});
  CHECK(add(col, b.view({1, 6})).shape() == Shape{6, 6});
  CHECK(add(col, b.view({1, 6})).t().contiguous().to_vector<std::int16_t>()[1] ==
        static_cast<std::int16_t>(-32768 + 1));
}

TEST_CASE("item and to_vector", "[core][dtype]") {
  for (DType d : kAll) {
    INFO(dtype_name(d));
    Tensor s = scalar_tensor(5, TensorOptions().dtype(d));
    CHECK(s.item<double>() == 5.0);
    CHECK(s.item<float>() == 5.0f);
    CHECK(s.item<std::int64_t>() == 5);
    CHECK(s.item<int>() == 5);
    CHECK(s.item() == 5.0);
    CHECK(s.item_double() == 5.0);
    Tensor one = full({1, 1, 1}, 3, TensorOptions().dtype(d));
    CHECK(one.item<std::int8_t>() == 3);
  }
  // Exact for int64 beyond 2^53, where a detour through double would round.
  const std::int64_t big = (1LL << 62) + 1;
  Tensor b = from_vector(std::vector<std::int64_t>{big});
  CHECK(b.item<std::int64_t>() == big);
  CHECK(b.to_vector<std::int64_t>() == std::vector<std::int64_t>{big});
  // item of a float with a non-dtype type (size_t, bool) goes through double.
  CHECK(scalar_tensor(3.0).item<std::size_t>() == 3u);
  CHECK(scalar_tensor(1.0).item<bool>());
  CHECK(scalar_tensor(2.75).item<std::int32_t>() == 2);
  CHECK(scalar_tensor(std::nan("")).item<std::int64_t>() == 0);
  // Element selected from a view.
  Tensor m = qgrad::testing::iota({3, 4});
  CHECK(m.t().select(0, 2).select(0, 1).item<double>() == 6.0);

  CHECK_THROWS_AS(zeros({2}).item(), ValueError);
  CHECK_THROWS_WITH(zeros({2, 3}).item<float>(),
                    Catch::Contains("item") && Catch::Contains("[2, 3]"));
  CHECK_THROWS_AS(zeros({0}).item<std::int64_t>(), ValueError);
  CHECK_THROWS_AS(zeros({2}).data_ptr<double>(), DTypeError);
  CHECK_THROWS_WITH(zeros({2}).data_ptr<std::int32_t>(), Catch::Contains("data_ptr") &&
                                                             Catch::Contains("int32") &&
                                                             Catch::Contains("float32"));

  Tensor u8 = from_vector(std::vector<std::uint8_t>{0, 200, 255});
  CHECK(u8.to_vector<double>() == std::vector<double>{0, 200, 255});
  CHECK(u8.to_vector<std::int8_t>() == std::vector<std::int8_t>{0, -56, -1});
  CHECK(zeros({0, 3}).to_vector<float>().empty());
}

TEST_CASE("Device::parse, str and equality", "[core][device]") {
  CHECK(Device::parse("cpu") == kCPU);
  CHECK(Device::parse("cpu").is_cpu());
  CHECK(Device::parse("cuda") == kCUDA);
  CHECK(Device::parse("cuda").index == 0);
  Device d3 = Device::parse("cuda:3");
  CHECK(d3.is_cuda());
  CHECK(d3.index == 3);
  CHECK(d3.str() == "cuda:3");
  CHECK(Device::parse("cuda:12").index == 12);
  CHECK(kCPU.str() == "cpu");
  CHECK(kCUDA.str() == "cuda:0");
  CHECK(Device(DeviceType::CUDA, 1) != Device(DeviceType::CUDA, 2));
  CHECK(Device(DeviceType::CPU, 0) == Device(DeviceType::CPU, 5));  // CPU has one device
  for (const char* bad : {"gpu", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda: 1", "cuda:+1",
                          "cuda:1x", "cuda1", "", "cuda:99999999999"}) {
    INFO(bad);
    CHECK_THROWS_AS(Device::parse(bad), ValueError);
    CHECK_THROWS_WITH(Device::parse(bad), Catch::Contains("Device::parse"));
  }
}

#ifndef QGRAD_WITH_CUDA
TEST_CASE("CUDA tensors in a CPU-only build throw DeviceError naming the op", "[core][device]") {
  CHECK_FALSE(cuda_is_available());
  CHECK(cuda_device_count() == 0);
  CHECK_THROWS_AS(empty({2}, TensorOptions().device(kCUDA)), DeviceError);
  CHECK_THROWS_WITH(zeros({2}, TensorOptions().device(kCUDA)),
                    Catch::Contains("cuda:0") && Catch::Contains("CUDA support"));
  CHECK_THROWS_AS(ones({2}).to(kCUDA), DeviceError);
  CHECK_THROWS_WITH(ones({2}).to(Device::parse("cuda:1")),
                    Catch::StartsWith("to:") && Catch::Contains("cuda:1"));
  CHECK_THROWS_AS(from_vector(std::vector<float>{1, 2}, {-1}, TensorOptions().device(kCUDA)),
                  DeviceError);
  Generator gen(0);
  CHECK_THROWS_AS(rand({3}, gen, TensorOptions().device(kCUDA)), DeviceError);
  CHECK_THROWS_AS(check_device_available("myop", kCUDA), DeviceError);
  CHECK_NOTHROW(check_device_available("myop", kCPU));
  CHECK(ones({2}).to(kCPU).device() == kCPU);
  CHECK_THROWS_WITH(host_waits(kCUDA), Catch::StartsWith("host_waits:"));
}
#endif

TEST_CASE("host_waits: the CPU never waits", "[core][device]") {
  CHECK(host_waits(kCPU) == 0);
  (void)(ones({3}) * 2.0).to_vector<float>();
  synchronize(kCPU);
  CHECK(host_waits(kCPU) == 0);
  CHECK_THROWS_AS(host_waits(Device(DeviceType::CUDA, cuda_device_count())), DeviceError);
}
