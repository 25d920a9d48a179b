// The CPU's parameter check (parameter_check_kernels.h): the values read on the host, the first
// unusable one a ValueError.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "quant/parameter_check_kernels.h"

namespace qgrad::quant {

namespace {

void check_parameter_cpu(const char* op, CheckedParameter which, ParameterRule rule,
                         const Tensor& values) {
  const std::vector<double> v = values.to_vector<double>();
  for (std::size_t i = 0; i < v.size(); ++i)
    QGRAD_CHECK(parameter_usable(v[i], rule), ValueError, op, ": ", checked_parameter_name(which),
                v.size() > 1 ? "[" + std::to_string(i) + "]" : std::string(), " ",
                parameter_rule_text(rule), ", got ", v[i]);
}

}  // namespace

void register_parameter_check_cpu_kernels(KernelRegistry& r) {
  r.table(kCheckParameterKernels).define(DeviceType::CPU, &check_parameter_cpu, kFloatingDTypes);
}

}  // namespace qgrad::quant
