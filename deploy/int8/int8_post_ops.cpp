// Shift, zero point and clip (fused ReLU and grid bounds) post-ops of the int8 layers.
#include "deploy/int8/int8_post_ops.h"

#include <algorithm>

#include "core/error.h"
#include "deploy/common/relu_post_op.h"

namespace qgrad::quant {

std::optional<GridClip> output_clip(const Int8Grid& output, bool relu) {
  if (!relu && !output.narrower_than_type()) return std::nullopt;
  GridClip c;
  c.lo = relu ? std::max<std::int64_t>(output.zero_point, output.quant_min) : output.quant_min;
  c.hi = output.quant_max;
  return c;
}

dnnl::post_ops requantize_post_ops(const std::optional<Int8Grid>& output, bool relu,
                                   bool add_zero_point, double shift, const Int8Grid* sum,
                                   double relu_max) {
  dnnl::post_ops po;
  if (sum != nullptr) {
    QGRAD_CHECK(output, ValueError, "requantize_post_ops: a sum needs an int8 output");
    po.append_sum(
        static_cast<float>(double(sum->scale) / output->scale), sum->zero_point,
        sum->dtype() == DType::UInt8 ? dnnl::memory::data_type::u8 : dnnl::memory::data_type::s8);
  }
  if (!output) {
    if (shift != 0)
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.0f, static_cast<float>(shift));
    if (relu) deploy::append_relu(po, relu_max);
    return po;
  }
  const std::int64_t zp = output->zero_point;
  // Shifts without a zero point to add come only from add_zero_point primitives.
  QGRAD_CHECK(add_zero_point || shift == 0, ValueError,
              "requantize_post_ops: a shift needs add_zero_point");
  const std::int64_t base = add_zero_point ? 0 : zp;  // the clip's origin
  if (add_zero_point && (shift != 0 || zp != 0))
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.0f,
                      static_cast<float>(shift + static_cast<double>(zp)));
  if (const std::optional<GridClip> c = output_clip(*output, relu)) {
    double hi = static_cast<double>(c->hi);
    if (relu && relu_max > 0)
      hi = std::min(hi, static_cast<double>(zp) + relu_max / static_cast<double>(output->scale));
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, static_cast<float>(c->lo - base),
                      static_cast<float>(hi - static_cast<double>(base)));
  }
  return po;
}

}  // namespace qgrad::quant
