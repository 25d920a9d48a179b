// Switching quantizer statistics off for an evaluation pass and back on afterwards.
#include "quant/modules/frozen_quantizer_statistics.h"

#include <memory>

#include "quant/modules/fake_quantize.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "quant/modules/learnable_fake_quantize.h"

namespace qgrad::quant {

FrozenQuantizerStatistics::FrozenQuantizerStatistics(nn::Module& model) {
  // Shared handles keep each quantizer alive until the switch is restored.
  for (const auto& it : model.named_modules()) {
    const std::shared_ptr<nn::Module>& m = it.value;
    if (auto fq = std::dynamic_pointer_cast<FakeQuantize>(m)) {
      if (!fq->observer_enabled()) continue;
      fq->disable_observer();
      restore_.push_back([fq] { fq->enable_observer(); });
    } else if (auto ff = std::dynamic_pointer_cast<FusedMovingAvgObsFakeQuantize>(m)) {
      if (!ff->observer_enabled()) continue;
      ff->disable_observer();
      restore_.push_back([ff] { ff->enable_observer(); });
    } else if (auto hq = std::dynamic_pointer_cast<HorizonFakeQuantize>(m)) {
      if (!hq->observer_enabled()) continue;
      hq->disable_observer();
      restore_.push_back([hq] { hq->enable_observer(); });
    } else if (auto lq = std::dynamic_pointer_cast<LearnableFakeQuantize>(m)) {
      if (!lq->static_enabled()) continue;
      lq->toggle_observer_update(false);
      restore_.push_back([lq] { lq->toggle_observer_update(true); });
    }
  }
}

FrozenQuantizerStatistics::~FrozenQuantizerStatistics() {
  for (auto it = restore_.rbegin(); it != restore_.rend(); ++it) (*it)();
}

}  // namespace qgrad::quant
