// The caching CUDA allocator (core/allocator_cuda.cu), through the public allocate/stats API:
// size classes and block reuse without growth of the reserved bytes, the statistics,
// empty_cache(), the out-of-memory error (after emptying the cache and retrying), a bad device
// index, and a reused block seeing only work queued after its previous use (the single stream).
// Part of test_gpu (tests/gpu_main.cpp): skipped, exit 77, without a visible CUDA device.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/device.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/tensor.h"

using namespace qgrad;

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;
}  // namespace

TEST_CASE("CUDA allocator reuses freed blocks by size class and keeps statistics",
          "[cuda][allocator]") {
  empty_cache(kCUDA);
  const AllocatorStats start = allocator_stats(kCUDA);
  REQUIRE(start.reserved_bytes == start.current_bytes);  // nothing cached after empty_cache

  void* first = nullptr;
  {
    DataPtr a = allocate(1000, kCUDA);  // a small request: rounded up to 1024 (512 B classes)
    first = a.get();
    REQUIRE(first != nullptr);
    const AllocatorStats s = allocator_stats(kCUDA);
    CHECK(s.current_bytes == start.current_bytes + 1000);
    CHECK(s.reserved_bytes == start.reserved_bytes + 1024);
    CHECK(s.peak_bytes >= s.current_bytes);
  }
  // Freed: no longer allocated, still reserved (cached for reuse).
  CHECK(allocator_stats(kCUDA).current_bytes == start.current_bytes);
  CHECK(allocator_stats(kCUDA).reserved_bytes == start.reserved_bytes + 1024);
  {
    DataPtr b = allocate(600, kCUDA);  // the same class (1024): the cached block comes back
    CHECK(b.get() == first);
    CHECK(allocator_stats(kCUDA).reserved_bytes == start.reserved_bytes + 1024);
    DataPtr c = allocate(1000, kCUDA);  // the block is in use: a new one
    CHECK(c.get() != first);
    CHECK(allocator_stats(kCUDA).reserved_bytes == start.reserved_bytes + 2048);
  }

  // Large requests round up to 2 MiB multiples; a repeated allocate/free cycle does not grow.
  for (int step = 0; step < 5; ++step) {
    DataPtr big = allocate(3 * kMiB + 1, kCUDA);
    CHECK(allocator_stats(kCUDA).current_bytes == start.current_bytes + 3 * kMiB + 1);
    CHECK(allocator_stats(kCUDA).reserved_bytes == start.reserved_bytes + 2048 + 4 * kMiB);
  }
  CHECK(allocator_stats(kCUDA).peak_bytes >= start.current_bytes + 3 * kMiB + 1);
  reset_peak_bytes(kCUDA);
  CHECK(allocator_stats(kCUDA).peak_bytes == allocator_stats(kCUDA).current_bytes);

  // empty_cache gives every cached block back; live blocks stay.
  DataPtr live = allocate(5000, kCUDA);
  empty_cache(kCUDA);
  const AllocatorStats after = allocator_stats(kCUDA);
  CHECK(after.current_bytes == start.current_bytes + 5000);
  CHECK(after.reserved_bytes == start.reserved_bytes + 5120);
  live.reset();
  empty_cache(kCUDA);
  CHECK(allocator_stats(kCUDA).reserved_bytes == start.reserved_bytes);
  // Zero bytes: no block at all.
  CHECK(allocate(0, kCUDA).get() == nullptr);
}

TEST_CASE(
    "CUDA allocator: out of memory names the request and the device, after emptying the "
    "cache",
    "[cuda][allocator]") {
  { DataPtr cached = allocate(kMiB, kCUDA); }
  const std::size_t huge = std::size_t{1} << 50;  // 1 PiB: more than any GPU has
  try {
    DataPtr p = allocate(huge, kCUDA);
    FAIL("allocating 1 PiB on a GPU succeeded");
  } catch (const DeviceError& e) {
    FAIL(std::string("a DeviceError instead of the out-of-memory Error: ") + e.what());
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains(std::to_string(huge)));
    CHECK_THAT(what, Catch::Contains("cuda:0"));
    CHECK_THAT(what, Catch::Contains("allocated"));
    CHECK_THAT(what, Catch::Contains("reserved"));
  }
  // The retry emptied the cache.
  const AllocatorStats s = allocator_stats(kCUDA);
  CHECK(s.reserved_bytes == s.current_bytes);
  // And the allocator still works.
  DataPtr ok = allocate(kMiB, kCUDA);
  CHECK(ok.get() != nullptr);
}

TEST_CASE("CUDA allocator: a device index that is not visible is a DeviceError naming it",
          "[cuda][allocator]") {
  const int count = cuda_device_count();
  REQUIRE(count > 0);
  for (int bad : {count, count + 7, -1}) {
    try {
      DataPtr p = allocate(16, Device(DeviceType::CUDA, bad));
      FAIL("allocated on CUDA device " << bad << " of " << count);
    } catch (const DeviceError& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains(std::to_string(bad)));
      CHECK_THAT(what, Catch::Contains(std::to_string(count) + " CUDA device(s) visible"));
    }
  }
}

TEST_CASE("CUDA allocator: a reused block only sees work queued after its last use",
          "[cuda][allocator][copy]") {
  constexpr std::int64_t n = std::int64_t{1} << 22;  // 16 MiB of float32: the fills take a while
  const auto filled = [](float v) { return std::vector<float>(static_cast<std::size_t>(n), v); };
  // Freed while its fill may still be queued; the block is reused at once for another fill,
  // which the single stream orders after the first: the second value wins.
  void* block = nullptr;
  {
    Tensor a = full({n}, 1.0, TensorOptions().device(kCUDA));
    block = a.data_ptr<float>();
  }
  Tensor b = empty({n}, TensorOptions().device(kCUDA));
  CHECK(static_cast<void*>(b.data_ptr<float>()) == block);
  b.fill_(2.0);
  Tensor c = full({n}, 3.0, TensorOptions().device(kCUDA));
  CHECK(b.to(kCPU).to_vector<float>() == filled(2.0f));
  CHECK(c.to(kCPU).to_vector<float>() == filled(3.0f));
  CHECK(full({n}, 1.0, TensorOptions().device(kCUDA)).to(kCPU).to_vector<float>() == filled(1.0f));
  // Host -> device -> host round trips, a device-to-device copy, and an empty tensor.
  Tensor ints = from_vector(std::vector<std::int64_t>{-5, 0, 7, std::int64_t{1} << 40});
  CHECK(ints.to(kCUDA).to(kCPU).to_vector<std::int64_t>() == ints.to_vector<std::int64_t>());
  Tensor bytes = from_vector(std::vector<std::uint8_t>{0, 1, 255});
  CHECK(bytes.to(kCUDA).clone().to(kCPU).to_vector<std::uint8_t>() ==
        bytes.to_vector<std::uint8_t>());
  Tensor none = zeros({0, 3}, TensorOptions().device(kCUDA));
  none.fill_(1.0);
  CHECK(none.to(kCPU).numel() == 0);
}
