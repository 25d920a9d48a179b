// Tutorial chapter 3 (docs/tutorial.md): observers turn statistics into scale and zero point. A
// MinMax observer and a moving-average MinMax observer (qgrad's quant::Observer modules, torch.ao's
// observers) watch the same four batches, one of which holds an outlier. The running statistics
// are recomputed by hand (min of mins; m = m + c * (batch_m - m) in float32), turned into qparams
// with chapter 1's affine rule (affine_qparams.h) and compared exactly with calculate_qparams();
// the quantization error of a typical batch under both shows why the moving average is the QAT
// default for activations. A mismatch makes the program exit with status 1.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "affine_qparams.h"
#include "qgrad.h"
#include "tutorial_check.h"

using namespace qgrad;

int main() {
  tutorial::Check check;

  // [tutorial:observers]
  quant::ObserverConfig minmax_config;
  minmax_config.kind = quant::ObserverKind::MinMax;
  quant::ObserverConfig moving_config;  // kind MovingAverageMinMax, quint8 [0, 255], affine
  moving_config.averaging_constant = 0.1;
  quant::Observer minmax(minmax_config), moving(moving_config);

  const std::vector<Tensor> batches = {tensor({-0.8, 0.1, 1.9}), tensor({-1.0, 0.4, 2.1}),
                                       tensor({-9.0, 0.0, 2.0}),  // one outlier
                                       tensor({-0.9, 0.3, 2.0})};
  for (const Tensor& batch : batches) {
    minmax.forward(batch);  // records statistics, returns the batch unchanged
    moving.forward(batch);
  }
  const ao::QParams minmax_qp = minmax.calculate_qparams();
  const ao::QParams moving_qp = moving.calculate_qparams();
  // [/tutorial:observers]

  // The statistics by hand, in float32 like the observers.
  float run_min = INFINITY, run_max = -INFINITY, avg_min = 0, avg_max = 0;
  const float c = 0.1f;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const std::vector<float> b = batches[i].to_vector<float>();
    const float bmin = *std::min_element(b.begin(), b.end());
    const float bmax = *std::max_element(b.begin(), b.end());
    run_min = std::min(run_min, bmin);
    run_max = std::max(run_max, bmax);
    avg_min = i == 0 ? bmin : avg_min + c * (bmin - avg_min);
    avg_max = i == 0 ? bmax : avg_max + c * (bmax - avg_max);
  }
  const tutorial::AffineQParams minmax_hand = tutorial::affine_qparams(run_min, run_max, 0, 255);
  const tutorial::AffineQParams moving_hand = tutorial::affine_qparams(avg_min, avg_max, 0, 255);

  std::printf("MinMax:        min %.8g max %.8g -> scale %.8g zero_point %lld\n",
              minmax.min_val().item<double>(), minmax.max_val().item<double>(),
              minmax_qp.scale.item<double>(),
              static_cast<long long>(minmax_qp.zero_point.to_vector<std::int64_t>()[0]));
  std::printf("moving (0.1):  min %.8g max %.8g -> scale %.8g zero_point %lld\n",
              moving.min_val().item<double>(), moving.max_val().item<double>(),
              moving_qp.scale.item<double>(),
              static_cast<long long>(moving_qp.zero_point.to_vector<std::int64_t>()[0]));
  check.exact("MinMax statistics are the min / max over all batches",
              {minmax.min_val().item<float>(), minmax.max_val().item<float>()}, {run_min, run_max});
  check.exact("moving-average statistics follow m = m + c * (batch_m - m)",
              {moving.min_val().item<float>(), moving.max_val().item<float>()}, {avg_min, avg_max});
  check.exact("MinMax scale is chapter 1's rule", minmax_qp.scale.to_vector<float>(),
              {minmax_hand.scale});
  check.exact("moving-average scale is chapter 1's rule", moving_qp.scale.to_vector<float>(),
              {moving_hand.scale});
  check.that("zero points are chapter 1's rule",
             minmax_qp.zero_point.to_vector<std::int64_t>()[0] == minmax_hand.zero_point &&
                 moving_qp.zero_point.to_vector<std::int64_t>()[0] == moving_hand.zero_point);

  // [tutorial:observer_error]
  Tensor typical = tensor({-0.95, -0.5, 0.05, 0.3, 1.2, 1.85});
  auto mean_abs_error = [&](const ao::QParams& qp) {
    Tensor fq = ao::fake_quantize_per_tensor_affine(typical, qp.scale, qp.zero_point, 0, 255);
    return mean(abs(fq - typical)).item<double>();
  };
  const double err_minmax = mean_abs_error(minmax_qp), err_moving = mean_abs_error(moving_qp);
  // [/tutorial:observer_error]
  std::printf("mean |error| of a typical batch: MinMax %.6g, moving average %.6g\n", err_minmax,
              err_moving);
  check.that("the outlier costs MinMax precision: its error is larger", err_minmax > err_moving);
  // Inside the range the error is at most half a step, so it is bounded by scale / 2.
  check.that("each error is at most scale / 2",
             err_minmax <= minmax_hand.scale / 2 && err_moving <= moving_hand.scale / 2);
  return check.exit_code();
}
