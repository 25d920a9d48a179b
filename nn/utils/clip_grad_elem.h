// clip_grad_norm_'s element-wise scaling, written once for both devices: g * (coef rounded to
// g's dtype), as torch multiplies by the clip coefficient tensor.
#pragma once

#include "core/host_device.h"
#include "nn/utils/clip_grad_kernels.h"

namespace qgrad::nn::utils::clip_grad_elem {

template <typename T>
struct Scale {
  T s;
  QGRAD_HD T operator()(T v) const { return v * s; }
};

// g *= coef in place, on the device whose element-wise driver is `Map`.
template <typename Map>
void scale(const Tensor& g, double coef) {
  QGRAD_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm_", [&] {
    Map::template run<scalar_t, scalar_t>("clip_grad_norm_",
                                          Scale<scalar_t>{static_cast<scalar_t>(coef)}, g, g);
  });
}

}  // namespace qgrad::nn::utils::clip_grad_elem
