// quantize_model: swapping float layers for their quantized versions.
#include "quant/modules/quantize_model.h"

#include <map>
#include <set>
#include <utility>

#include "nn/models/basic_block.h"
#include "nn/modules/add.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/graph.h"
#include "nn/modules/identity.h"
#include "nn/modules/linear.h"
#include "nn/modules/sequential.h"
#include "quant/modules/quant_add.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_conv_bn2d.h"
#include "quant/modules/quant_linear.h"

namespace qgrad::quant {

namespace {

bool is_quantized(const nn::Module& m) {
  return dynamic_cast<const QuantLinear*>(&m) || dynamic_cast<const QuantConv2d*>(&m) ||
         dynamic_cast<const QuantConvBn2d*>(&m) || dynamic_cast<const QuantAdd*>(&m);
}

std::string qualified(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// The children of `module` that are a Conv2d feeding a BatchNorm2d, as {conv key -> bn key}, where
// the data flow is known: consecutive children of a Sequential, conv1/bn1 and conv2/bn2 of a
// BasicBlock (its downsample is a Sequential), a Graph's Conv2d node whose output only a
// BatchNorm2d node reads (and the graph does not return). Other modules' forward is opaque:
// none.
std::map<std::string, std::string> conv_bn_pairs(const nn::Module& module) {
  std::map<std::string, std::string> pairs;
  const auto children = module.named_children();
  auto is_pair = [&](const std::string& conv, const std::string& bn) {
    return children.contains(conv) && children.contains(bn) &&
           std::dynamic_pointer_cast<nn::Conv2d>(children.at(conv)) &&
           std::dynamic_pointer_cast<nn::BatchNorm2d>(children.at(bn));
  };
  if (dynamic_cast<const nn::Sequential*>(&module)) {
    const std::vector<std::string> keys = children.keys();
    for (std::size_t i = 0; i + 1 < keys.size(); ++i)
      if (is_pair(keys[i], keys[i + 1])) pairs[keys[i]] = keys[i + 1];
  } else if (dynamic_cast<const nn::BasicBlock*>(&module)) {
    for (const auto& [conv, bn] : {std::pair<std::string, std::string>{"conv1", "bn1"},
                                   std::pair<std::string, std::string>{"conv2", "bn2"}})
      if (is_pair(conv, bn)) pairs[conv] = bn;
  } else if (const auto* g = dynamic_cast<const nn::Graph*>(&module)) {
    const auto& nodes = g->nodes();
    for (const nn::Graph::Node& n : nodes) {
      const std::vector<std::size_t> r = g->readers(n.output);
      if (r.size() == 1 && n.output != g->output_name() && is_pair(n.name, nodes[r[0]].name))
        pairs[n.name] = nodes[r[0]].name;
    }
  }
  return pairs;
}

bool is_excluded(const std::string& name, const std::set<std::string>& exclude) {
  for (const std::string& e : exclude)
    if (name == e || name.rfind(e + ".", 0) == 0) return true;
  return false;
}

// fuse_bn: every pair that will be fused must be fusable, and an exclusion must not split a pair
// (checked for the whole model before anything is replaced).
void check_fusion(const nn::Module& model, const std::set<std::string>& exclude) {
  model.apply([&](const std::string& name, const nn::Module& m) {
    if (is_excluded(name, exclude) || is_quantized(m)) return;
    const auto children = m.named_children();
    for (const auto& [conv_key, bn_key] : conv_bn_pairs(m)) {
      const std::string conv = qualified(name, conv_key), bn = qualified(name, bn_key);
      if (exclude.count(conv)) continue;  // both stay float
      QGRAD_CHECK(!exclude.count(bn), ValueError, "quantize_model: \"fuse_bn\" fuses Conv2d '",
                  conv, "' with the BatchNorm2d '", bn, "' after it, but \"exclude\" names only '",
                  bn, "'; exclude '", conv, "' to keep both float");
      const auto c = std::dynamic_pointer_cast<nn::Conv2d>(children.at(conv_key));
      const std::string why =
          conv_bn_mismatch(c->options().out_channels_,
                           *std::dynamic_pointer_cast<nn::BatchNorm2d>(children.at(bn_key)));
      QGRAD_CHECK(why.empty(), ValueError, "quantize_model: \"fuse_bn\": cannot fuse Conv2d '",
                  conv, "' with BatchNorm2d '", bn, "': ", why, " (exclude '", conv,
                  "' to keep both float)");
    }
  });
}

class Swapper {
 public:
  Swapper(const QuantRecipe& r, std::set<std::string> exclude,
          std::map<std::string, QuantRecipe::LayerQuantizers> plan)
      : recipe_(r), exclude_(std::move(exclude)), plan_(std::move(plan)) {}

  void run(nn::Module& module, const std::string& prefix) {
    std::map<std::string, std::string> fuse;  // conv key -> bn key
    std::set<std::string> fused_bn;
    if (recipe_.fuse_bn())
      for (const auto& [conv, bn] : conv_bn_pairs(module))
        if (!exclude_.count(qualified(prefix, conv))) fuse[conv] = bn;
    for (const auto& child : module.named_children()) {
      const std::string name = qualified(prefix, child.key);
      const std::shared_ptr<nn::Module>& m = child.value;
      if (exclude_.count(name)) continue;
      if (is_quantized(*m)) continue;
      if (fused_bn.count(child.key)) continue;  // now inside the QuantConvBn2d before it
      const auto planned = plan_.find(name);
      if (planned == plan_.end()) {
        run(*m, name);
        continue;
      }
      const QuantRecipe::LayerQuantizers& q = planned->second;
      auto input = [&] { return q.make_input ? q.make_input() : nullptr; };
      auto weight = [&](const Shape& s) { return q.make_weight ? q.make_weight(s) : nullptr; };
      if (fuse.count(child.key)) {
        const std::string& bn_key = fuse.at(child.key);
        auto conv = std::dynamic_pointer_cast<nn::Conv2d>(m);
        auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(module.named_children().at(bn_key));
        auto identity = std::make_shared<nn::Identity>();
        identity->train(bn->is_training());
        module.replace_module(child.key, QuantConvBn2d::from_float(*conv, bn, input(),
                                                                   weight(conv->weight().shape())));
        module.replace_module(bn_key, identity);
        fused_bn.insert(bn_key);
        replaced_.push_back(name);
        replaced_.push_back(qualified(prefix, bn_key));
      } else if (auto lin = std::dynamic_pointer_cast<nn::Linear>(m)) {
        auto q = QuantLinear::from_float(*lin, input(), weight(lin->weight().shape()));
        q->set_int32_bias(recipe_.int32_bias());
        module.replace_module(child.key, q);
        replaced_.push_back(name);
      } else if (auto conv = std::dynamic_pointer_cast<nn::Conv2d>(m)) {
        auto q = QuantConv2d::from_float(*conv, input(), weight(conv->weight().shape()));
        q->set_int32_bias(recipe_.int32_bias());
        module.replace_module(child.key, q);
        replaced_.push_back(name);
      } else if (std::dynamic_pointer_cast<nn::Add>(m)) {
        auto a = std::make_shared<QuantAdd>(input(), input());
        a->train(m->is_training());
        module.replace_module(child.key, a);
        replaced_.push_back(name);
      }
    }
  }

  const std::vector<std::string>& replaced() const { return replaced_; }

 private:
  const QuantRecipe& recipe_;
  std::set<std::string> exclude_;
  std::map<std::string, QuantRecipe::LayerQuantizers> plan_;
  std::vector<std::string> replaced_;
};

}  // namespace

std::vector<QuantizableLayer> quantizable_layers(const nn::Module& model) {
  std::vector<QuantizableLayer> layers;
  std::vector<std::size_t> weighted;
  model.apply([&](const std::string& name, const nn::Module& m) {
    const bool w = dynamic_cast<const nn::Conv2d*>(&m) || dynamic_cast<const nn::Linear*>(&m);
    const bool add = dynamic_cast<const nn::Add*>(&m) != nullptr;
    if (!w && !add) return;
    if (w) weighted.push_back(layers.size());
    layers.push_back({name, LayerPosition{}, add});
  });
  if (!weighted.empty()) {
    layers[weighted.front()].position.first = true;
    layers[weighted.back()].position.last = true;
  }
  return layers;
}

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
  std::set<std::string> exclude(recipe.exclude().begin(), recipe.exclude().end());
  // Every layer's quantizers, from the "layers" rules; a layer they leave without quantizers
  // stays float, as if excluded.
  std::vector<std::pair<std::string, LayerPosition>> layers;
  std::set<std::string> adds;
  for (const QuantizableLayer& l : quantizable_layers(model)) {
    layers.emplace_back(l.name, l.position);
    if (l.is_add) adds.insert(l.name);
  }
  const std::vector<std::string> unmatched = recipe.layer_rules().unmatched(layers);
  if (!unmatched.empty()) {
    std::string known;
    for (std::size_t i = 0; i < layers.size() && i < 24; ++i)
      known += (i ? ", " : "") + layers[i].first;
    if (layers.size() > 24) known += ", ...";
    std::string list;
    for (const std::string& u : unmatched) list += (list.empty() ? "" : ", ") + u;
    throw ValueError("quantize_model: \"layers\" pattern " + list +
                     " matches no Conv2d, Linear or Add of the model (its layers: " + known + ")");
  }
  std::map<std::string, QuantRecipe::LayerQuantizers> plan;
  for (const auto& [name, pos] : layers) {
    if (is_excluded(name, exclude)) continue;
    QuantRecipe::LayerQuantizers q = recipe.layer(name, pos);
    const bool is_add = adds.count(name) > 0;
    // An Add is quantized on its inputs only, and only when the recipe quantizes adds.
    if (is_add ? (!q.input || !recipe.quantize_add()) : q.is_float()) {
      if (recipe.layer_rules().matching(name, pos).empty()) continue;  // float without any rule
      exclude.insert(name);
      continue;
    }
    plan.emplace(name, std::move(q));
  }
  if (recipe.fuse_bn()) check_fusion(model, exclude);
  Swapper s(recipe, exclude, std::move(plan));
  s.run(model, "");
  return s.replaced();
}

std::vector<std::string> quantize_model(nn::Module& model, const nlohmann::json& recipe) {
  return quantize_model(model, QuantRecipe::from_json(recipe));
}

}  // namespace qgrad::quant
