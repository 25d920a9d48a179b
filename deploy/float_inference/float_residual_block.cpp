// FloatResidualBlock: the block's convolutions in forward order, the add fused into the last.
#include "deploy/float_inference/float_residual_block.h"

#include "core/error.h"

namespace qgrad::deploy {

FloatResidualBlock::FloatResidualBlock(std::string name,
                                       std::vector<std::unique_ptr<FloatConv2d>> convs,
                                       std::unique_ptr<FloatConv2d> shortcut)
    : name_(std::move(name)), convs_(std::move(convs)), shortcut_(std::move(shortcut)) {
  QGRAD_CHECK(!convs_.empty() && convs_.back()->spec().residual, ValueError,
              "FloatResidualBlock: ", name_,
              ": needs its convolutions, the last one summing the shortcut");
}

FloatActivation FloatResidualBlock::forward(const FloatActivation& x) {
  FloatActivation h = x;
  for (std::size_t i = 0; i + 1 < convs_.size(); ++i) h = convs_[i]->forward(h);
  // The shortcut runs before the last convolution, which may overwrite x in place with the sum.
  const FloatActivation shortcut = shortcut_ ? shortcut_->forward(x) : x;
  return convs_.back()->forward(h, shortcut);
}

std::string FloatResidualBlock::describe() const {
  return name_ + ": residual block";
}

std::vector<std::pair<std::string, std::string>> FloatResidualBlock::implementations() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& c : convs_) out.emplace_back(c->describe(), c->impl_info());
  if (shortcut_) out.emplace_back(shortcut_->describe(), shortcut_->impl_info());
  return out;
}

}  // namespace qgrad::deploy
