// Int8BasicBlock: the residual block's int8 layers in forward order.
#include "deploy/int8/int8_basic_block.h"

#include "core/error.h"

namespace qgrad::quant {

Int8BasicBlock::Int8BasicBlock(std::string name, std::unique_ptr<Int8Conv2d> conv1,
                               std::unique_ptr<Int8Conv2d> conv2,
                               std::unique_ptr<Int8Conv2d> downsample, std::unique_ptr<Int8Add> add)
    : name_(std::move(name)),
      conv1_(std::move(conv1)),
      conv2_(std::move(conv2)),
      downsample_(std::move(downsample)),
      add_(std::move(add)) {
  QGRAD_CHECK(conv1_ && conv2_ && (add_ != nullptr) != conv2_->spec().residual.has_value(),
              ValueError, "Int8BasicBlock: ", name_,
              ": needs conv1, conv2 and either an add or a conv2 that sums the residual");
}

Tensor Int8BasicBlock::forward(const Tensor& x) {
  const Tensor h = conv1_->forward(x);
  const Tensor shortcut = downsample_ ? downsample_->forward(x) : x;
  if (!add_) return conv2_->forward(h, shortcut);  // the add fused as a sum post-op
  return add_->add(conv2_->forward(h), shortcut);
}

std::string Int8BasicBlock::describe() const {
  return name_ + ": int8 residual block";
}

std::vector<std::pair<std::string, std::string>> Int8BasicBlock::implementations() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Int8Layer* l :
       {static_cast<const Int8Layer*>(conv1_.get()), static_cast<const Int8Layer*>(conv2_.get()),
        static_cast<const Int8Layer*>(downsample_.get()),
        static_cast<const Int8Layer*>(add_.get())})
    if (l != nullptr) out.emplace_back(l->describe(), l->impl_info());
  return out;
}

}  // namespace qgrad::quant
