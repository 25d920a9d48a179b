// CPU allocator (aligned operator new) with byte counters; CUDA allocations are forwarded to the
// CUDA allocator in ops/cuda when built with CUDA.
#include "core/allocator.h"

#include <atomic>
#include <new>

#include "core/error.h"

namespace qgrad {

namespace {
// Explicit counters, not state that changes behaviour: they only feed allocator_stats().
struct Counters {
  std::atomic<std::size_t> current{0};
  std::atomic<std::size_t> peak{0};
  void add(std::size_t n) {
    std::size_t now = current.fetch_add(n) + n;
    std::size_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
  }
  void sub(std::size_t n) { current.fetch_sub(n); }
};
Counters& cpu_counters() {
  static Counters c;
  return c;
}

// The size is stored in a header in front of the block so that the deleter (a plain function
// pointer) can update the counters.
void cpu_free(void* p) {
  if (!p) return;
  auto* base = static_cast<unsigned char*>(p) - kCpuAlignment;
  std::size_t n = *reinterpret_cast<std::size_t*>(base);
  cpu_counters().sub(n);
  ::operator delete(base, std::align_val_t(kCpuAlignment));
}
void noop_free(void*) {}
}  // namespace

#ifdef QGRAD_WITH_CUDA
DataPtr cuda_allocate(std::size_t nbytes, int device_index);  // core/allocator_cuda.cu
AllocatorStats cuda_allocator_stats(int device_index);
void cuda_reset_peak_bytes(int device_index);
#endif

DataPtr allocate(std::size_t nbytes, Device device) {
  if (device.is_cpu()) {
    if (nbytes == 0) return DataPtr(nullptr, noop_free);
    void* raw = nullptr;
    try {
      raw = ::operator new(nbytes + kCpuAlignment, std::align_val_t(kCpuAlignment));
    } catch (const std::bad_alloc&) {
      throw Error(detail::concat("allocate: out of CPU memory allocating ", nbytes, " bytes"));
    }
    *static_cast<std::size_t*>(raw) = nbytes;
    cpu_counters().add(nbytes);
    return DataPtr(static_cast<unsigned char*>(raw) + kCpuAlignment, cpu_free);
  }
#ifdef QGRAD_WITH_CUDA
  return cuda_allocate(nbytes, device.index);
#else
  throw DeviceError("allocate: device " + device.str() +
                    " requested but this build of qgrad has no CUDA support (QGRAD_CUDA=OFF)");
#endif
}

AllocatorStats allocator_stats(Device device) {
  if (device.is_cpu()) return {cpu_counters().current.load(), cpu_counters().peak.load()};
#ifdef QGRAD_WITH_CUDA
  return cuda_allocator_stats(device.index);
#else
  return {};
#endif
}

void reset_peak_bytes(Device device) {
  if (device.is_cpu()) {
    cpu_counters().peak.store(cpu_counters().current.load());
    return;
  }
#ifdef QGRAD_WITH_CUDA
  cuda_reset_peak_bytes(device.index);
#endif
}

}  // namespace qgrad
