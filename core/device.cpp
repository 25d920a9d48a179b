// Device parsing/printing, and CUDA availability queries (false in CPU-only builds).
#include "core/device.h"

#include "core/error.h"

#ifdef QGRAD_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace qgrad {

Device Device::parse(const std::string& s) {
  if (s == "cpu") return kCPU;
  if (s.rfind("cuda", 0) == 0) {
    if (s == "cuda") return kCUDA;
    if (s.size() > 5 && s[4] == ':') {
      try {
        std::size_t used = 0;
        int idx = std::stoi(s.substr(5), &used);
        if (used == s.size() - 5 && idx >= 0) return Device(DeviceType::CUDA, idx);
      } catch (const std::exception&) {
      }
    }
  }
  throw ValueError("Device::parse: expected 'cpu', 'cuda' or 'cuda:N', got '" + s + "'");
}

std::string Device::str() const {
  return is_cpu() ? "cpu" : "cuda:" + std::to_string(index);
}

int cuda_device_count() {
#ifdef QGRAD_WITH_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls are not confused
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

bool cuda_is_available() {
  return cuda_device_count() > 0;
}

}  // namespace qgrad
