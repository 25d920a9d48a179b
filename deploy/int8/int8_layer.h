// Int8Layer: one step of an int8 model (quant::Int8Model). Activations travel between layers as
// qgrad tensors: uint8 / int8 on a known grid (Int8Grid) in NHWC layout, or float32 where the
// model leaves the quantized domain. Each layer builds its oneDNN primitive on the first input of
// a given shape and keeps it for later calls of that shape; impl_info() is oneDNN's name of the
// implementation that ran last (primitive_desc::impl_info_str(), "jit_int8:avx512_core_vnni"),
// empty before the first forward. Layers are not thread-safe: one forward at a time.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace qgrad::quant {

class Int8Layer {
 public:
  virtual ~Int8Layer() = default;
  virtual Tensor forward(const Tensor& x) = 0;
  // The source layer's qualified name and what this layer computes, for logs:
  // "'0' conv 1->6 k5 u8 -> u8, fused ReLU".
  virtual std::string describe() const = 0;
  const std::string& impl_info() const { return impl_info_; }
  // (describe(), impl_info()) of this layer, or of each of its parts for a composite layer.
  virtual std::vector<std::pair<std::string, std::string>> implementations() const {
    return {{describe(), impl_info()}};
  }

 protected:
  std::string impl_info_;
};

}  // namespace qgrad::quant
