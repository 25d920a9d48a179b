/// @file
/// Device: where a tensor's bytes live (CPU, or a CUDA device by index). Part of every Tensor.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace qgrad {

/// The kinds of device a tensor can live on.
enum class DeviceType { CPU, CUDA };

/// A device: its type and, for CUDA, the device index.
struct Device {
  DeviceType type = DeviceType::CPU;  ///< CPU or CUDA
  int index = 0;                      ///< the CUDA device index (ignored for the CPU)

  /// The CPU.
  constexpr Device() = default;
  /// Device `i` of type `t` (implicit, so a DeviceType converts).
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}  // NOLINT: implicit by design
  /// Parses "cpu", "cuda", "cuda:1".
  static Device parse(const std::string& s);

  /// True for the CPU.
  bool is_cpu() const { return type == DeviceType::CPU; }
  /// True for a CUDA device.
  bool is_cuda() const { return type == DeviceType::CUDA; }
  /// "cpu" or "cuda:N".
  std::string str() const;
  friend bool operator==(const Device& a, const Device& b) {
    return a.type == b.type && (a.type == DeviceType::CPU || a.index == b.index);
  }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
  friend std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }
};

/// The CPU device.
inline constexpr Device kCPU{DeviceType::CPU, 0};
/// CUDA device 0.
inline constexpr Device kCUDA{DeviceType::CUDA, 0};

/// True when this build has CUDA support and at least one device is visible.
bool cuda_is_available();
/// The number of visible CUDA devices (0 in a CPU-only build).
int cuda_device_count();
/// Throws DeviceError naming `op` when `device` cannot hold tensors here: a CUDA device in a
/// CPU-only build, or a CUDA index beyond the visible devices.
void check_device_available(const char* op, Device device);
/// Waits until every operation queued on `device` has finished (torch.cuda.synchronize): for
/// timing, or before the host reads memory written by the device outside qgrad. A no-op for the
/// CPU, whose kernels finish before they return.
void synchronize(Device device);
/// How many times the host has waited for `device` since the process started (every copy to the
/// host, item(), synchronize): what a test counts to show a hot path makes the host wait nowhere.
/// Always 0 for the CPU, which has nothing to wait for.
std::int64_t host_waits(Device device);

}  // namespace qgrad
