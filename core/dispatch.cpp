// The kernel registry: built once, on first use, by the layers' registrars that the umbrella
// library installed; DTypeSet formatting and the errors for missing kernels.
#include "core/dispatch.h"

#include <algorithm>
#include <memory>
#include <mutex>

namespace qgrad {

const char* device_type_name(DeviceType t) {
  return t == DeviceType::CPU ? "cpu" : "cuda";
}

std::string DTypeSet::str() const {
  std::string s = "{";
  for (DType d : {kFloat32, kFloat64, kInt8, kUInt8, kInt16, kInt32, kInt64}) {
    if (!contains(d)) continue;
    if (s.size() > 1) s += ", ";
    s += dtype_name(d);
  }
  return s + "}";
}

void KernelTableBase::mark(DeviceType device, DTypeSet dtypes) {
  defined_[slot(device)] = true;
  dtypes_[slot(device)] = dtypes;
}

void KernelTableBase::throw_unsupported(const char* op, const Tensor& t) const {
  const DeviceType d = t.device().type;
  if (!has_kernel(d))
    throw DeviceError(detail::concat(op, ": no ", device_type_name(d), " kernel in this build (",
                                     dtype_name(t.dtype()), " tensor of shape ", t.shape(), " on ",
                                     t.device(), "); move the tensor to a device that has one"));
  throw DTypeError(detail::concat(op, ": the ", device_type_name(d), " kernel takes ",
                                  dtypes_[slot(d)].str(), ", got ", dtype_name(t.dtype()),
                                  " (tensor of shape ", t.shape(), ")"));
}

void KernelTableBase::throw_no_device(const char* op, Device device) const {
  throw DeviceError(detail::concat(op, ": no ", device_type_name(device.type),
                                   " kernel in this build (device ", device, ")"));
}

void KernelRegistry::catalogue(std::string_view table, std::string_view ops) {
  for (std::size_t begin = 0; begin < ops.size();) {
    const std::size_t end = std::min(ops.find(' ', begin), ops.size());
    if (end > begin) ops_[std::string(ops.substr(begin, end - begin))].emplace_back(table);
    begin = end + 1;
  }
}

const KernelRegistry::Entry& KernelRegistry::entry(std::string_view name) const {
  auto it = tables_.find(name);
  QGRAD_CHECK(it != tables_.end(), Error, "kernel table '", name,
              "' was never registered (its family's register function is missing)");
  return it->second;
}

void KernelRegistry::check_key(const Entry& e, const void* key, std::string_view name) {
  QGRAD_CHECK(e.key == key, Error, "kernel table '", name,
              "' is registered with another key (another signature, or the table declared twice)");
}

const KernelTableBase& KernelRegistry::find_table(std::string_view name) const {
  return *entry(name).table;
}

bool KernelRegistry::supports(std::string_view op, Device device, DType dtype) const {
  auto it = ops_.find(op);
  if (it == ops_.end()) return false;
  for (const std::string& t : it->second)
    if (!find_table(t).supports(device.type, dtype)) return false;
  return true;
}

std::vector<std::string> KernelRegistry::ops() const {
  std::vector<std::string> out;
  for (const auto& [name, tables] : ops_) out.push_back(name);
  return out;
}

std::vector<std::string> KernelRegistry::tables(std::string_view op) const {
  auto it = ops_.find(op);
  return it == ops_.end() ? std::vector<std::string>{} : it->second;
}

std::vector<std::string> KernelRegistry::table_names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : tables_) out.push_back(name);
  return out;
}

namespace {

// The registrars installed by the umbrella library (none yet: empty), and whether the registry
// was built from them.
// Written once while the program loads (install_kernel_registrars), read once when the registry
// is built: the registry's configuration, not state that changes while it is in use.
struct Registrars {
  std::mutex mutex;
  std::vector<KernelRegistrar> list;
  bool used = false;
};

Registrars& registrars() {
  static Registrars& r = *new Registrars;  // immortal, like the registry it builds
  return r;
}

}  // namespace

void install_kernel_registrars(std::vector<KernelRegistrar> list) {
  Registrars& r = registrars();
  std::lock_guard<std::mutex> lock(r.mutex);
  QGRAD_CHECK(
      r.list.empty() && !r.used, Error, "install_kernel_registrars: ",
      r.used ? "the kernel registry is already built" : "the registrars are installed twice");
  QGRAD_CHECK(!list.empty(), Error, "install_kernel_registrars: no registrars given");
  r.list = std::move(list);
}

const KernelRegistry& kernel_registry() {
  // Built on first use (thread-safe by the static's initialisation), then read-only: this is the
  // "explicit cache" of the build's kernels, not mutable state. Immortal, like the CPU block
  // cache: tensors owned by static objects may allocate or copy during static destruction.
  static const KernelRegistry& registry = *[] {
    Registrars& r = registrars();
    std::lock_guard<std::mutex> lock(r.mutex);
    QGRAD_CHECK(!r.list.empty(), Error,
                "kernel registry: no kernels registered. qgrad's layers are registered by the "
                "umbrella library that qgrad::qgrad links (qgrad.cpp); link it rather than the "
                "layer libraries alone, and use no qgrad tensor before main()");
    r.used = true;
    auto registry = std::make_unique<KernelRegistry>();
    for (KernelRegistrar registrar : r.list) registrar(*registry);
    return registry.release();
  }();
  return registry;
}

bool supports(std::string_view op, Device device, DType dtype) {
  return kernel_registry().supports(op, device, dtype);
}

}  // namespace qgrad
