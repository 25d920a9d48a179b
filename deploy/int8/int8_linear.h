// Int8Linear: a fully connected layer on integer data with oneDNN's int8 inner product: uint8 /
// int8 input on the grid `input`, int8 weights with one real scale per output feature, int32
// accumulation and requantisation to `output` (or float32 logits without it) in the same
// primitive. oneDNN 2.6's inner product has no zero-point attribute, so the input zero point is
// folded into the bias as the integer-GEMM libraries do (sum_k (x - zp) w = sum_k x w - zp sum_k
// w, exact in int32 and in the float bias up to 2^24), and the output zero point is a linear
// post-op before the clip (int8_post_ops.h). A 4-D input [N, C, H, W] (a Flatten before the
// layer, in any layout) is read as flattened in NCHW order, so the NHWC output of an int8
// convolution needs no reorder: an NHWC-contiguous one as the [N, H*W*C] matrix it is, with the
// weights' columns permuted to match once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "deploy/int8/int8_grid.h"
#include "deploy/int8/int8_layer.h"

namespace qgrad::quant {

struct Int8LinearSpec {
  std::string name;  // the source layer, for messages
  std::int64_t in_features = 0, out_features = 0;
  std::vector<std::int8_t> weight;   // [out, in], row-major
  std::vector<double> weight_scale;  // one per output feature, nonzero
  std::vector<double> bias;          // one per output feature in real units; empty: none
  Int8Grid input;
  std::optional<Int8Grid> output;  // none: float32 output
  bool relu = false;
};

class Int8Linear : public Int8Layer {
 public:
  explicit Int8Linear(Int8LinearSpec spec);  // ValueError naming spec.name for a bad spec
  ~Int8Linear() override;
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  const Int8LinearSpec& spec() const { return spec_; }

 private:
  struct Impl;
  Int8LinearSpec spec_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qgrad::quant
