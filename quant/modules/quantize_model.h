/// @file
/// quantize_model: converts a float model for quantization-aware training according to a
/// QuantRecipe (quant_recipe.h), as pytorch_quantization's quant_modules / torch.ao's
/// prepare_qat do: walking the module tree depth first, every nn::Linear becomes a QuantLinear and
/// every nn::Conv2d a QuantConv2d (sharing the trained weight and bias tensors, with the recipe's
/// input and weight quantizers), and, when the recipe quantizes inputs and "add" is on, every
/// nn::Add a QuantAdd with an input quantizer on both operands. Modules named in the recipe's
/// "exclude" list stay float together with everything below them; layers that are already
/// quantized are left alone. Children are swapped with Module::replace_module, so containers
/// must keep their own handles in step (Sequential and nn::BasicBlock do, through
/// on_replace_child). Returns the qualified names of the replaced modules, in tree order.
/// The recipe's "layers" rules (layer_rules.h) give each layer its own quantizers; a layer they
/// leave with no quantizer stays float, and a pattern that matches no Conv2d, Linear or Add of
/// the model is a ValueError listing the layers (checked before anything is replaced).
/// The root module itself cannot be replaced (ValueError for a bare Linear / Conv2d / Add).
///
/// With the recipe's "fuse_bn", a Conv2d whose output goes straight into a BatchNorm2d (the next
/// child of a Sequential; conv1 -> bn1 and conv2 -> bn2 of an nn::BasicBlock, whose downsample is
/// a Sequential) becomes one QuantConvBn2d (torch.ao's ConvBn2d: the weight is quantized as
/// W * gamma / sigma_running) that shares the conv's weight and bias and takes over the
/// BatchNorm2d module itself, and the BN's place gets an nn::Identity; both names are returned.
/// State dict keys: the conv's stay ("0.weight"), the BN's move under the conv's name as torch.ao
/// lays them out ("1.running_mean" -> "0.bn.running_mean"), the quantizers' are
/// "0._input_quantizer.*" / "0._weight_quantizer.*". Excluding the conv keeps both float;
/// excluding only the BN of such a pair, or a pair that cannot be fused (channel counts differ, a
/// BN without affine parameters or running statistics), is a ValueError raised before anything
/// is replaced. Convs in other modules (whose forward order is unknown) and convs not followed by
/// a BN become QuantConv2d as without "fuse_bn".
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/module.h"
#include "quant/modules/quant_recipe.h"

namespace qgrad::quant {

/// A layer quantize_model can quantize: a Conv2d, Linear or Add of the float model.
struct QuantizableLayer {
  std::string name;        ///< qualified, as named_modules prints it
  LayerPosition position;  ///< "@first" / "@last" among the Conv2d and Linear layers
  bool is_add = false;     ///< an Add (else a Conv2d or Linear)
};
/// The model's Conv2d, Linear and Add layers in module-tree order.
std::vector<QuantizableLayer> quantizable_layers(const nn::Module& model);

/// Replaces model's layers by quantized ones as recipe says (see the file comment); returns
/// the replaced modules' qualified names. ValueError for an unusable recipe.
std::vector<std::string> quantize_model(nn::Module& model, const QuantRecipe& recipe);
/// QuantRecipe::from_json(recipe), then the above.
std::vector<std::string> quantize_model(nn::Module& model, const nlohmann::json& recipe);

}  // namespace qgrad::quant
