// Pooling layers, as torch.nn.MaxPool2d, AvgPool2d and AdaptiveAvgPool2d: parameter-free
// wrappers over ops/pool that keep their settings and print them the way PyTorch does (a value
// given as one number prints as a number, two as a tuple; an unset stride prints as the kernel).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "nn/unary_module.h"

namespace qgrad::nn {

// kernel_size/stride/padding/dilation: one value for both spatial dims or {h, w}; an unset
// (empty) stride means stride = kernel_size.
//   MaxPool2d(MaxPool2dOptions(3).stride(2).padding(1))
struct MaxPool2dOptions {
  MaxPool2dOptions(const Shape& kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  MaxPool2dOptions(std::int64_t kernel_size) : kernel_size_{kernel_size} {}  // NOLINT
  MaxPool2dOptions& stride(const Shape& s) {
    stride_ = s;
    return *this;
  }
  MaxPool2dOptions& stride(std::int64_t s) { return stride(Shape{s}); }
  MaxPool2dOptions& padding(const Shape& p) {
    padding_ = p;
    return *this;
  }
  MaxPool2dOptions& padding(std::int64_t p) { return padding(Shape{p}); }
  MaxPool2dOptions& dilation(const Shape& d) {
    dilation_ = d;
    return *this;
  }
  MaxPool2dOptions& dilation(std::int64_t d) { return dilation(Shape{d}); }
  MaxPool2dOptions& ceil_mode(bool c) {
    ceil_mode_ = c;
    return *this;
  }

  Shape kernel_size_;
  Shape stride_;
  Shape padding_{0};
  Shape dilation_{1};
  bool ceil_mode_ = false;
};

struct AvgPool2dOptions {
  AvgPool2dOptions(const Shape& kernel_size) : kernel_size_(kernel_size) {}  // NOLINT
  AvgPool2dOptions(std::int64_t kernel_size) : kernel_size_{kernel_size} {}  // NOLINT
  AvgPool2dOptions& stride(const Shape& s) {
    stride_ = s;
    return *this;
  }
  AvgPool2dOptions& stride(std::int64_t s) { return stride(Shape{s}); }
  AvgPool2dOptions& padding(const Shape& p) {
    padding_ = p;
    return *this;
  }
  AvgPool2dOptions& padding(std::int64_t p) { return padding(Shape{p}); }
  AvgPool2dOptions& ceil_mode(bool c) {
    ceil_mode_ = c;
    return *this;
  }
  AvgPool2dOptions& count_include_pad(bool c) {
    count_include_pad_ = c;
    return *this;
  }
  AvgPool2dOptions& divisor_override(std::optional<std::int64_t> d) {
    divisor_override_ = d;
    return *this;
  }

  Shape kernel_size_;
  Shape stride_;
  Shape padding_{0};
  bool ceil_mode_ = false;
  bool count_include_pad_ = true;
  std::optional<std::int64_t> divisor_override_;
};

class MaxPool2d : public UnaryModule {
 public:
  // Throws ValueError for malformed sizes (count, sign, padding over half the kernel).
  explicit MaxPool2d(const MaxPool2dOptions& options);
  Tensor forward(const Tensor& input) override;
  // "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False"
  std::string extra_repr() const override;
  const MaxPool2dOptions& options() const { return options_; }  // stride filled in

 private:
  MaxPool2dOptions options_;
};

class AvgPool2d : public UnaryModule {
 public:
  explicit AvgPool2d(const AvgPool2dOptions& options);
  Tensor forward(const Tensor& input) override;
  // "kernel_size=2, stride=2, padding=0"
  std::string extra_repr() const override;
  const AvgPool2dOptions& options() const { return options_; }

 private:
  AvgPool2dOptions options_;
};

class AdaptiveAvgPool2d : public UnaryModule {
 public:
  // output_size: one value (square) or {oh, ow}, each positive.
  explicit AdaptiveAvgPool2d(const Shape& output_size);
  explicit AdaptiveAvgPool2d(std::int64_t output_size) : AdaptiveAvgPool2d(Shape{output_size}) {}
  Tensor forward(const Tensor& input) override;
  // "output_size=1" or "output_size=(3, 2)"
  std::string extra_repr() const override;
  const Shape& output_size() const { return output_size_; }

 private:
  Shape output_size_;
};

}  // namespace qgrad::nn
