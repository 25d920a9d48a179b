// QuantConvBn2d: the folded-weight forward pass of fused Conv-BN QAT and the BN freeze switch.
#include "quant/modules/quant_conv_bn2d.h"

#include <vector>

#include "ops/binary/binary.h"
#include "ops/conv/conv.h"
#include "ops/unary/unary.h"
#include "quant/parameter_check_kernels.h"

namespace qgrad::quant {

std::string conv_bn_mismatch(std::int64_t out_channels, const nn::BatchNormBase& bn) {
  const nn::BatchNormOptions& o = bn.options();
  if (o.num_features_ != out_channels)
    return "the " + bn.name() + " has " + std::to_string(o.num_features_) +
           " features but the Conv2d has " + std::to_string(out_channels) + " output channels";
  if (!o.affine_) return "the " + bn.name() + " is not affine (affine=False)";
  if (!o.track_running_stats_)
    return "the " + bn.name() + " does not track running statistics (track_running_stats=False)";
  return "";
}

namespace {

std::shared_ptr<nn::BatchNorm2d> checked_bn(const nn::Conv2d& conv,
                                            std::shared_ptr<nn::BatchNorm2d> bn) {
  QGRAD_CHECK(bn != nullptr, ValueError, "QuantConvBn2d: bn is null");
  const std::string why = conv_bn_mismatch(conv.options().out_channels_, *bn);
  QGRAD_CHECK(why.empty(), ValueError, "QuantConvBn2d: cannot fuse: ", why);
  return bn;
}

}  // namespace

QuantConvBn2d::QuantConvBn2d(const nn::Conv2d& conv, std::shared_ptr<nn::BatchNorm2d> bn,
                             std::shared_ptr<nn::UnaryModule> input_quantizer,
                             std::shared_ptr<nn::UnaryModule> weight_quantizer)
    : nn::UnaryModule("QuantConvBn2d"), options_(conv.options()), repr_(conv.extra_repr()) {
  bn = checked_bn(conv, std::move(bn));
  weight_ = register_parameter("weight", conv.weight(), conv.weight().requires_grad());
  bias_ =
      register_parameter("bias", conv.bias(), conv.bias().defined() && conv.bias().requires_grad());
  // torch.ao's order: the BN before the weight quantizer.
  bn_ = register_module("bn", bn);
  if (input_quantizer) input_quantizer_ = register_module("_input_quantizer", input_quantizer);
  if (weight_quantizer) weight_quantizer_ = register_module("_weight_quantizer", weight_quantizer);
}

QuantConvBn2d::QuantConvBn2d(const nn::Conv2dOptions& conv_options,
                             const nn::BatchNormOptions& bn_options, Generator& gen,
                             std::shared_ptr<nn::UnaryModule> input_quantizer,
                             std::shared_ptr<nn::UnaryModule> weight_quantizer)
    : QuantConvBn2d(nn::Conv2d(conv_options, gen), std::make_shared<nn::BatchNorm2d>(bn_options),
                    std::move(input_quantizer), std::move(weight_quantizer)) {}

std::shared_ptr<QuantConvBn2d> QuantConvBn2d::from_float(
    const nn::Conv2d& conv, std::shared_ptr<nn::BatchNorm2d> bn,
    std::shared_ptr<nn::UnaryModule> input_quantizer,
    std::shared_ptr<nn::UnaryModule> weight_quantizer) {
  auto q = std::make_shared<QuantConvBn2d>(conv, std::move(bn), std::move(input_quantizer),
                                           std::move(weight_quantizer));
  q->train(conv.is_training());
  return q;
}

Tensor QuantConvBn2d::scale_factor() const {
  // The running variance is a buffer: only gamma carries a gradient.
  return bn_->weight() / sqrt(bn_->running_var() + bn_->options().eps_);
}

Tensor QuantConvBn2d::forward(const Tensor& input) {
  QGRAD_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 4), ShapeError,
              "QuantConvBn2d: expected a 3-D (unbatched) or 4-D (batched) input, got shape ",
              input.defined() ? shape_str(input.shape()) : std::string("(undefined)"));
  QGRAD_CHECK(input.size(input.dim() - 3) == options_.in_channels_, ShapeError,
              "QuantConvBn2d: expected input with ", options_.in_channels_,
              " channels (in_channels), got shape ", shape_str(input.shape()));
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const std::int64_t c = options_.out_channels_;
  const Tensor s = scale_factor();
  // Dividing by a zero factor would turn every output of that channel into NaN. Off the CPU a
  // kernel checks (an error at the host's next wait), so the host does not wait here.
  if (s.device().is_cpu()) {
    const std::vector<double> sv = s.detach().to_vector<double>();
    for (std::size_t i = 0; i < sv.size(); ++i)
      QGRAD_CHECK(sv[i] != 0, ValueError,
                  "QuantConvBn2d: bn.weight / sqrt(bn.running_var + eps) is zero in channel ", i,
                  " (bn.weight == 0?): the folded-weight forward divides by it");
  } else {
    static const KernelTable<quant::CheckParameterKernel>& checks =
        kernel_table(quant::kCheckParameterKernels);
    checks("QuantConvBn2d", s)("QuantConvBn2d", CheckedParameter::FoldedBnFactor,
                               ParameterRule::NonZero, s.detach());
  }
  const Tensor xq = input_quantizer_ ? input_quantizer_->forward(x) : x;
  const Tensor w = weight_ * s.view({c, 1, 1, 1});
  const Tensor wq = weight_quantizer_ ? weight_quantizer_->forward(w) : w;
  // No bias in the convolution: the conv bias is added after undoing the scale, as torch.ao
  // (its zero bias adds nothing).
  Tensor y = conv2d(xq, wq, Tensor(), options_.stride_, options_.padding_, options_.dilation_,
                    options_.groups_);
  y = y / s.view({1, c, 1, 1});
  if (bias_.defined()) y = y + bias_.view({1, c, 1, 1});
  y = bn_->forward(y);
  return batched ? y : y.squeeze(0);
}

