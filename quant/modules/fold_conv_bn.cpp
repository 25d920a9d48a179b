// Folding BatchNorm2d into Conv2d: the folded weight and bias, written into a fresh Conv2d.
#include "quant/modules/fold_conv_bn.h"

#include "core/autograd/grad_mode.h"
#include "ops/binary/binary.h"
#include "ops/unary/unary.h"

namespace qgrad::quant {

namespace {

// The folded conv of weight w / bias b (undefined = none) and an eval-mode bn.
std::shared_ptr<nn::Conv2d> folded(const nn::Conv2dOptions& options, const Tensor& w,
                                   const Tensor& b, const nn::BatchNormBase& bn, bool training,
                                   const char* op) {
  const std::string why = conv_bn_mismatch(options.out_channels_, bn);
  QGRAD_CHECK(why.empty(), ValueError, op, ": cannot fold: ", why);
  NoGradGuard no_grad;
  const std::int64_t c = options.out_channels_;
  // The same expression as QuantConvBn2d::scale_factor, so W' is the tensor its quantizer saw.
  const Tensor s = bn.weight() / sqrt(bn.running_var() + bn.options().eps_);
  const Tensor w2 = w * s.view({c, 1, 1, 1});
  const Tensor shifted = b.defined() ? b - bn.running_mean() : neg(bn.running_mean());
  const Tensor b2 = shifted * s + bn.bias();

  nn::Conv2dOptions o = options;
  o.bias(true);
  Generator unused(0);  // the initial values are overwritten below
  auto conv = std::make_shared<nn::Conv2d>(o, unused);
  conv->to(w.dtype());
  conv->to(w.device());
  Tensor cw = conv->weight(), cb = conv->bias();  // handles on the layer's own tensors
  cw.copy_(w2);
  cb.copy_(b2);
  conv->train(training);
  return conv;
}

}  // namespace

std::shared_ptr<nn::Conv2d> fold_conv_bn(const nn::Conv2d& conv, const nn::BatchNorm2d& bn) {
  return folded(conv.options(), conv.weight(), conv.bias(), bn, conv.is_training(), "fold_conv_bn");
}

std::shared_ptr<nn::Conv2d> fold_conv_bn(const QuantConvBn2d& fused) {
  return folded(fused.options(), fused.weight(), fused.bias(), *fused.bn(), fused.is_training(),
                "fold_conv_bn");
}

std::shared_ptr<QuantConv2d> fold_quant_conv_bn(const QuantConvBn2d& fused) {
  const auto conv = folded(fused.options(), fused.weight(), fused.bias(), *fused.bn(),
                           fused.is_training(), "fold_quant_conv_bn");
  return QuantConv2d::from_float(*conv, fused.input_quantizer(), fused.weight_quantizer());
}

}  // namespace qgrad::quant
