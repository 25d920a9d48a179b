// Int8Model: runs its layers in order.
#include "deploy/int8/int8_model.h"

#include "core/error.h"
#include "core/shape.h"

namespace qgrad::quant {

void Int8Model::append(std::unique_ptr<Int8Layer> layer) {
  QGRAD_CHECK(layer != nullptr, ValueError, "Int8Model::append: null layer");
  layers_.push_back(std::move(layer));
}

Tensor Int8Model::forward(const Tensor& x) {
  QGRAD_CHECK(!layers_.empty(), ValueError, "Int8Model::forward: the model has no layers");
  Tensor y = x;
  for (const auto& layer : layers_) y = layer->forward(y);
  QGRAD_CHECK(y.dtype() == DType::Float32, DTypeError, "Int8Model::forward: the last layer (",
              layers_.back()->describe(), ") left the output quantized (", dtype_name(y.dtype()),
              ")");
  return y.contiguous();
}

std::vector<Int8LayerInfo> Int8Model::implementations() const {
  std::vector<Int8LayerInfo> out;
  for (const auto& layer : layers_)
    for (auto& [name, impl] : layer->implementations()) out.push_back({name, impl});
  return out;
}

}  // namespace qgrad::quant
