/// @file
/// Sequential: a chain of UnaryModules applied in order, as torch.nn.Sequential. Children are
/// named "0", "1", ... (or by the name given to push_back), so parameters appear as
/// "0.weight"; a Sequential is itself a UnaryModule and nests.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "nn/unary_module.h"

namespace qgrad::nn {

/// Runs its modules in order, each on the previous one's output, as torch.nn.Sequential; children
/// are named "0", "1", ...
class Sequential : public UnaryModule {
 public:
  Sequential() : UnaryModule("Sequential") {}
  /// The modules, named "0", "1", ... in order.
  Sequential(std::initializer_list<std::shared_ptr<UnaryModule>> modules);

  /// Appends a module named after its position and returns it with its own type.
  template <typename M>
  std::shared_ptr<M> push_back(std::shared_ptr<M> module) {
    return push_back(std::to_string(items_.size()), std::move(module));
  }
  /// Appends `module` under `name`; returns it.
  template <typename M>
  std::shared_ptr<M> push_back(const std::string& name, std::shared_ptr<M> module) {
    static_assert(std::is_base_of_v<UnaryModule, M>,
                  "Sequential::push_back: the module must derive from UnaryModule");
    append(name, module);
    return module;
  }

  /// Runs the input through every module in order (the input itself when empty).
  Tensor forward(const Tensor& input) override;

  /// The number of modules.
  std::size_t size() const { return items_.size(); }
  /// True when there is no module.
  bool empty() const { return items_.empty(); }
  /// The module at `index`; throws IndexError when out of range.
  std::shared_ptr<UnaryModule> operator[](std::size_t index) const;
  /// The module at `index` as type M; throws ValueError when it is not an M.
  template <typename M>
  std::shared_ptr<M> at(std::size_t index) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[index]);
    QGRAD_CHECK(m != nullptr, ValueError, "Sequential::at: module ", index, " is a ",
                (*this)[index]->name(), ", not the requested type");
    return m;
  }
  /// The first module.
  std::vector<std::shared_ptr<UnaryModule>>::const_iterator begin() const { return items_.begin(); }
  /// Past the last module.
  std::vector<std::shared_ptr<UnaryModule>>::const_iterator end() const { return items_.end(); }

 protected:
  void on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) override;

 private:
  void append(const std::string& name, std::shared_ptr<UnaryModule> module);
  std::vector<std::string> names_;
  std::vector<std::shared_ptr<UnaryModule>> items_;
};

}  // namespace qgrad::nn
