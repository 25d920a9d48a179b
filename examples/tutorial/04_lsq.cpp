// Tutorial chapter 4 (docs/tutorial.md): LSQ learns the step size. learnable::lsq_quantize
// (Esser et al., ICLR 2020; docs/quantization.md section 5) gives the step s a gradient: for
// every element, rne(v/s) - v/s inside the grid and -Q_N or Q_P where clipped, times the upstream
// gradient and the gradient scale g = 1 / sqrt(N * Q_P). The example quantizes 64 random weights to
// signed 3 bits, takes the quantization error as the loss, recomputes ds by hand and checks
// s.grad(), checks that one SGD step moves s to s - lr * ds and that the loss went down, then runs
// a few more steps. A mismatch makes the program exit with status 1.
#include <cmath>
#include <cstdio>
#include <vector>

#include "qgrad.h"
#include "tutorial_check.h"

using namespace qgrad;

int main() {
  tutorial::Check check;

  // [tutorial:lsq_step]
  Generator gen(0);
  Tensor v = randn({64}, gen);        // the weights of a small layer
  const std::int64_t qn = 4, qp = 3;  // signed 3 bits: levels -4 .. 3
  // LSQ's initial step 2 mean|v| / sqrt(qp), and its gradient scale 1 / sqrt(N * qp)
  Tensor s = full({1}, learnable::lsq_init_scale(v, qp)).set_requires_grad();
  const double g = learnable::lsq_grad_scale(v.numel(), qp);
  optim::SGD sgd({s}, optim::SGDOptions(/*lr=*/0.5));

  auto quantization_loss = [&] {
    return mean(pow(learnable::lsq_quantize(v, s, qn, qp, g) - v, 2.0));
  };
  Tensor loss = quantization_loss();
  loss.backward();
  const float s0 = s.item<float>(), ds = s.grad().item<float>();
  sgd.step();  // s = s - lr * ds
  // [/tutorial:lsq_step]

  // ds by hand: dL/dv_hat = 2 (v_hat - v) / N, then LSQ's rule per element.
  const std::vector<float> vs = v.to_vector<float>();
  const double n = static_cast<double>(vs.size());
  double ds_hand = 0;
  for (float vi : vs) {
    const float r = vi / s0;
    const float level = std::fmin(std::fmax(r, -float(qn)), float(qp));
    const double v_hat = std::nearbyint(level) * s0;
    const double dy = 2 * (v_hat - vi) / n;
    const double dv_hat_ds = r <= -qn ? -double(qn) : r >= qp ? double(qp) : std::nearbyint(r) - r;
    ds_hand += dy * dv_hat_ds;
  }
  ds_hand *= g;
  const float s1 = s.item<float>();
  const double loss0 = loss.item<double>();
  const double loss1 = [&] {
    NoGradGuard no_grad;
    return quantization_loss().item<double>();
  }();
  std::printf("s = %.8g (2 mean|v| / sqrt(3)), g = %.8g, ds = %.8g (by hand %.8g)\n",
              static_cast<double>(s0), g, static_cast<double>(ds), ds_hand);
  std::printf("one SGD step: s %.8g -> %.8g, loss %.8g -> %.8g\n", static_cast<double>(s0),
              static_cast<double>(s1), loss0, loss1);
  check.near("s.grad() is LSQ's step gradient computed by hand", ds, ds_hand, 1e-7);
  check.near("the step moved s by -lr * ds", s1, s0 - 0.5f * ds, 1e-7);
  check.that("the quantization error went down", loss1 < loss0);

  // A few more steps: the step keeps moving until the rounding and clipping errors balance.
  double last = loss1;
  bool decreasing = true, shrinking = true;
  for (int step = 2; step <= 10; ++step) {
    sgd.zero_grad();
    Tensor l = quantization_loss();
    l.backward();
    const float before = s.item<float>();
    sgd.step();
    shrinking = shrinking && s.item<float>() < before;
    decreasing = decreasing && l.item<double>() <= last * (1 + 1e-6);
    last = l.item<double>();
  }
  std::printf("after 10 steps: s %.8g, loss %.8g\n", s.item<double>(), last);
  check.that("the loss did not go up over the next steps", decreasing);
  check.that("s kept shrinking over the next steps", shrinking);
  return check.exit_code();
}
