// Graph: child modules run over named values in insertion order.
#include "nn/modules/graph.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "core/error.h"

namespace qgrad::nn {

std::shared_ptr<Module> Graph::Node::module() const {
  if (unary != nullptr) return unary;
  return add;
}

std::vector<std::size_t> Graph::readers(const std::string& value) const {
  std::vector<std::size_t> r;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    for (const std::string& in : nodes_[i].inputs)
      if (in == value) r.push_back(i);
  return r;
}

Graph::Graph(std::string input, std::string output)
    : UnaryModule("Graph"), input_(std::move(input)), output_(std::move(output)) {
  defined_.push_back(input_);
}

void Graph::bind(Node& node, const std::shared_ptr<Module>& module) {
  QGRAD_CHECK(module != nullptr, ValueError, "Graph: node '", node.name, "' has no module");
  node.unary = nullptr;
  node.add = nullptr;
  if (node.inputs.size() == 1) {
    node.unary = std::dynamic_pointer_cast<UnaryModule>(module);
    QGRAD_CHECK(node.unary != nullptr, ValueError, "Graph: node '", node.name, "' reads one value ",
                "but its module (", module->name(), ") does not derive from UnaryModule");
  } else {
    node.add = std::dynamic_pointer_cast<Add>(module);
    QGRAD_CHECK(node.inputs.size() == 2 && node.add != nullptr, ValueError, "Graph: node '",
                node.name, "' reads ", node.inputs.size(), " values; only an Add reads two (got ",
                module->name(), ")");
  }
}

void Graph::add_node(const std::string& name, std::shared_ptr<Module> module,
                     const std::vector<std::string>& inputs, const std::string& output) {
  auto is_defined = [&](const std::string& v) {
    return std::find(defined_.begin(), defined_.end(), v) != defined_.end();
  };
  for (const auto& in : inputs)
    QGRAD_CHECK(is_defined(in), ValueError, "Graph: node '", name, "' reads '", in,
                "', which no earlier node writes");
  QGRAD_CHECK(!is_defined(output), ValueError, "Graph: node '", name, "' writes '", output,
              "', which is already defined");
  Node node{name, inputs, output, nullptr, nullptr};
  bind(node, module);
  register_module(name, module);
  nodes_.push_back(std::move(node));
  defined_.push_back(output);
}

Tensor Graph::forward(const Tensor& input) {
  std::unordered_map<std::string, Tensor> values;
  values[input_] = input;
  for (const auto& node : nodes_) {
    if (node.unary != nullptr)
      values[node.output] = node.unary->forward(values.at(node.inputs[0]));
    else
      values[node.output] = node.add->forward(values.at(node.inputs[0]), values.at(node.inputs[1]));
  }
  const auto it = values.find(output_);
  QGRAD_CHECK(it != values.end(), ValueError, "Graph: no node writes the output '", output_, "'");
  return it->second;
}

void Graph::on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) {
  for (auto& node : nodes_)
    if (node.name == name) {
      Node updated = node;
      bind(updated, module);  // throws before anything changes
      node = std::move(updated);
    }
}

}  // namespace qgrad::nn
