// PACT's kernels (pact_kernels.h's signatures) written once for every device: pact_elem.h's
// elements run by the device's map (Map: cpu::Map or cuda::Map), the backward's dx and unreduced
// dalpha in one pass. Only .cpp / .cu files that register a kernel include this.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/map_outputs.h"
#include "core/tensor.h"
#include "quant/learnable/pact_elem.h"

namespace qgrad::learnable {

template <typename Map>
void pact_forward(const Tensor& x, const Tensor& alpha, std::int64_t levels, const Tensor& y) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "pact", [&] {
    using T = scalar_t;
    Map::template run<T, T, T>("pact", PactForwardElem<T>{static_cast<T>(levels), levels > 0}, y, x,
                               alpha);
  });
}

template <typename Map>
void pact_backward(const Tensor& dy, const Tensor& x, const Tensor& alpha, const Tensor& dx,
                   const Tensor& dalpha) {
  QGRAD_DISPATCH_FLOAT(x.dtype(), "pact backward", [&] {
    using T = scalar_t;
    Map::template run_outputs<Outputs<T, T>, T, T, T>("pact backward", PactBackwardElem<T>{},
                                                      {dx, dalpha}, dy, x, alpha);
  });
}

}  // namespace qgrad::learnable
