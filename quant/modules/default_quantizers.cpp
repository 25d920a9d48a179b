// NVIDIA default quantizers of the quantized layers.
#include "quant/modules/default_quantizers.h"

#include "quant/modules/tensor_quantizer.h"

namespace qgrad::quant {

std::shared_ptr<nn::UnaryModule> default_input_quantizer() {
  return std::make_shared<TensorQuantizer>(
      nvidia::QuantDescriptor(nvidia::QuantDescriptorOptions().num_bits(8)));
}

std::shared_ptr<nn::UnaryModule> default_weight_quantizer(const Shape& weight_shape) {
  QGRAD_CHECK(!weight_shape.empty(), ShapeError,
              "default_weight_quantizer: the weight must have at least one dimension");
  Shape amax_shape(weight_shape.size(), 1);
  amax_shape[0] = weight_shape[0];
  return std::make_shared<TensorQuantizer>(
      nvidia::QuantDescriptor(nvidia::QuantDescriptorOptions().num_bits(8).axis(0)),
      TensorQuantizerOptions().amax_shape(amax_shape));
}

}  // namespace qgrad::quant
