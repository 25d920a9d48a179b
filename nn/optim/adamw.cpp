// AdamW's constructors; options and step() are the Adam family's (nn/optim/adam.cpp).
#include "nn/optim/adamw.h"

namespace qgrad::optim {

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& options)
    : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : AdamFamily(std::move(groups), defaults, "AdamW") {}

}  // namespace qgrad::optim
