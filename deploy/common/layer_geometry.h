// The window geometry the deployment back ends read from a module and compute per input, shared
// by the int8 layers (deploy/int8) and the float inference layers (deploy/float_inference): a
// 1- or 2-value kernel / stride / padding as two values, a convolution's or max pool's options
// copied into a layer spec (any struct with the fields below), and a window's output extent with
// the right padding oneDNN wants for exactly that many positions.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/shape.h"
#include "nn/modules/conv.h"
#include "nn/modules/pooling.h"

namespace qgrad::deploy {

// {s[0], s[0]} or {s[0], s[1]}; ValueError "<op>: <where>: <what> must have 1 or 2 values".
std::array<std::int64_t, 2> pair_of(const Shape& s, const std::string& op, const std::string& where,
                                    const char* what);

// Sets spec.name (`where`), in/out channels, groups, kernel, stride, padding and dilation.
template <typename Spec>
void set_conv_geometry(Spec& spec, const nn::Conv2dOptions& o, const std::string& op,
                       const std::string& where) {
  spec.name = where;
  spec.in_channels = o.in_channels_;
  spec.out_channels = o.out_channels_;
  spec.groups = o.groups_;
  spec.kernel = pair_of(o.kernel_size_, op, where, "kernel_size");
  spec.stride = pair_of(o.stride_, op, where, "stride");
  spec.padding = pair_of(o.padding_, op, where, "padding");
  spec.dilation = pair_of(o.dilation_, op, where, "dilation");
}

// Sets spec.name, kernel, stride (the kernel when unset), padding, dilation and ceil_mode.
template <typename Spec>
void set_pool_geometry(Spec& spec, const nn::MaxPool2dOptions& o, const std::string& op,
                       const std::string& where) {
  spec.name = where;
  spec.kernel = pair_of(o.kernel_size_, op, where, "kernel_size");
  spec.stride = pair_of(o.stride_.empty() ? o.kernel_size_ : o.stride_, op, where, "stride");
  spec.padding = pair_of(o.padding_, op, where, "padding");
  spec.dilation = pair_of(o.dilation_, op, where, "dilation");
  spec.ceil_mode = o.ceil_mode_;
}

// The output positions of a window sliding over `in` values and the right padding that gives
// exactly that many; valid is false when the padded input is smaller than the window. With
// ceil_mode (pooling), PyTorch's rule: the last window must start inside the input or the left
// padding.
struct WindowExtent {
  std::int64_t out = 0, pad_right = 0;
  bool valid = false;
};
WindowExtent window_extent(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                           std::int64_t padding, std::int64_t dilation, bool ceil_mode = false);

}  // namespace qgrad::deploy
