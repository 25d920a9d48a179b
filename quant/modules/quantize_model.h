// quantize_model: converts a float model for quantization-aware training according to a
// QuantRecipe (quant_recipe.h), as pytorch_quantization's quant_modules / torch.ao's
// prepare_qat do: walking the module tree depth first, every nn::Linear becomes a QuantLinear and
// every nn::Conv2d a QuantConv2d (sharing the trained weight and bias tensors, with the recipe's
// input and weight quantizers), and, when the recipe quantizes inputs and "add" is on, every
// nn::Add a QuantAdd with an input quantizer on both operands. Modules named in the recipe's
// "exclude" list stay float together with everything below them; layers that are already
// quantized are left alone. Children are swapped with Module::replace_module, so containers
// must keep their own handles in step (Sequential and nn::BasicBlock do, through
// on_replace_child). Returns the qualified names of the replaced modules, in tree order.
// The root module itself cannot be replaced (ValueError for a bare Linear / Conv2d / Add).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/module.h"
#include "quant/modules/quant_recipe.h"

namespace qgrad::quant {

std::vector<std::string> quantize_model(nn::Module& model, const QuantRecipe& recipe);
// QuantRecipe::from_json(recipe), then the above.
std::vector<std::string> quantize_model(nn::Module& model, const nlohmann::json& recipe);

}  // namespace qgrad::quant
