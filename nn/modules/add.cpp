// Add module: forwards to ops/binary add.
#include "nn/modules/add.h"

#include "ops/binary/binary.h"

namespace qgrad::nn {

Tensor Add::forward(const Tensor& a, const Tensor& b) {
  return add(a, b);
}

}  // namespace qgrad::nn
