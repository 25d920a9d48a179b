// Sequential: ordered chaining of UnaryModules.
#include "nn/modules/sequential.h"

namespace qgrad::nn {

Sequential::Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules)
    : UnaryModule("Sequential") {
  for (const auto& m : modules) push_back(m);
}

void Sequential::append(const std::string& name, std::shared_ptr<UnaryModule> module) {
  QGRAD_CHECK(module != nullptr, ValueError, "Sequential::push_back: module ", items_.size(),
              " is null");
  register_module(name, module);
  names_.push_back(name);
  items_.push_back(std::move(module));
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (auto& m : items_) x = m->forward(x);
  return x;
}

std::shared_ptr<UnaryModule> Sequential::operator[](std::size_t index) const {
  QGRAD_CHECK(index < items_.size(), IndexError, "Sequential: index ", index,
              " is out of range for a Sequential of ", items_.size(), " modules");
  return items_[index];
}

void Sequential::on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) {
  auto unary = std::dynamic_pointer_cast<UnaryModule>(module);
  QGRAD_CHECK(unary != nullptr, ValueError, "Sequential::replace_module: replacement for '", name,
              "' (", module->name(), ") does not derive from UnaryModule");
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) items_[i] = unary;
}

}  // namespace qgrad::nn
