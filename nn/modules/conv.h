/// @file
/// Conv2d: 2-D convolution layer, as torch.nn.Conv2d (zero padding only), with weight
/// [out_channels, in_channels / groups, kh, kw] and optional bias [out_channels].
///
/// Initialisation draws from the Generator given to the constructor exactly as PyTorch's
/// reset_parameters: weight from kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(fan_in),
/// 1/sqrt(fan_in)) with fan_in = in_channels / groups * kh * kw, then bias from the same range.
///
/// nn::Conv2dOptions describes the layer (channels, kernel, bias, ...); qgrad::Conv2dOptions in
/// ops/conv/conv.h holds only the functional op's stride/padding/dilation/groups, as libtorch
/// separates Conv2dOptions and Conv2dFuncOptions.
#pragma once

#include <cstdint>
#include <string>

#include "core/generator.h"
#include "nn/unary_module.h"

namespace qgrad::nn {

/// kernel_size/stride/padding/dilation: one value for both spatial dims or {h, w}.
///   Conv2d(Conv2dOptions(1, 32, 3).padding(1).bias(false), gen)
struct Conv2dOptions {
  /// in_channels -> out_channels with a kernel of {kh, kw} (or one value for both).
  Conv2dOptions(std::int64_t in_channels, std::int64_t out_channels, const Shape& kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  /// in_channels -> out_channels with a square kernel_size x kernel_size.
  Conv2dOptions(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size)
      : Conv2dOptions(in_channels, out_channels, Shape{kernel_size}) {}

  /// Sets the stride.
  Conv2dOptions& stride(const Shape& s) {
    stride_ = s;
    return *this;
  }
  /// Sets the same stride for both dims.
  Conv2dOptions& stride(std::int64_t s) { return stride(Shape{s}); }
  /// Sets the zero padding.
  Conv2dOptions& padding(const Shape& p) {
    padding_ = p;
    return *this;
  }
  /// Sets the same padding for both dims.
  Conv2dOptions& padding(std::int64_t p) { return padding(Shape{p}); }
  /// Sets the dilation.
  Conv2dOptions& dilation(const Shape& d) {
    dilation_ = d;
    return *this;
  }
  /// Sets the same dilation for both dims.
  Conv2dOptions& dilation(std::int64_t d) { return dilation(Shape{d}); }
  /// Sets the number of channel groups.
  Conv2dOptions& groups(std::int64_t g) {
    groups_ = g;
    return *this;
  }
  /// Sets whether the layer has a bias.
  Conv2dOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }

  std::int64_t in_channels_;   ///< input channels
  std::int64_t out_channels_;  ///< output channels
  Shape kernel_size_;          ///< {kh, kw}, or one value for both
  Shape stride_{1};            ///< {sh, sw}, or one value for both
  Shape padding_{0};           ///< {ph, pw}, or one value for both
  Shape dilation_{1};          ///< {dh, dw}, or one value for both
  std::int64_t groups_ = 1;    ///< channel groups
  bool bias_ = true;           ///< whether the layer has a bias
};

/// 2-D convolution layer, as torch.nn.Conv2d: weight [C_out, C_in/groups, kh, kw], optional bias
/// [C_out].
class Conv2d : public UnaryModule {
 public:
  /// Validates the options (positive channels divisible by groups, positive kernel/stride/
  /// dilation, non-negative padding, 1 or 2 values each) and throws ValueError naming the
  /// offending one. Spatial values are stored expanded to {h, w}.
  Conv2d(const Conv2dOptions& options, Generator& gen);

  /// x [N, C_in, H, W] (or unbatched [C_in, H, W]) -> [N, C_out, H_out, W_out].
  Tensor forward(const Tensor& input) override;
  /// Re-initialises weight and bias from `gen` as PyTorch does (kaiming-uniform weight, uniform
  /// bias).
  void reset_parameters(Generator& gen);
  /// "1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(1, 1), bias=False" (PyTorch's format:
  /// padding/dilation/groups/bias only when not the default).
  std::string extra_repr() const override;

  const Conv2dOptions& options() const { return options_; }  ///< spatial values as {h, w}
  /// The weight [C_out, C_in/groups, kh, kw].
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  ///< undefined without bias

 private:
  Conv2dOptions options_;
  Tensor weight_, bias_;
};

}  // namespace qgrad::nn
