// The CPU allocator's reuse cache for large blocks: reuse of a freed block of the same bucket,
// small blocks never cached, the byte limit, and empty_cpu_cache().
#include <catch2/catch.hpp>

#include <cstdint>

#include "core/allocator.h"

using namespace qgrad;

TEST_CASE("CPU allocator reuses freed large blocks and respects its limit", "[allocator]") {
  empty_cpu_cache();
  REQUIRE(cpu_cached_bytes() == 0);
  void* first = nullptr;
  {
    DataPtr a = allocate(std::size_t{1} << 20, kCPU);
    first = a.get();
    REQUIRE(reinterpret_cast<std::uintptr_t>(first) % kCpuAlignment == 0);
  }
  REQUIRE(cpu_cached_bytes() == (std::size_t{1} << 20));
  {
    // Same bucket (1 MiB, 4 steps per power of two): the freed block comes back.
    DataPtr b = allocate((std::size_t{1} << 20) - 100, kCPU);
    REQUIRE(b.get() == first);
    REQUIRE(cpu_cached_bytes() == 0);
    DataPtr c = allocate(std::size_t{1} << 20, kCPU);  // the block is in use: a new one
    REQUIRE(c.get() != first);
  }
  {
    DataPtr small = allocate(100, kCPU);  // small blocks are never served from the cache
    REQUIRE(small.get() != first);
  }
  const std::size_t before = cpu_cached_bytes();
  { DataPtr small = allocate(1000, kCPU); }
  REQUIRE(cpu_cached_bytes() == before);  // ... nor kept in it

  // Counters track live bytes, not cached ones.
  const std::size_t live = allocator_stats(kCPU).current_bytes;
  {
    DataPtr d = allocate(std::size_t{3} << 20, kCPU);
    REQUIRE(allocator_stats(kCPU).current_bytes == live + (std::size_t{3} << 20));
  }
  REQUIRE(allocator_stats(kCPU).current_bytes == live);

  // Above the limit, freed blocks go back to the system.
  set_cpu_cache_limit(std::size_t{2} << 20);
  empty_cpu_cache();
  {
    DataPtr e = allocate(std::size_t{1} << 20, kCPU);
    DataPtr f = allocate(std::size_t{1} << 20, kCPU);
    DataPtr g = allocate(std::size_t{1} << 20, kCPU);
  }
  REQUIRE(cpu_cached_bytes() <= (std::size_t{2} << 20));
  set_cpu_cache_limit(std::size_t{4} << 30);
  empty_cpu_cache();
  REQUIRE(cpu_cached_bytes() == 0);
}
