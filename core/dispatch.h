/// @file
/// Per-device kernel dispatch: every op reaches its kernels through a KernelTable (one kernel per
/// device type, with the dtypes it takes), all held by one KernelRegistry. The registry is built
/// once, on first use, by the registrars of the layers (register_core_kernels,
/// register_ops_kernels, ...), which the umbrella library at the top installs
/// (install_kernel_registrars): each layer
/// calls its families' `register_<family>_cpu_kernels` / `register_<family>_cuda_kernels`
/// explicitly, and core names no layer above it. An empty slot is a DeviceError naming the op and
/// the device, never a silent fallback; supports(op, device, dtype) answers without throwing
/// (ggml's supports_op). Tables are reached through typed keys declared beside their ops
/// (KernelTableKey), and the registry's catalogue of user-facing ops, which the cross-device test
/// iterates over, is collected from those keys as the tables are registered.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/kernel_table_key.h"
#include "core/tensor.h"

namespace qgrad {

inline constexpr std::size_t kDeviceTypeCount = 2;  ///< DeviceType::CPU, DeviceType::CUDA
/// "cpu" or "cuda".
const char* device_type_name(DeviceType t);

/// A set of dtypes, as a bit mask over DType's values.
class DTypeSet {
 public:
  /// The empty set.
  constexpr DTypeSet() = default;
  /// The set of `dtypes`.
  constexpr DTypeSet(std::initializer_list<DType> dtypes) {
    for (DType d : dtypes) bits_ |= bit(d);
  }
  /// True when `d` is in the set.
  constexpr bool contains(DType d) const { return (bits_ & bit(d)) != 0; }
  /// True when the set has no dtype.
  constexpr bool empty() const { return bits_ == 0; }
  std::string str() const;  ///< "{float32, float64}"

 private:
  static constexpr std::uint32_t bit(DType d) { return 1u << static_cast<unsigned>(d); }
  std::uint32_t bits_ = 0;
};

/// float32 and float64.
inline constexpr DTypeSet kFloatingDTypes{kFloat32, kFloat64};
/// All seven dtypes.
inline constexpr DTypeSet kAllDTypes{kFloat32, kFloat64, kInt8, kUInt8, kInt16, kInt32, kInt64};

/// The type-independent face of a KernelTable (what supports() and the error messages need).
class KernelTableBase {
 public:
  /// A table named `name`, with no kernels yet.
  explicit KernelTableBase(std::string name) : name_(std::move(name)) {}
  virtual ~KernelTableBase() = default;
  KernelTableBase(const KernelTableBase&) = delete;
  KernelTableBase& operator=(const KernelTableBase&) = delete;

  /// The table's name (its key's name).
  const std::string& name() const { return name_; }
  /// True when `device` has a kernel that takes `dtype`.
  bool supports(DeviceType device, DType dtype) const {
    return has_kernel(device) && dtypes_[slot(device)].contains(dtype);
  }
  /// True when `device` has a kernel.
  bool has_kernel(DeviceType device) const { return defined_[slot(device)]; }
  /// The dtypes the kernel of `device` takes (empty without a kernel).
  DTypeSet dtypes(DeviceType device) const { return dtypes_[slot(device)]; }

 protected:
  /// The array index of device type `d`.
  static std::size_t slot(DeviceType d) { return static_cast<std::size_t>(d); }
  /// The error for a call with no kernel: names the op, the device, the dtype and the shape.
  [[noreturn]] void throw_unsupported(const char* op, const Tensor& t) const;
  /// The error for a call on a device with no kernel: names the op and the device.
  [[noreturn]] void throw_no_device(const char* op, Device device) const;
  /// Records that `device` has a kernel taking `dtypes`.
  void mark(DeviceType device, DTypeSet dtypes);

 private:
  std::string name_;
  std::array<bool, kDeviceTypeCount> defined_{};
  std::array<DTypeSet, kDeviceTypeCount> dtypes_{};
};

/// One kernel signature `Fn` (a function type), one kernel per device type.
template <typename Fn>
class KernelTable final : public KernelTableBase {
 public:
  /// Inherits the constructor: a table named `name`, with no kernels yet.
  using KernelTableBase::KernelTableBase;

