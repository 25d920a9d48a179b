// The fake-quant vs int8 evaluation pass of `qgrad eval --int8`.
#include "cli/int8_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "cli/evaluate.h"
#include "cli/logit_agreement.h"
#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "ops/reduce/reduce.h"
#include "quant/modules/frozen_quantizer_statistics.h"

namespace qgrad::cli {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Int8Comparison compare_int8(nn::UnaryModule& model, quant::Int8Model& int8,
                            data::DataLoader& loader) {
  NoGradGuard no_grad;
  model.eval();
  quant::FrozenQuantizerStatistics frozen(model);
  Int8Comparison r;
  LogitDifference diff;  // int8 against fake quant, over every batch
  bool warm = false;
  while (std::optional<data::Batch> b = loader.next()) {
    if (!warm) {  // builds both models' oneDNN primitives outside the timed region
      model.forward(b->data);
      int8.forward(b->data);
      warm = true;
    }
    auto start = std::chrono::steady_clock::now();
    const Tensor fq = model.forward(b->data);
    r.fake_quant_time_s += seconds_since(start);
    start = std::chrono::steady_clock::now();
    const Tensor q = int8.forward(b->data);
    r.int8_time_s += seconds_since(start);

    r.count += b->target.size(0);
    r.fake_quant_correct += count_correct(fq, b->target);
    r.int8_correct += count_correct(q, b->target);
    const std::vector<std::int64_t> a = argmax(fq, 1).to_vector<std::int64_t>();
    const std::vector<std::int64_t> c = argmax(q, 1).to_vector<std::int64_t>();
    for (std::size_t i = 0; i < a.size(); ++i) r.agree += a[i] == c[i];
    const std::vector<float> fv = fq.contiguous().to_vector<float>();
    const std::vector<float> qv = q.to_vector<float>();
    QGRAD_CHECK(fv.size() == qv.size(), ValueError, "eval --int8: ", fv.size(),
                " fake-quant logits against ", qv.size(), " int8 logits");
    for (const float v : fv)
      if (std::isfinite(v)) r.max_abs_logit = std::max(r.max_abs_logit, double(std::abs(v)));
    diff.add(fv.data(), qv.data(), fv.size());
  }
  r.nonfinite_fake_quant = diff.nonfinite_a;
  r.nonfinite_int8 = diff.nonfinite_b;
  r.max_logit_diff = diff.max();
  return r;
}

}  // namespace qgrad::cli
