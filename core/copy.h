// Raw data movement between tensors, below autograd: strided copy with dtype conversion, fill,
// and host/device transfers. Used by Tensor's clone/contiguous/to/copy_/fill_.
#pragma once

#include "core/tensor.h"

namespace qgrad {

// dst and src have the same shape and device; converts dtype; handles any strides.
void copy_into(const Tensor& src, const Tensor& dst);
void fill_tensor(const Tensor& dst, double value);
// src contiguous; dst contiguous, same shape/dtype, other device.
void copy_between_devices(const Tensor& src, const Tensor& dst);

}  // namespace qgrad
