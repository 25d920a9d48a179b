// See device_option.h.
#include "cli/device_option.h"

#include <memory>
#include <vector>

#include "cli/training_factory.h"
#include "cli/usage_error.h"
#include "core/error.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::cli {

Device parse_device(const std::string& what, const std::string& name) {
  try {
    return Device::parse(name);
  } catch (const Error& e) {
    throw UsageError(what + ": " + e.what());
  }
}

void require_runs_on(const std::string& what, Device device, nn::Module& quantized) {
  const std::vector<std::string> refused = quant::quantizers_not_on(quantized, device);
  if (!refused.empty()) {
    std::string list;
    for (std::size_t i = 0; i < refused.size() && i < 3; ++i) list += (i ? ", " : "") + refused[i];
    if (refused.size() > 3) list += ", ... (" + std::to_string(refused.size()) + " in all)";
    throw UsageError(what + ": the \"quant\" recipe gives quantizers that run on the CPU only in " +
                     "this version: " + list + "; on the GPU, " + quant::gpu_quantizers_summary() +
                     " so far; run this recipe with --device cpu");
  }
  require_visible(what, device);
}

void require_visible(const std::string& what, Device device) {
  if (device.is_cuda() && !cuda_is_available())
    throw UsageError(what + " is not available: " +
#ifdef QGRAD_WITH_CUDA
                     "no CUDA device is visible"
#else
                     "this qgrad was built without CUDA (configure with -DQGRAD_CUDA=ON)"
#endif
    );
}

void require_recipe_runs_on(const std::string& what, Device device, const TrainConfig& config,
                            const quant::QuantRecipe& recipe) {
  if (device.is_cpu()) return;  // every quantizer runs there
  const std::shared_ptr<nn::UnaryModule> probe = build_model(config);
  quant::quantize_model(*probe, recipe);
  require_runs_on(what, device, *probe);
}

}  // namespace qgrad::cli
