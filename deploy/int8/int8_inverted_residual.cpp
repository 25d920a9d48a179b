// Int8InvertedResidual: MobileNetV2's residual block's int8 layers in forward order.
#include "deploy/int8/int8_inverted_residual.h"

#include "core/error.h"

namespace qgrad::quant {

Int8InvertedResidual::Int8InvertedResidual(std::string name,
                                           std::vector<std::unique_ptr<Int8Conv2d>> convs,
                                           std::unique_ptr<Int8Add> add)
    : name_(std::move(name)), convs_(std::move(convs)), add_(std::move(add)) {
  QGRAD_CHECK(!convs_.empty() && add_ != nullptr, ValueError, "Int8InvertedResidual: ", name_,
              ": needs its convolutions and the add");
}

Tensor Int8InvertedResidual::forward(const Tensor& x) {
  Tensor h = x;
  for (const auto& c : convs_) h = c->forward(h);
  return add_->add(h, x);
}

std::string Int8InvertedResidual::describe() const {
  return name_ + ": int8 inverted residual block";
}

std::vector<std::pair<std::string, std::string>> Int8InvertedResidual::implementations() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : convs_) out.emplace_back(c->describe(), c->impl_info());
  out.emplace_back(add_->describe(), add_->impl_info());
  return out;
}

}  // namespace qgrad::quant
