/// @file
/// Pooling layers, as torch.nn.MaxPool2d, AvgPool2d and AdaptiveAvgPool2d: parameter-free
/// wrappers over ops/pool that keep their settings and print them the way PyTorch does (a value
/// given as one number prints as a number, two as a tuple; an unset stride prints as the kernel).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nn/unary_module.h"

namespace qgrad::nn {

/// kernel_size/stride/padding/dilation: one value for both spatial dims or {h, w}; an unset
/// (empty) stride means stride = kernel_size.
///   MaxPool2d(MaxPool2dOptions(3).stride(2).padding(1))
struct MaxPool2dOptions {
  /// A kernel of {kh, kw} (or one value for both); implicit, so a Shape converts.
  MaxPool2dOptions(const Shape& kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  /// A square kernel; implicit, so a count converts.
  MaxPool2dOptions(std::int64_t kernel_size) : kernel_size_{kernel_size} {}  // NOLINT
  /// Sets the stride (default: the kernel size).
  MaxPool2dOptions& stride(const Shape& s) {
    stride_ = s;
    return *this;
  }
  /// Sets the same stride for both dims.
  MaxPool2dOptions& stride(std::int64_t s) { return stride(Shape{s}); }
  /// Sets the padding (padded positions never win the max).
  MaxPool2dOptions& padding(const Shape& p) {
    padding_ = p;
    return *this;
  }
  /// Sets the same padding for both dims.
  MaxPool2dOptions& padding(std::int64_t p) { return padding(Shape{p}); }
  /// Sets the dilation.
  MaxPool2dOptions& dilation(const Shape& d) {
    dilation_ = d;
    return *this;
  }
  /// Sets the same dilation for both dims.
  MaxPool2dOptions& dilation(std::int64_t d) { return dilation(Shape{d}); }
  /// Sets whether the output size rounds up.
  MaxPool2dOptions& ceil_mode(bool c) {
    ceil_mode_ = c;
    return *this;
  }

  Shape kernel_size_;       ///< {kh, kw}, or one value for both
  Shape stride_;            ///< empty: the kernel size
  Shape padding_{0};        ///< {ph, pw}, or one value for both
  Shape dilation_{1};       ///< {dh, dw}, or one value for both
  bool ceil_mode_ = false;  ///< round the output size up instead of down
};

/// Options of AvgPool2d, with chainable setters (torch.nn.AvgPool2d's parameters).
struct AvgPool2dOptions {
  /// A kernel of {kh, kw} (or one value for both); implicit, so a Shape converts.
  AvgPool2dOptions(const Shape& kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  /// A square kernel; implicit, so a count converts.
  AvgPool2dOptions(std::int64_t kernel_size) : kernel_size_{kernel_size} {}  // NOLINT
  /// Sets the stride (default: the kernel size).
  AvgPool2dOptions& stride(const Shape& s) {
    stride_ = s;
    return *this;
  }
  /// Sets the same stride for both dims.
  AvgPool2dOptions& stride(std::int64_t s) { return stride(Shape{s}); }
  /// Sets the zero padding.
  AvgPool2dOptions& padding(const Shape& p) {
    padding_ = p;
    return *this;
  }
  /// Sets the same padding for both dims.
  AvgPool2dOptions& padding(std::int64_t p) { return padding(Shape{p}); }
  /// Sets whether the output size rounds up.
  AvgPool2dOptions& ceil_mode(bool c) {
    ceil_mode_ = c;
    return *this;
  }
  /// Sets whether padded zeros count in the divisor.
  AvgPool2dOptions& count_include_pad(bool c) {
    count_include_pad_ = c;
    return *this;
  }
  /// Sets a fixed divisor instead of the window size.
  AvgPool2dOptions& divisor_override(std::optional<std::int64_t> d) {
    divisor_override_ = d;
    return *this;
  }

  Shape kernel_size_;                             ///< {kh, kw}, or one value for both
  Shape stride_;                                  ///< empty: the kernel size
  Shape padding_{0};                              ///< {ph, pw}, or one value for both
  bool ceil_mode_ = false;                        ///< round the output size up instead of down
  bool count_include_pad_ = true;                 ///< count padded zeros in the divisor
  std::optional<std::int64_t> divisor_override_;  ///< a fixed divisor, when set
};

/// 2-D max pooling, as torch.nn.MaxPool2d.
class MaxPool2d : public UnaryModule {
 public:
  /// Throws ValueError for malformed sizes (count, sign, padding over half the kernel).
  explicit MaxPool2d(const MaxPool2dOptions& options);
  Tensor forward(const Tensor& input) override;
  /// "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False"
  std::string extra_repr() const override;
  const MaxPool2dOptions& options() const { return options_; }  ///< stride filled in

 private:
  MaxPool2dOptions options_;
};

/// 2-D average pooling, as torch.nn.AvgPool2d.
class AvgPool2d : public UnaryModule {
 public:
  /// Throws ValueError for malformed sizes.
  explicit AvgPool2d(const AvgPool2dOptions& options);
  Tensor forward(const Tensor& input) override;
  /// "kernel_size=2, stride=2, padding=0"
  std::string extra_repr() const override;
  /// The options.
  const AvgPool2dOptions& options() const { return options_; }

 private:
  AvgPool2dOptions options_;
};

/// Average pooling to a fixed output size, as torch.nn.AdaptiveAvgPool2d.
class AdaptiveAvgPool2d : public UnaryModule {
 public:
  /// output_size: one value (square) or {oh, ow}, each positive.
  explicit AdaptiveAvgPool2d(const Shape& output_size);
  /// A square output_size x output_size output.
  explicit AdaptiveAvgPool2d(std::int64_t output_size) : AdaptiveAvgPool2d(Shape{output_size}) {}
  Tensor forward(const Tensor& input) override;
  /// "output_size=1" or "output_size=(3, 2)"
  std::string extra_repr() const override;
  /// {oh, ow}, or one value for both.
  const Shape& output_size() const { return output_size_; }

 private:
  Shape output_size_;
};

}  // namespace qgrad::nn
