// CPU kernel of torch.histc for HistogramObserver: one serial pass in element order over the
// batch at float32 precision, registered in the "observer.histc" table.
#include "quant/observer/histc_kernels.h"

namespace qgrad::ao {

namespace {

std::vector<float> histc_cpu(const Tensor& x, std::int64_t bins, float lo, float hi) {
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  std::vector<float> h(static_cast<std::size_t>(bins), 0.0f);
  const float nb = static_cast<float>(bins);
  const float width = hi - lo;
  for (float v : x.to_vector<float>()) {
    if (!(v >= lo && v <= hi)) continue;
    auto pos = static_cast<std::int64_t>((v - lo) * nb / width);
    if (pos >= bins) pos = bins - 1;
    h[static_cast<std::size_t>(pos)] += 1.0f;
  }
  return h;
}

}  // namespace

void register_histc_cpu_kernels(KernelRegistry& r) {
  r.table(kHistcKernels).define(DeviceType::CPU, &histc_cpu, kFloatingDTypes);
}

}  // namespace qgrad::ao
