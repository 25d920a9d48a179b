// The `qgrad eval --int8` pass: a QAT model's fake-quantized forward and its int8 conversion
// (quant::convert, deploy/int8) on the same test batches, giving each one's accuracy and
// throughput (images per second of forward time only, after one untimed warm-up batch each, so
// data loading and oneDNN's primitive creation are left out), the top-1 agreement between them
// and their largest logit difference. The fake-quantized model runs in eval mode without autograd
// and with its quantizer statistics frozen, as `qgrad eval` runs it.
#pragma once

#include <cstdint>

#include "deploy/int8/int8_model.h"
#include "nn/data/dataloader.h"
#include "nn/unary_module.h"

namespace qgrad::cli {

struct Int8Comparison {
  std::int64_t count = 0;
  std::int64_t fake_quant_correct = 0, int8_correct = 0;
  std::int64_t agree = 0;  // rows whose argmax is the same in both
  std::int64_t nonfinite_fake_quant = 0, nonfinite_int8 = 0;  // NaN or infinite logits
  double max_logit_diff = 0;  // max |int8 - fake quant| over every logit; NaN if one is not finite
  double max_abs_logit = 0;   // max |fake quant| logit
  double fake_quant_time_s = 0;  // forward time only
  double int8_time_s = 0;
};

Int8Comparison compare_int8(nn::UnaryModule& model, quant::Int8Model& int8,
                            data::DataLoader& loader);

}  // namespace qgrad::cli
