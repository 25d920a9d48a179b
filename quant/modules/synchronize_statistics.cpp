// synchronize_statistics(): a walk over the model's modules.
#include "quant/modules/synchronize_statistics.h"

#include <string>

#include "quant/synced_statistics.h"

namespace qgrad::quant {

std::size_t synchronize_statistics(nn::Module& model,
                                   std::shared_ptr<distributed::ProcessGroup> group) {
  std::size_t count = 0;
  model.apply([&](const std::string&, nn::Module& m) {
    if (auto* s = dynamic_cast<SyncedStatistics*>(&m)) {
      s->set_process_group(group);
      ++count;
    }
  });
  return count;
}

}  // namespace qgrad::quant
