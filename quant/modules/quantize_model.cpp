// quantize_model: swapping float layers for their quantized versions.
#include "quant/modules/quantize_model.h"

#include <set>

#include "nn/modules/add.h"
#include "nn/modules/conv.h"
#include "nn/modules/linear.h"
#include "quant/modules/quant_add.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"

namespace qgrad::quant {

namespace {

bool is_quantized(const nn::Module& m) {
  return dynamic_cast<const QuantLinear*>(&m) || dynamic_cast<const QuantConv2d*>(&m) ||
         dynamic_cast<const QuantAdd*>(&m);
}

class Swapper {
 public:
  explicit Swapper(const QuantRecipe& r)
      : recipe_(r), exclude_(r.exclude().begin(), r.exclude().end()) {}

  void run(nn::Module& module, const std::string& prefix) {
    for (const auto& child : module.named_children()) {
      const std::string name = prefix.empty() ? child.key : prefix + "." + child.key;
      const std::shared_ptr<nn::Module>& m = child.value;
      if (exclude_.count(name)) continue;
      if (is_quantized(*m)) continue;
      if (auto lin = std::dynamic_pointer_cast<nn::Linear>(m)) {
        module.replace_module(child.key, QuantLinear::from_float(
                                             *lin, recipe_.make_input_quantizer(),
                                             recipe_.make_weight_quantizer(lin->weight().shape())));
        replaced_.push_back(name);
      } else if (auto conv = std::dynamic_pointer_cast<nn::Conv2d>(m)) {
        module.replace_module(
            child.key,
            QuantConv2d::from_float(*conv, recipe_.make_input_quantizer(),
                                    recipe_.make_weight_quantizer(conv->weight().shape())));
        replaced_.push_back(name);
      } else if (std::dynamic_pointer_cast<nn::Add>(m) && recipe_.quantize_add() &&
                 recipe_.quantizes_inputs()) {
        auto q = std::make_shared<QuantAdd>(recipe_.make_input_quantizer(),
                                            recipe_.make_input_quantizer());
        q->train(m->is_training());
        module.replace_module(child.key, q);
        replaced_.push_back(name);
      } else {
        run(*m, name);
      }
    }
  }

  const std::vector<std::string>& replaced() const { return replaced_; }

 private:
  const QuantRecipe& recipe_;
  std::set<std::string> exclude_;
  std::vector<std::string> replaced_;
};

}  // namespace

std::vector<std::string> quantize_model(nn::Module& model, const QuantRecipe& recipe) {
  QGRAD_CHECK(!dynamic_cast<nn::Linear*>(&model) && !dynamic_cast<nn::Conv2d*>(&model) &&
                  !dynamic_cast<nn::Add*>(&model),
              ValueError, "quantize_model: the model itself is a ", model.name(),
              ", which cannot replace itself; wrap it in a Sequential");
  // Check the exclude list before changing anything.
  {
    std::set<std::string> names;
    static_cast<const nn::Module&>(model).apply(
        [&](const std::string& n, const nn::Module&) { names.insert(n); });
    for (const std::string& e : recipe.exclude())
      QGRAD_CHECK(names.count(e) && !e.empty(), ValueError, "quantize_model: \"exclude\" names '",
                  e,
                  "', which is not a module of the model (names look like \"0\" or "
                  "\"layer1.0.conv1\")");
  }
  Swapper s(recipe);
  s.run(model, "");
  return s.replaced();
}

std::vector<std::string> quantize_model(nn::Module& model, const nlohmann::json& recipe) {
  return quantize_model(model, QuantRecipe::from_json(recipe));
}

}  // namespace qgrad::quant
