// Storage and the CPU allocator: 64-byte aligned data, byte counters (current and peak) that
// follow tensor lifetimes, views sharing one storage and its version counter.
#include <catch2/catch.hpp>

#include <cstdint>

#include "tensor_testing.h"

using namespace qgrad;

TEST_CASE("CPU allocations are 64-byte aligned and counted", "[core][storage]") {
  const AllocatorStats before = allocator_stats(kCPU);
  {
    Tensor a = empty({1000}, TensorOptions().dtype(kFloat64));
    CHECK(reinterpret_cast<std::uintptr_t>(a.raw_data()) % kCpuAlignment == 0);
    CHECK(a.impl()->storage->nbytes() == 8000);
    CHECK(allocator_stats(kCPU).current_bytes == before.current_bytes + 8000);
    Tensor v = a.view({10, 100}).t();  // views allocate nothing
    CHECK(allocator_stats(kCPU).current_bytes == before.current_bytes + 8000);
    Tensor b = empty({3}, TensorOptions().dtype(kInt8));
    CHECK(reinterpret_cast<std::uintptr_t>(b.raw_data()) % kCpuAlignment == 0);
    CHECK(allocator_stats(kCPU).current_bytes == before.current_bytes + 8003);
    CHECK(allocator_stats(kCPU).peak_bytes >= before.current_bytes + 8003);
  }
  CHECK(allocator_stats(kCPU).current_bytes == before.current_bytes);
  reset_peak_bytes(kCPU);
  CHECK(allocator_stats(kCPU).peak_bytes == allocator_stats(kCPU).current_bytes);
  {
    Tensor big = empty({1 << 20});
    (void)big;
  }
  CHECK(allocator_stats(kCPU).peak_bytes >= allocator_stats(kCPU).current_bytes + (4u << 20));
  // Zero-byte tensors have no data pointer and count nothing.
  Tensor e = empty({0, 7});
  CHECK(e.raw_data() == nullptr);
  CHECK(e.impl()->storage->nbytes() == 0);
}

TEST_CASE("views share storage, offset and the version counter", "[core][storage]") {
  Tensor x = qgrad::testing::iota({4, 5});
  Tensor v = x.slice(0, 1, 3).select(1, 2);
  CHECK(v.impl()->storage == x.impl()->storage);
  CHECK(v.storage_offset() == 7);
  CHECK(v.raw_data() == static_cast<double*>(x.raw_data()) + 7);
  CHECK(v.version() == 0);
  v.fill_(1.0);
  CHECK(x.version() == 1);
  x.copy_(zeros({4, 5}));
  CHECK(v.version() == 2);
  x.bump_version();
  CHECK(v.version() == 3);
  // A copy has its own counter.
  Tensor c = x.clone();
  CHECK(c.version() == 0);
  CHECK(c.impl()->storage != x.impl()->storage);
}

TEST_CASE("the CPU block cache reuses large blocks and honours its limit", "[core][storage]") {
  empty_cpu_cache();
  REQUIRE(cpu_cached_bytes() == 0);
  const std::size_t live = allocator_stats(kCPU).current_bytes;
  void* first = nullptr;
  {
    Tensor a = empty({1 << 18});  // 1 MiB: cached when freed
    first = a.raw_data();
    CHECK(reinterpret_cast<std::uintptr_t>(first) % kCpuAlignment == 0);
  }
  const std::size_t cached = cpu_cached_bytes();
  CHECK(cached >= (std::size_t{1} << 20));
  CHECK(cached <= (std::size_t{1} << 20) * 5 / 4);     // bucket slack is at most 25%
  CHECK(allocator_stats(kCPU).current_bytes == live);  // cached blocks are not live bytes
  {
    // A slightly smaller request of the same bucket gets the cached block back.
    Tensor b = empty({(1 << 18) - 100});
    CHECK(b.raw_data() == first);
    CHECK(cpu_cached_bytes() == 0);
    CHECK(allocator_stats(kCPU).current_bytes == live + 4 * ((1 << 18) - 100));
    b.fill_(3.0);  // the reused block is fully writable
    CHECK(b.to_vector<float>().back() == 3.0f);
  }
  // Small blocks bypass the cache.
  const std::size_t before_small = cpu_cached_bytes();
  { Tensor s = empty({100}); }
  CHECK(cpu_cached_bytes() == before_small);
  empty_cpu_cache();
  CHECK(cpu_cached_bytes() == 0);
  // With a zero limit nothing is kept.
  set_cpu_cache_limit(0);
  { Tensor c = empty({1 << 20}); }
  CHECK(cpu_cached_bytes() == 0);
  set_cpu_cache_limit(std::size_t{4} << 30);  // the documented default
  { Tensor d = empty({1 << 20}); }
  CHECK(cpu_cached_bytes() >= (std::size_t{4} << 20));
  empty_cpu_cache();
}
