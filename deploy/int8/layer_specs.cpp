// The int8 specs of single quantized layers, shared by quant::convert's chain and graph walks.
#include "deploy/int8/layer_specs.h"

#include <utility>

#include "core/error.h"
#include "core/shape.h"
#include "deploy/common/bn_affine.h"
#include "deploy/common/layer_geometry.h"
#include "nn/modules/batchnorm.h"
#include "quant/modules/fold_conv_bn.h"
#include "quant/modules/int32_bias.h"
#include "quant/modules/quant_add.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_conv_bn2d.h"
#include "quant/modules/quant_linear.h"

namespace qgrad::quant::convert_detail {

namespace {

// A layer's weight on its int8 grid with one real scale per output channel (axis 0).
struct IntWeight {
  std::vector<std::int8_t> values;
  std::vector<double> scale;
};

IntWeight int_weight(const std::shared_ptr<nn::UnaryModule>& quantizer, const Tensor& w,
                     const std::string& where) {
  const std::string q = where + " weight quantizer";
  QGRAD_CHECK(quantizer != nullptr, ValueError, kOp, ": ", q,
              " is missing: float weights cannot run in an int8 layer");
  const quant::QdqParams p = params_of(*quantizer, q);
  QGRAD_CHECK(!p.identity, ValueError, kOp, ": ", q,
              " is disabled: float weights cannot run in an int8 layer");
  QGRAD_CHECK(!p.is_uint8(), ValueError, kOp, ": ", q, ": the weight grid [", p.quant_min, ", ",
              p.quant_max, "] is unsigned; oneDNN's int8 layers take int8 weights");
  for (std::int32_t z : p.zero_point)
    QGRAD_CHECK(z == 0, ValueError, kOp, ": ", q, ": weight zero point ", z,
                " is not 0 (oneDNN's int8 layers take symmetric weights)");
  const std::int64_t out = w.size(0);
  QGRAD_CHECK(!p.axis || (*p.axis == 0 && static_cast<std::int64_t>(p.scale.size()) == out),
              ValueError, kOp, ": ", q, ": per-channel weight scales must be along axis 0 (", out,
              " output channels), got ", p.scale.size(), " along axis ", p.axis ? *p.axis : -1);
  const std::vector<std::int32_t> ints = quant::quantize_weight(*quantizer, p, w, kOp, q);
  IntWeight r;
  r.values.assign(ints.begin(), ints.end());  // on [-128, 127]: qdq_params checked the grid
  for (std::int64_t c = 0; c < out; ++c) r.scale.push_back(p.scale[p.axis ? c : 0]);
  return r;
}

std::vector<double> bias_of(const Tensor& b, std::int64_t n, const std::string& where) {
  if (!b.defined()) return std::vector<double>(static_cast<std::size_t>(n), 0.0);
  QGRAD_CHECK(b.dim() == 1 && b.numel() == n, ShapeError, kOp, ": ", where, ": expected a bias of ",
              n, " elements (one per output channel), got shape ", shape_str(b.shape()));
  return b.detach().contiguous().to_vector<double>();
}

// The bias of a QuantConv2d / QuantLinear in real units. With its int32 bias on
// (int32_bias.h): the integers q training added, as q * s_in * s_w[c] in double, the
// accumulator unit the int8 layers divide by again (giving q to within double rounding).
template <typename Layer>
std::vector<double> real_bias(const Layer& l, std::int64_t n, float input_scale,
                              const std::vector<double>& weight_scale, const std::string& where) {
  std::vector<double> b = bias_of(l.bias(), n, where);
  const std::optional<std::vector<float>> scale = layer_bias_grid(l, kOp, where);
  if (!scale) return b;
  const std::vector<std::int32_t> q = int32_bias_values(l.bias(), *scale);
  for (std::int64_t c = 0; c < n; ++c)
    b[c] = static_cast<double>(q[c]) * (static_cast<double>(input_scale) * weight_scale[c]);
  return b;
}

}  // namespace

bool is_quantized_layer(const Item& item) {
  return is<QuantConv2d>(item) || is<QuantConvBn2d>(item) || is<QuantLinear>(item);
}

QdqParams params_of(const nn::UnaryModule& quantizer, const std::string& where) {
  return quant::any_qdq_params(quantizer, kOp, where);
}

Int8Grid input_grid(const std::shared_ptr<nn::UnaryModule>& quantizer, const std::string& where) {
  QGRAD_CHECK(quantizer != nullptr, ValueError, kOp, ": ", where,
              " has no input quantizer: its float input cannot feed an int8 layer");
  const std::string q = where + " input quantizer";
  return Int8Grid::from_params(params_of(*quantizer, q), q);
}

const std::shared_ptr<nn::UnaryModule>& require_quantizer(const std::shared_ptr<nn::UnaryModule>& q,
                                                          const std::string& where) {
  QGRAD_CHECK(q != nullptr, ValueError, kOp, ": ", where,
              " has no quantizer: a float input cannot feed an int8 layer");
  return q;
}

std::shared_ptr<nn::UnaryModule> input_quantizer_of(const nn::Module& m) {
  if (const auto* c = dynamic_cast<const QuantConv2d*>(&m)) return c->input_quantizer();
  if (const auto* c = dynamic_cast<const QuantConvBn2d*>(&m)) return c->input_quantizer();
  if (const auto* l = dynamic_cast<const QuantLinear*>(&m)) return l->input_quantizer();
  return nullptr;
}

Int8Conv2dSpec conv_spec(const Item& conv_item, const Item* bn_item, bool relu,
                         std::optional<Int8Grid> output) {
  const std::string where = describe(conv_item);
  std::shared_ptr<QuantConv2d> conv;
  if (const auto* f = dynamic_cast<const QuantConvBn2d*>(conv_item.second.get()))
    conv = fold_quant_conv_bn(*f);  // the folded weight, sharing the quantizers
  else
    conv = std::dynamic_pointer_cast<QuantConv2d>(conv_item.second);
  QGRAD_CHECK(conv != nullptr, ValueError, kOp, ": ", where,
              " is not a quantized convolution (QuantConv2d or QuantConvBn2d)");
  const nn::Conv2dOptions& o = conv->options();
  Int8Conv2dSpec s;
  deploy::set_conv_geometry(s, o, kOp, where);
  s.input = input_grid(conv->input_quantizer(), where);
  IntWeight w = int_weight(conv->weight_quantizer(), conv->weight(), where);
  s.weight = std::move(w.values);
  s.weight_scale = std::move(w.scale);
  s.bias = real_bias(*conv, s.out_channels, s.input.scale, s.weight_scale, where);
  if (bn_item != nullptr) {
    // Float BN after the quantized conv: y = k * (conv + b) + c, so the per-channel scale of
    // the integer accumulator gains k and the bias becomes k * b + c.
    const auto& bn = dynamic_cast<const nn::BatchNorm2d&>(*bn_item->second);
    const deploy::BnAffine a = deploy::bn_affine(bn, kOp, describe(*bn_item));
    QGRAD_CHECK(static_cast<std::int64_t>(a.k.size()) == s.out_channels, ValueError, kOp, ": ",
                describe(*bn_item), " has ", a.k.size(), " features but ", where, " has ",
                s.out_channels, " output channels");
    for (std::int64_t c = 0; c < s.out_channels; ++c) {
      QGRAD_CHECK(a.k[c] != 0, ValueError, kOp, ": ", describe(*bn_item), ": channel ", c,
                  " has gamma 0 (a constant channel has no int8 scale)");
      s.weight_scale[c] *= a.k[c];
      s.bias[c] = s.bias[c] * a.k[c] + a.c[c];
    }
  }
  s.relu = relu;
  s.output = output;
  return s;
}

ResidualAdd residual_add(Item add_item) {
  ResidualAdd r{std::move(add_item), {}, {}};
  const auto* qa = dynamic_cast<const QuantAdd*>(r.item.second.get());
  QGRAD_CHECK(qa != nullptr, ValueError, kOp, ": ", describe(r.item),
              " is not quantized (a QuantAdd): the residual add cannot run in int8");
  const std::string in0 = describe(r.item) + " input 0 quantizer";
  const std::string in1 = describe(r.item) + " input 1 quantizer";
  r.input0 =
      Int8Grid::from_params(params_of(*require_quantizer(qa->input0_quantizer(), in0), in0), in0);
  r.input1 =
      Int8Grid::from_params(params_of(*require_quantizer(qa->input1_quantizer(), in1), in1), in1);
  return r;
}

Int8LinearSpec linear_spec(const Item& item, bool relu, std::optional<Int8Grid> output) {
  const std::string where = describe(item);
  const auto* l = dynamic_cast<const QuantLinear*>(item.second.get());
  QGRAD_CHECK(l != nullptr, ValueError, kOp, ": ", where, " is not a QuantLinear");
  Int8LinearSpec s;
  s.name = where;
  s.input = input_grid(l->input_quantizer(), where);
  s.in_features = l->options().in_features_;
  s.out_features = l->options().out_features_;
  IntWeight w = int_weight(l->weight_quantizer(), l->weight(), where);
  s.weight = std::move(w.values);
  s.weight_scale = std::move(w.scale);
  s.bias = real_bias(*l, s.out_features, s.input.scale, s.weight_scale, where);
  s.relu = relu;
  s.output = std::move(output);
  return s;
}

Int8MaxPool2dSpec pool_spec(const Item& item, const nn::MaxPool2d& p) {
  Int8MaxPool2dSpec s;
  deploy::set_pool_geometry(s, p.options(), kOp, describe(item));
  return s;
}

}  // namespace qgrad::quant::convert_detail
