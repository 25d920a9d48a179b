// The walk over a module tree that the deployment back ends share (quant::convert's int8 layers,
// deploy::compile_inference's float layers): a layer with its qualified name (Item), how messages
// name it ("layer 'layer1.0.conv1' (Conv2d)"), the modules inference drops (Identity, Dropout),
// and nested Sequentials flattened into forward order (an InvertedResidual without a shortcut is a
// Sequential here: its "conv" in forward order). Residual blocks stay single items.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"
#include "nn/modules/dropout.h"
#include "nn/modules/identity.h"

namespace qgrad::deploy {

// A layer and its qualified name ("" for the model itself).
using Item = std::pair<std::string, std::shared_ptr<nn::Module>>;

// "layer 'x' (Type)", or "the model (Type)" for the root.
std::string describe(const Item& item);

template <typename T>
bool is(const Item& item) {
  return dynamic_cast<const T*>(item.second.get()) != nullptr;
}

// Identity and Dropout: nothing at inference.
inline bool skipped(const Item& item) {
  return is<nn::Identity>(item) || is<nn::Dropout>(item);
}

// The children of `module` (and of nested Sequentials) in forward order, named under `path`,
// appended to `out`.
void flatten_into(const nn::Module& module, const std::string& path, std::vector<Item>& out);

}  // namespace qgrad::deploy
