// A fused ReLU as a oneDNN eltwise post-op on a float32 result, shared by the int8 layers' float
// outputs (int8_post_ops.cpp) and the float inference layers: relu (max(x, 0)), or, with
// relu_max > 0, clip to [0, relu_max] (ReLU6: relu_max 6). Header-only, so deploy/common itself
// does not link oneDNN; the back ends that include it do.
#pragma once

#include <dnnl.hpp>

namespace qgrad::deploy {

inline void append_relu(dnnl::post_ops& po, double relu_max = 0) {
  if (relu_max > 0)
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, static_cast<float>(relu_max));
  else
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
}

}  // namespace qgrad::deploy