  /// Called by the register functions only, while the registry is being built.
  void define(DeviceType device, Fn* kernel, DTypeSet dtypes) {
    QGRAD_CHECK(kernel != nullptr && !has_kernel(device), Error, "kernel table '", name(),
                "': ", kernel ? "a second kernel" : "a null kernel", " registered for ",
                device_type_name(device));
    kernels_[slot(device)] = kernel;
    mark(device, dtypes);
  }
  /// The kernel for `t`'s device (and dtype); throws DeviceError naming `op` when there is none.
  Fn& operator()(const char* op, const Tensor& t) const {
    const DeviceType d = t.device().type;
    if (!supports(d, t.dtype())) throw_unsupported(op, t);
    return *kernels_[slot(d)];
  }
  /// The kernel for `device`, whatever the dtype (allocators, transfers); DeviceError when none.
  Fn& at(const char* op, Device device) const {
    if (!has_kernel(device.type)) throw_no_device(op, device);
    return *kernels_[slot(device.type)];
  }
  /// The kernel of `device`, or null when it has none.
  Fn* find(DeviceType device) const { return kernels_[slot(device)]; }

 private:
  std::array<Fn*, kDeviceTypeCount> kernels_{};
};

/// Every kernel table, by name, and every user-facing op with the tables it runs on (from the
/// tables' keys). Built once by the layers' registrars and read-only afterwards.
class KernelRegistry {
 public:
  /// The table of `key`, created on first use (registration only), which also adds the table to
  /// the catalogue entry of each op the key names. Throws when another key holds the name.
  template <typename Fn>
  KernelTable<Fn>& table(const KernelTableKey<Fn>& key) {
    auto it = tables_.find(key.name);
    if (it == tables_.end()) {
      it = tables_
               .emplace(std::string(key.name),
                        Entry{&key, std::make_unique<KernelTable<Fn>>(std::string(key.name))})
               .first;
      catalogue(key.name, key.ops);
    }
    check_key(it->second, &key, key.name);
    // The entry was made from this very key, so its table has this signature.
    return static_cast<KernelTable<Fn>&>(*it->second.table);
  }
  /// The table of `key` for dispatch; throws Error when it was never registered (a build problem).
  template <typename Fn>
  const KernelTable<Fn>& get(const KernelTableKey<Fn>& key) const {
    const Entry& e = entry(key.name);
    check_key(e, &key, key.name);
    return static_cast<const KernelTable<Fn>&>(*e.table);
  }

  /// Whether `op` has kernels for `device` and `dtype` (see the free function supports()).
  bool supports(std::string_view op, Device device, DType dtype) const;
  /// The names of the user-facing ops in the catalogue, sorted.
  std::vector<std::string> ops() const;
  /// The names of the tables that `op` runs on.
  std::vector<std::string> tables(std::string_view op) const;
  /// The names of all registered tables, sorted.
  std::vector<std::string> table_names() const;
  /// The table named `name`; throws Error when there is none.
  const KernelTableBase& find_table(std::string_view name) const;

 private:
  struct Entry {
    const void* key;  ///< the KernelTableKey the table was made from: its identity and signature
    std::unique_ptr<KernelTableBase> table;
  };
  const Entry& entry(std::string_view name) const;
  static void check_key(const Entry& e, const void* key, std::string_view name);
  void catalogue(std::string_view table, std::string_view ops);

  std::map<std::string, Entry, std::less<>> tables_;
  std::map<std::string, std::vector<std::string>, std::less<>> ops_;
};

/// The registry of every kernel in this build, built on first use (thread-safe).
const KernelRegistry& kernel_registry();

/// The table of `key`. Fronts keep the reference in a function-local static.
template <typename Fn>
const KernelTable<Fn>& kernel_table(const KernelTableKey<Fn>& key) {
  return kernel_registry().get(key);
}

/// Whether `op` (a name from kernel_registry().ops(), e.g. "conv2d") has kernels for `device` and
/// `dtype` in this build. Unknown op names give false.
bool supports(std::string_view op, Device device, DType dtype);

/// One layer's registration function: defines its kernel tables' kernels and declares its ops.
using KernelRegistrar = void (*)(KernelRegistry& registry);

/// core/'s own registrar (allocators, copies, transfers). The layers above define theirs
/// (register_ops_kernels in ops/register_kernels.cpp, and so on); core names none of them.
void register_core_kernels(KernelRegistry& registry);

/// Gives the registry the registrars of every layer, core's first, in the order they run. The
/// umbrella library (qgrad.cpp, which every user links through qgrad::qgrad) calls this once while
/// the program loads, so registration flows down from the top of the stack. A second call, or one
/// after the registry was built, is an Error.
void install_kernel_registrars(std::vector<KernelRegistrar> registrars);

}  // namespace qgrad
