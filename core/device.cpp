// Device parsing/printing, and CUDA availability queries (false in CPU-only builds).
#include "core/device.h"

#include "core/error.h"

#ifdef QGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include "core/cuda_stream.h"
#endif

namespace qgrad {

Device Device::parse(const std::string& s) {
  if (s == "cpu") return kCPU;
  if (s == "cuda") return kCUDA;
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.size() <= 5 + 9) {
    // Digits only: std::stoi alone would accept " 1", "+1" or "1x".
    bool digits = true;
    for (std::size_t i = 5; i < s.size(); ++i) digits = digits && s[i] >= '0' && s[i] <= '9';
    if (digits) return Device(DeviceType::CUDA, std::stoi(s.substr(5)));
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

void check_device_available(const char* op, Device device) {
  if (device.is_cpu()) return;
#ifdef QGRAD_WITH_CUDA
  const int n = cuda_device_count();
  QGRAD_CHECK(device.index >= 0 && device.index < n, DeviceError, op, ": device ", device,
              " requested but ", n, " CUDA device(s) are visible");
#else
  throw DeviceError(detail::concat(op, ": device ", device,
                                   " requested but this build of qgrad has no CUDA support "
                                   "(configured with QGRAD_CUDA=OFF or without a CUDA toolkit)"));
#endif
}

void synchronize(Device device) {
  check_device_available("synchronize", device);
#ifdef QGRAD_WITH_CUDA
  if (device.is_cuda()) cuda_stream_synchronize(device.index, "synchronize");
#endif
}

std::int64_t host_waits(Device device) {
  check_device_available("host_waits", device);
#ifdef QGRAD_WITH_CUDA
  if (device.is_cuda()) return cuda_host_waits(device.index);
#endif
  return 0;
}

}  // namespace qgrad
