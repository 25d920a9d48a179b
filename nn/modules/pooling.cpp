// Pooling layers: construction-time checks, PyTorch-style printouts and forwarding to ops/pool.
#include "nn/modules/pooling.h"

#include "nn/repr_format.h"
#include "ops/pool/pool.h"

namespace qgrad::nn {

namespace {

void check_sizes(const char* layer, const char* what, const Shape& v, std::int64_t min) {
  QGRAD_CHECK(v.size() == 1 || v.size() == 2, ValueError, layer, ": ", what,
              " must have 1 or 2 values, got ", shape_str(v));
  for (auto x : v)
    QGRAD_CHECK(x >= min, ValueError, layer, ": ", what, " must be >= ", min, ", got ",
                shape_str(v));
}

std::int64_t dim_value(const Shape& v, std::size_t i) {
  return v.size() == 1 ? v[0] : v[i];
}

// Padding may be at most half the (effective) kernel in each dim, as PyTorch requires.
void check_padding(const char* layer, const Shape& kernel, const Shape& padding) {
  for (std::size_t i = 0; i < 2; ++i)
    QGRAD_CHECK(dim_value(padding, i) * 2 <= dim_value(kernel, i), ValueError, layer,
                ": padding should be at most half of kernel size, got padding=", shape_str(padding),
                " kernel_size=", shape_str(kernel));
}

// Python's printout of an int or a tuple of ints.
std::string py_ints(const Shape& v) {
  if (v.size() == 1) return std::to_string(v[0]);
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

}  // namespace

MaxPool2d::MaxPool2d(const MaxPool2dOptions& options)
    : UnaryModule("MaxPool2d"), options_(options) {
  if (options_.stride_.empty()) options_.stride_ = options_.kernel_size_;
  check_sizes("MaxPool2d", "kernel_size", options_.kernel_size_, 1);
  check_sizes("MaxPool2d", "stride", options_.stride_, 1);
  check_sizes("MaxPool2d", "padding", options_.padding_, 0);
  check_sizes("MaxPool2d", "dilation", options_.dilation_, 1);
  check_padding("MaxPool2d", options_.kernel_size_, options_.padding_);
}

Tensor MaxPool2d::forward(const Tensor& input) {
  return max_pool2d(input, options_.kernel_size_, options_.stride_, options_.padding_,
                    options_.dilation_, options_.ceil_mode_);
}

std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + py_ints(options_.kernel_size_) + ", stride=" + py_ints(options_.stride_) +
         ", padding=" + py_ints(options_.padding_) + ", dilation=" + py_ints(options_.dilation_) +
         ", ceil_mode=" + py_bool(options_.ceil_mode_);
}

AvgPool2d::AvgPool2d(const AvgPool2dOptions& options)
    : UnaryModule("AvgPool2d"), options_(options) {
  if (options_.stride_.empty()) options_.stride_ = options_.kernel_size_;
  check_sizes("AvgPool2d", "kernel_size", options_.kernel_size_, 1);
  check_sizes("AvgPool2d", "stride", options_.stride_, 1);
  check_sizes("AvgPool2d", "padding", options_.padding_, 0);
  check_padding("AvgPool2d", options_.kernel_size_, options_.padding_);
  QGRAD_CHECK(!options_.divisor_override_ || *options_.divisor_override_ > 0, ValueError,
              "AvgPool2d: divisor_override must be positive, got ",
              options_.divisor_override_.value_or(0));
}

Tensor AvgPool2d::forward(const Tensor& input) {
  return avg_pool2d(input, options_.kernel_size_, options_.stride_, options_.padding_,
                    options_.ceil_mode_, options_.count_include_pad_, options_.divisor_override_);
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + py_ints(options_.kernel_size_) + ", stride=" + py_ints(options_.stride_) +
         ", padding=" + py_ints(options_.padding_);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(const Shape& output_size)
    : UnaryModule("AdaptiveAvgPool2d"), output_size_(output_size) {
  check_sizes("AdaptiveAvgPool2d", "output_size", output_size_, 1);
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
  return adaptive_avg_pool2d(input, output_size_);
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return "output_size=" + py_ints(output_size_);
}

}  // namespace qgrad::nn
