// Conv2d layer: option checks, PyTorch's default initialisation and forward through ops/conv.
#include "nn/modules/conv.h"

#include <cmath>

#include "core/factory.h"
#include "nn/init.h"
#include "nn/repr_format.h"
#include "ops/conv/conv.h"

namespace qgrad::nn {

namespace {

// One value or {h, w} -> {h, w}, each checked against `min`.
Shape pair_of(const Shape& v, const char* what, std::int64_t min) {
  QGRAD_CHECK(v.size() == 1 || v.size() == 2, ValueError, "Conv2d: ", what,
              " must have 1 or 2 values, got ", shape_str(v));
  for (auto x : v)
    QGRAD_CHECK(x >= min, ValueError, "Conv2d: ", what, " must be >= ", min, ", got ",
                shape_str(v));
  return v.size() == 1 ? Shape{v[0], v[0]} : v;
}

std::string tuple_str(const Shape& v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}

}  // namespace

Conv2d::Conv2d(const Conv2dOptions& options, Generator& gen)
    : UnaryModule("Conv2d"), options_(options) {
  const auto in = options.in_channels_, out = options.out_channels_, g = options.groups_;
  QGRAD_CHECK(g > 0, ValueError, "Conv2d: groups must be positive, got ", g);
  QGRAD_CHECK(in > 0 && out > 0, ValueError,
              "Conv2d: in_channels and out_channels must be positive, got in_channels=", in,
              ", out_channels=", out);
  QGRAD_CHECK(in % g == 0, ValueError, "Conv2d: in_channels (", in,
              ") must be divisible by groups (", g, ")");
  QGRAD_CHECK(out % g == 0, ValueError, "Conv2d: out_channels (", out,
              ") must be divisible by groups (", g, ")");
  options_.kernel_size_ = pair_of(options.kernel_size_, "kernel_size", 1);
  options_.stride_ = pair_of(options.stride_, "stride", 1);
  options_.padding_ = pair_of(options.padding_, "padding", 0);
  options_.dilation_ = pair_of(options.dilation_, "dilation", 1);
  weight_ = register_parameter(
      "weight", empty({out, in / g, options_.kernel_size_[0], options_.kernel_size_[1]}));
  bias_ = register_parameter("bias", options.bias_ ? empty({out}) : Tensor());
  reset_parameters(gen);
}

void Conv2d::reset_parameters(Generator& gen) {
  init::kaiming_uniform_(weight_, gen, std::sqrt(5.0));
  if (bias_.defined()) {
    const auto fan_in = init::calculate_fan_in_and_fan_out(weight_).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias_, gen, -bound, bound);
  }
}

Tensor Conv2d::forward(const Tensor& input) {
  QGRAD_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 4), ShapeError,
              "Conv2d: expected a 3-D (unbatched) or 4-D (batched) input, got shape ",
              input.defined() ? shape_str(input.shape()) : std::string("(undefined)"));
  const std::int64_t c = input.size(input.dim() - 3);
  QGRAD_CHECK(c == options_.in_channels_, ShapeError, "Conv2d: expected input with ",
              options_.in_channels_, " channels (in_channels), got shape ",
              shape_str(input.shape()));
  const bool batched = input.dim() == 4;
  Tensor x = batched ? input : input.unsqueeze(0);
  Tensor y = conv2d(x, weight_, bias_, options_.stride_, options_.padding_, options_.dilation_,
                    options_.groups_);
  return batched ? y : y.squeeze(0);
}

std::string Conv2d::extra_repr() const {
  std::string s = std::to_string(options_.in_channels_) + ", " +
                  std::to_string(options_.out_channels_) +
                  ", kernel_size=" + tuple_str(options_.kernel_size_) +
                  ", stride=" + tuple_str(options_.stride_);
  if (options_.padding_ != Shape{0, 0}) s += ", padding=" + tuple_str(options_.padding_);
  if (options_.dilation_ != Shape{1, 1}) s += ", dilation=" + tuple_str(options_.dilation_);
  if (options_.groups_ != 1) s += ", groups=" + std::to_string(options_.groups_);
  if (!bias_.defined()) s += ", bias=False";
  return s;
}

}  // namespace qgrad::nn
