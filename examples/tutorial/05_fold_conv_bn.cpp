// Tutorial chapter 5 (docs/tutorial.md): folding a batch norm into the convolution before it. In
// eval mode BN is a fixed per-channel affine map, y = (z - mu) * gamma / sigma + beta with
// sigma = sqrt(running_var + eps), so it can be merged into the conv: W' = W * gamma / sigma and
// b' = (b - mu) * gamma / sigma + beta (quant::fold_conv_bn). The example gives a BN non-trivial
// statistics, recomputes W' and b' by hand, checks them against fold_conv_bn's conv, checks that
// the folded conv computes conv + BN in eval mode, and shows that in training mode (batch
// statistics) the two differ. A mismatch makes the program exit with status 1.
#include <cmath>
#include <cstdio>
#include <vector>

#include "qgrad.h"
#include "tutorial_check.h"

using namespace qgrad;

int main() {
  tutorial::Check check;

  // [tutorial:fold]
  Generator gen(0);
  nn::Conv2d conv(nn::Conv2dOptions(3, 4, 3).padding(1), gen);
  nn::BatchNorm2d bn(nn::BatchNormOptions(4));
  {  // what training would have left in the BN: statistics and affine parameters
    NoGradGuard no_grad;
    bn.running_mean().detach().copy_(randn({4}, gen) * 0.5);
    bn.running_var().detach().copy_(rand({4}, gen) + 0.5);
    bn.weight().detach().copy_(rand({4}, gen) + 0.5);  // gamma
    bn.bias().detach().copy_(randn({4}, gen) * 0.1);   // beta
  }
  conv.eval();
  bn.eval();  // BN uses its running statistics: a fixed affine map per channel

  std::shared_ptr<nn::Conv2d> folded = quant::fold_conv_bn(conv, bn);
  Tensor x = randn({2, 3, 6, 6}, gen);
  Tensor reference = bn.forward(conv.forward(x));
  Tensor y = folded->forward(x);
  // [/tutorial:fold]

  // W' and b' by hand, channel by channel.
  const std::vector<float> w = conv.weight().to_vector<float>(), b = conv.bias().to_vector<float>();
  const std::vector<float> mu = bn.running_mean().to_vector<float>();
  const std::vector<float> var = bn.running_var().to_vector<float>();
  const std::vector<float> gamma = bn.weight().to_vector<float>();
  const std::vector<float> beta = bn.bias().to_vector<float>();
  const float eps = static_cast<float>(bn.options().eps_);
  const std::size_t per_channel = w.size() / 4;
  std::vector<float> w_hand, b_hand;
  for (std::size_t c = 0; c < 4; ++c) {
    const float s = gamma[c] / std::sqrt(var[c] + eps);
    for (std::size_t k = 0; k < per_channel; ++k) w_hand.push_back(w[c * per_channel + k] * s);
    b_hand.push_back((b[c] - mu[c]) * s + beta[c]);
    std::printf("channel %zu: gamma/sigma = %.8g, b = %+.6f -> b' = %+.6f\n", c,
                static_cast<double>(s), static_cast<double>(b[c]),
                static_cast<double>(b_hand.back()));
  }
  check.exact("W' = W * gamma / sigma", folded->weight().to_vector<float>(), w_hand);
  check.exact("b' = (b - mu) * gamma / sigma + beta", folded->bias().to_vector<float>(), b_hand);
  const double diff = amax(abs(y - reference)).item<double>();
  const double size = amax(abs(reference)).item<double>();
  std::printf("eval mode:     max |folded - conv+BN| = %.3g (outputs up to %.3g)\n", diff, size);
  check.that("in eval mode the folded conv equals conv + BN (float rounding only)",
             diff <= 1e-5 * size);

  // In training mode BN normalises with the batch's own statistics, which no fixed W', b' can
  // reproduce: folding is an inference-time identity.
  bn.train();
  const double train_diff = amax(abs(y - bn.forward(conv.forward(x)))).item<double>();
  std::printf("training mode: max |folded - conv+BN| = %.3g\n", train_diff);
  check.that("in training mode (batch statistics) they differ", train_diff > 1e-2);
  return check.exit_code();
}