std::string QuantConvBn2d::extra_repr() const {
  return repr_;
}

void QuantConvBn2d::train(bool on) {
  nn::UnaryModule::train(on);
  if (bn_frozen_) bn_->train(false);
}

void QuantConvBn2d::freeze_bn_stats() {
  bn_frozen_ = true;
  bn_->train(false);
}

void QuantConvBn2d::update_bn_stats() {
  bn_frozen_ = false;
  bn_->train(is_training());
}

void QuantConvBn2d::on_replace_child(const std::string& name,
                                     const std::shared_ptr<Module>& module) {
  if (name == "bn") {
    auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(module);
    QGRAD_CHECK(bn != nullptr, ValueError, "QuantConvBn2d::replace_module: replacement for 'bn' (",
                module->name(), ") is not a BatchNorm2d");
    const std::string why = conv_bn_mismatch(options_.out_channels_, *bn);
    QGRAD_CHECK(why.empty(), ValueError,
                "QuantConvBn2d::replace_module: replacement for 'bn': ", why);
    bn_ = bn;
    bn_->train(is_training() && !bn_frozen_);
    return;
  }
  auto unary = std::dynamic_pointer_cast<nn::UnaryModule>(module);
  QGRAD_CHECK(unary != nullptr, ValueError, "QuantConvBn2d::replace_module: replacement for '",
              name, "' (", module->name(), ") does not derive from UnaryModule");
  if (name == "_input_quantizer") input_quantizer_ = unary;
  if (name == "_weight_quantizer") weight_quantizer_ = unary;
}

std::size_t freeze_bn_stats(nn::Module& model) {
  std::size_t n = 0;
  model.apply([&](const std::string&, nn::Module& m) {
    if (auto* q = dynamic_cast<QuantConvBn2d*>(&m)) {
      q->freeze_bn_stats();
      ++n;
    }
  });
  return n;
}

std::size_t update_bn_stats(nn::Module& model) {
  std::size_t n = 0;
  model.apply([&](const std::string&, nn::Module& m) {
    if (auto* q = dynamic_cast<QuantConvBn2d*>(&m)) {
      q->update_bn_stats();
      ++n;
    }
  });
  return n;
}

}  // namespace qgrad::quant
