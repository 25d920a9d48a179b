// The shared module walk of the deployment back ends: names and Sequential flattening.
#include "deploy/common/module_walk.h"

#include "nn/models/inverted_residual.h"
#include "nn/modules/sequential.h"

namespace qgrad::deploy {

std::string describe(const Item& item) {
  return item.first.empty() ? "the model (" + item.second->name() + ")"
                            : "layer '" + item.first + "' (" + item.second->name() + ")";
}

void flatten_into(const nn::Module& module, const std::string& path, std::vector<Item>& out) {
  for (const auto& c : module.named_children()) {
    const std::string name = path.empty() ? c.key : path + "." + c.key;
    const auto* ir = dynamic_cast<const nn::InvertedResidual*>(c.value.get());
    if (dynamic_cast<const nn::Sequential*>(c.value.get()) || (ir && !ir->use_res_connect()))
      flatten_into(*c.value, name, out);
    else
      out.emplace_back(name, c.value);
  }
}

}  // namespace qgrad::deploy
