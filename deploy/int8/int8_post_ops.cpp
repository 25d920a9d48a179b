// Clip (fused ReLU and grid bounds) and zero-point post-ops of the int8 layers.
#include "deploy/int8/int8_post_ops.h"

#include <algorithm>

namespace qgrad::quant {

dnnl::post_ops requantize_post_ops(const std::optional<Int8Grid>& output, bool relu,
                                   bool add_zero_point) {
  dnnl::post_ops po;
  if (!output) {
    if (relu) po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    return po;
  }
  const std::int64_t zp = output->zero_point;
  if (relu || output->narrower_than_type()) {
    const std::int64_t lo =
        relu ? std::max<std::int64_t>(0, output->quant_min - zp) : output->quant_min - zp;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, static_cast<float>(lo),
                      static_cast<float>(output->quant_max - zp));
  }
  if (add_zero_point && zp != 0)
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.0f, static_cast<float>(zp));
  return po;
}

}  // namespace qgrad::quant
