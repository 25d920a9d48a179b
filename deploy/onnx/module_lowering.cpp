// ModuleLowering: the module-by-module mapping of qgrad layers to ONNX opset 13 nodes, BN
// folding, and the Q/DQ placement of quantization-aware layers.
#include "deploy/onnx/module_lowering.h"

#include <algorithm>
#include <cmath>
#include <typeinfo>
#include <unordered_map>

#include "core/error.h"
#include "core/shape.h"
#include "deploy/common/bn_affine.h"
#include "nn/models/basic_block.h"
#include "nn/models/inverted_residual.h"
#include "nn/modules/activation.h"
#include "nn/modules/add.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/dropout.h"
#include "nn/modules/flatten.h"
#include "nn/modules/graph.h"
#include "nn/modules/identity.h"
#include "nn/modules/linear.h"
#include "nn/modules/pooling.h"
#include "nn/modules/sequential.h"
#include "ops/binary/binary.h"
#include "ops/unary/unary.h"
#include "quant/modules/int32_bias.h"
#include "quant/modules/qdq_params.h"
#include "quant/modules/quant_add.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_conv_bn2d.h"
#include "quant/modules/quant_linear.h"

namespace qgrad::deploy {

namespace {

// How errors of the shared deploy helpers (deploy/common) name this back end.
constexpr const char kOp[] = "ONNX export";

std::string join(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

// A readable value-name base for the layer: "layer1.0.conv1", "input" for the root.
std::string base_of(const std::string& path) {
  return path.empty() ? "model" : path;
}

std::vector<std::int64_t> dims_of(const Tensor& t) {
  return std::vector<std::int64_t>(t.shape().begin(), t.shape().end());
}

std::vector<float> floats(const Tensor& t) {
  return t.detach().contiguous().to(DType::Float32).to_vector<float>();
}

// A spatial setting as {h, w}: qgrad keeps a single value for both dims as one entry.
std::vector<std::int64_t> v(const Shape& s) {
  QGRAD_CHECK(s.size() == 1 || s.size() == 2, ValueError,
              "ONNX export: a spatial setting must have 1 or 2 values, got ", shape_str(s));
  return s.size() == 1 ? std::vector<std::int64_t>{s[0], s[0]}
                       : std::vector<std::int64_t>{s[0], s[1]};
}

// ONNX pads: {h_begin, w_begin, h_end, w_end} from qgrad's symmetric {h, w}.
std::vector<std::int64_t> pads_of(const Shape& p) {
  const std::vector<std::int64_t> hw = v(p);
  return {hw[0], hw[1], hw[0], hw[1]};
}

}  // namespace

std::string describe_layer(const nn::Module& module, const std::string& path) {
  return path.empty() ? "the model (" + module.name() + ")"
                      : "layer '" + path + "' (" + module.name() + ")";
}

std::string ModuleLowering::quantize_activation(const std::shared_ptr<nn::UnaryModule>& quantizer,
                                                const std::string& where, const std::string& base,
                                                const std::string& x) {
  if (!quantizer) return x;
  if (!qdq_) {
    // The float form: one tensor per quantizer (an Identity when x already has one).
    const std::string t = quantized_.count(x) != 0 ? g_.node("Identity", {x}, base) : x;
    quantized_.insert(t);
    sites_.push_back({t, quantizer.get(), where, false});
    return t;
  }
  sites_.push_back({x, quantizer.get(), where, false});
  const quant::QdqParams p = quant::any_qdq_params(*quantizer, kOp, where);
  if (p.identity) return x;
  QGRAD_CHECK(!p.axis, ValueError, "ONNX export: ", where,
              ": per-channel activation quantization is not supported");
  const std::string scale = g_.add_float(base + "_scale", p.scale, {});
  const std::string zp = p.is_uint8() ? g_.add_uint8(base + "_zero_point", p.zero_point, {})
                                      : g_.add_int8(base + "_zero_point", p.zero_point, {});
  std::string in = x;
  if (p.narrower_than_type()) {
    // The grid is narrower than the 8-bit type (below 8 bits, reduce_range, narrow_range):
    // clip to the grid's real range so QuantizeLinear's saturation gives the quantizer's bounds.
    const float lo = static_cast<float>((p.quant_min - p.zero_point[0]) * double(p.scale[0]));
    const float hi = static_cast<float>((p.quant_max - p.zero_point[0]) * double(p.scale[0]));
    const std::string lo_name = g_.add_float(base + "_clip_min", {lo}, {});
    const std::string hi_name = g_.add_float(base + "_clip_max", {hi}, {});
    in = g_.node("Clip", {x, lo_name, hi_name}, base + "_clipped");
  }
  const std::string q = g_.node("QuantizeLinear", {in, scale, zp}, base + "_quantized");
  return g_.node("DequantizeLinear", {q, scale, zp}, base + "_dequantized");
}

std::string ModuleLowering::weight_value(const std::shared_ptr<nn::UnaryModule>& quantizer,
                                         const Tensor& w, const std::string& where,
                                         const std::string& base) {
  if (!quantizer || !qdq_) {
    const std::string name = g_.add_float(base, floats(w), dims_of(w));
    if (quantizer) sites_.push_back({name, quantizer.get(), where, true});
    return name;
  }
  const quant::QdqParams p = quant::any_qdq_params(*quantizer, kOp, where);
  if (p.identity) {
    const std::string name = g_.add_float(base, floats(w), dims_of(w));
    sites_.push_back({name, quantizer.get(), where, true});
    return name;
  }
  const std::vector<std::int32_t> q = quant::quantize_weight(*quantizer, p, w, kOp, where);
  const std::int64_t n = static_cast<std::int64_t>(p.scale.size());
  const std::vector<std::int64_t> pdims =
      p.axis ? std::vector<std::int64_t>{n} : std::vector<std::int64_t>{};
  const std::string scale = g_.add_float(base + "_scale", p.scale, pdims);
  std::string qw, zp;
  if (p.is_uint8()) {
    qw = g_.add_uint8(base + "_quantized", q, dims_of(w));
    zp = g_.add_uint8(base + "_zero_point", p.zero_point, pdims);
  } else {
    qw = g_.add_int8(base + "_quantized", q, dims_of(w));
    zp = g_.add_int8(base + "_zero_point", p.zero_point, pdims);
  }
  // The float weight the layer reads keeps the float form's name ("0_weight").
  onnx::NodeProto& dq = g_.add_node("DequantizeLinear", {qw, scale, zp}, base, nullptr);
  if (p.axis) OnnxGraph::set_attr(dq, "axis", *p.axis);
  sites_.push_back({dq.output(0), quantizer.get(), where, true});
  return dq.output(0);
}

template <typename Layer>
std::string ModuleLowering::bias_value(const Layer& layer, const std::string& where,
                                       const std::string& base) {
  const Tensor& bias = layer.bias();
  if (!bias.defined()) return "";
  const std::int64_t n = bias.numel();
  const std::optional<std::vector<float>> scale =
      qdq_ ? quant::layer_bias_grid(layer, kOp, where) : std::nullopt;
  if (!scale) return g_.add_float(base, floats(bias), dims_of(bias));
  const std::string q =
      g_.add_int32(base + "_quantized", quant::int32_bias_values(bias, *scale), {n});
  const std::string s = g_.add_float(base + "_scale", *scale, {n});
  // The float bias the layer reads keeps the float form's name ("9_bias").
  onnx::NodeProto& dq = g_.add_node("DequantizeLinear", {q, s}, base, nullptr);
  OnnxGraph::set_attr(dq, "axis", std::int64_t{0});
  return dq.output(0);
}

std::string ModuleLowering::conv_node(const nn::Module& conv_like, const std::string& path,
                                      const std::string& x, const std::string& w,
                                      const std::string& b) {
  const nn::Conv2dOptions* o = nullptr;
  if (const auto* c = dynamic_cast<const nn::Conv2d*>(&conv_like)) o = &c->options();
  if (const auto* c = dynamic_cast<const quant::QuantConv2d*>(&conv_like)) o = &c->options();
  if (const auto* c = dynamic_cast<const quant::QuantConvBn2d*>(&conv_like)) o = &c->options();
  QGRAD_CHECK(o != nullptr, ValueError, "ONNX export: ", describe_layer(conv_like, path),
              " is not a convolution");
  std::vector<std::string> inputs{x, w};
  if (!b.empty()) inputs.push_back(b);
  std::string out;
  onnx::NodeProto& n = g_.add_node("Conv", inputs, base_of(path), &out);
  OnnxGraph::set_attr(n, "kernel_shape", v(o->kernel_size_));
  OnnxGraph::set_attr(n, "strides", v(o->stride_));
  OnnxGraph::set_attr(n, "pads", pads_of(o->padding_));
  OnnxGraph::set_attr(n, "dilations", v(o->dilation_));
  OnnxGraph::set_attr(n, "group", o->groups_);
  return out;
}

std::string ModuleLowering::lower_pair(const std::shared_ptr<nn::Module>& first,
                                       const std::string& first_path,
                                       const std::shared_ptr<nn::Module>& second,
                                       const std::string& second_path, const std::string& x) {
  const auto* conv = dynamic_cast<const nn::Conv2d*>(first.get());
  const auto* bn = second ? dynamic_cast<const nn::BatchNorm2d*>(second.get()) : nullptr;
  if (conv == nullptr || bn == nullptr) {
    const std::string y = lower(*first, first_path, x);
    return second ? lower(*second, second_path, y) : y;
  }
  // Fold: W' = W * k (per output channel), b' = (b - mean) * k + beta = b * k + c.
  const BnAffine a = bn_affine(*bn, kOp, describe_layer(*bn, second_path));
  const Tensor& w = conv->weight();
  const std::int64_t out_ch = w.size(0);
  QGRAD_CHECK(static_cast<std::int64_t>(a.k.size()) == out_ch, ValueError,
              "ONNX export: ", describe_layer(*bn, second_path), " has ", a.k.size(),
              " features but ", describe_layer(*conv, first_path), " has ", out_ch,
              " output channels");
  std::vector<float> wv = floats(w);
  const std::size_t per = wv.size() / static_cast<std::size_t>(out_ch);
  for (std::size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(wv[i] * a.k[i / per]);
  const std::vector<float> bias =
      conv->bias().defined() ? floats(conv->bias()) : std::vector<float>(out_ch, 0.0f);
  std::vector<float> bv(out_ch);
  for (std::int64_t c = 0; c < out_ch; ++c) bv[c] = static_cast<float>(bias[c] * a.k[c] + a.c[c]);
  const std::string base = base_of(first_path);
  const std::string wn = g_.add_float(base + "_weight", wv, dims_of(w));
  const std::string bn_name = g_.add_float(base + "_bias", bv, {out_ch});
  return conv_node(*conv, first_path, x, wn, bn_name);
}

std::string ModuleLowering::lower_sequential(const nn::Module& seq, const std::string& path,
                                             const std::string& x) {
  const auto children = seq.named_children();
  std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> items;
  for (const auto& c : children) items.emplace_back(c.key, c.value);
  std::string y = x;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const bool pair = i + 1 < items.size() &&
                      dynamic_cast<const nn::Conv2d*>(items[i].second.get()) != nullptr &&
                      dynamic_cast<const nn::BatchNorm2d*>(items[i + 1].second.get()) != nullptr;
    if (pair) {
      y = lower_pair(items[i].second, join(path, items[i].first), items[i + 1].second,
                     join(path, items[i + 1].first), y);
      ++i;
    } else {
      y = lower(*items[i].second, join(path, items[i].first), y);
    }
  }
  return y;
}

std::string ModuleLowering::lower_add(const nn::Add& add, const std::string& add_path,
                                      const std::string& a, const std::string& b) {
  std::string lhs = a, rhs = b;
  if (const auto* qa = dynamic_cast<const quant::QuantAdd*>(&add)) {
    const std::string where = describe_layer(add, add_path);
    lhs = quantize_activation(qa->input0_quantizer(), where + " input 0 quantizer",
                              add_path + "_input0", a);
    rhs = quantize_activation(qa->input1_quantizer(), where + " input 1 quantizer",
                              add_path + "_input1", b);
  } else if (typeid(add) != typeid(nn::Add)) {
    throw ValueError("ONNX export: " + describe_layer(add, add_path) +
                     " has no ONNX mapping (supported: Add, QuantAdd)");
  }
  return g_.node("Add", {lhs, rhs}, add_path);
}

std::string ModuleLowering::lower_basic_block(const nn::Module& module, const std::string& path,
                                              const std::string& x) {
  const auto& b = dynamic_cast<const nn::BasicBlock&>(module);
  std::string y = lower_pair(b.conv1(), join(path, "conv1"), b.bn1(), join(path, "bn1"), x);
  y = lower(*b.relu1(), join(path, "relu1"), y);
  y = lower_pair(b.conv2(), join(path, "conv2"), b.bn2(), join(path, "bn2"), y);
  const std::string shortcut =
      b.downsample() ? lower(*b.downsample(), join(path, "downsample"), x) : x;
  y = lower_add(*b.add(), join(path, "add"), y, shortcut);
  return lower(*b.relu2(), join(path, "relu2"), y);
}

std::string ModuleLowering::lower_inverted_residual(const nn::Module& module,
                                                    const std::string& path, const std::string& x) {
  const auto& b = dynamic_cast<const nn::InvertedResidual&>(module);
  const std::string y = lower(*b.conv(), join(path, "conv"), x);
  return b.add() ? lower_add(*b.add(), join(path, "add"), y, x) : y;
}

std::string ModuleLowering::lower_graph(const nn::Module& module, const std::string& path,
                                        const std::string& x) {
  const auto& g = dynamic_cast<const nn::Graph&>(module);
  std::unordered_map<std::string, std::string> onnx_name{{g.input_name(), x}};
  const auto& nodes = g.nodes();
  std::vector<bool> folded(nodes.size(), false);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (folded[i]) continue;
    const nn::Graph::Node& n = nodes[i];
    const std::string node_path = join(path, n.name);
    if (n.add != nullptr) {
      onnx_name[n.output] =
          lower_add(*n.add, node_path, onnx_name.at(n.inputs[0]), onnx_name.at(n.inputs[1]));
      continue;
    }
    // A float Conv2d whose output only a BatchNorm2d reads: one Conv with the BN folded.
    const std::vector<std::size_t> r = g.readers(n.output);
    if (r.size() == 1 && n.output != g.output_name() &&
        dynamic_cast<const nn::Conv2d*>(n.unary.get()) != nullptr &&
        dynamic_cast<const nn::BatchNorm2d*>(nodes[r[0]].unary.get()) != nullptr) {
      const nn::Graph::Node& bn = nodes[r[0]];
      onnx_name[bn.output] =
          lower_pair(n.unary, node_path, bn.unary, join(path, bn.name), onnx_name.at(n.inputs[0]));
      folded[r[0]] = true;
      continue;
    }
    onnx_name[n.output] = lower(*n.unary, node_path, onnx_name.at(n.inputs[0]));
  }
  const auto out = onnx_name.find(g.output_name());
  QGRAD_CHECK(out != onnx_name.end(), ValueError, "ONNX export: ", describe_layer(module, path),
              ": no node writes the output '", g.output_name(), "'");
  return out->second;
}

std::string ModuleLowering::lower(const nn::Module& m, const std::string& path,
                                  const std::string& x) {
  const std::string where = describe_layer(m, path);
  const std::string base = base_of(path);
  if (dynamic_cast<const nn::Sequential*>(&m)) return lower_sequential(m, path, x);
  if (dynamic_cast<const nn::BasicBlock*>(&m)) return lower_basic_block(m, path, x);
  if (dynamic_cast<const nn::InvertedResidual*>(&m)) return lower_inverted_residual(m, path, x);
  if (dynamic_cast<const nn::Graph*>(&m)) return lower_graph(m, path, x);
  if (dynamic_cast<const nn::Identity*>(&m) || dynamic_cast<const nn::Dropout*>(&m)) return x;
  if (const auto* c = dynamic_cast<const nn::Conv2d*>(&m)) {
    const std::string w = g_.add_float(base + "_weight", floats(c->weight()), dims_of(c->weight()));
    const std::string b = c->bias().defined()
                              ? g_.add_float(base + "_bias", floats(c->bias()), dims_of(c->bias()))
                              : "";
    return conv_node(m, path, x, w, b);
  }
  if (const auto* bn = dynamic_cast<const nn::BatchNorm2d*>(&m)) {
    const BnAffine a = bn_affine(*bn, kOp, where);
    const std::int64_t n = static_cast<std::int64_t>(a.k.size());
    // As BatchNormalization with the folded form (scale k, bias c, mean 0, var 1 - eps would be
    // inexact): keep the module's own statistics and eps.
    const std::vector<float> ones(n, 1.0f), zeros(n, 0.0f);
    const std::string gamma =
        g_.add_float(base + "_weight", bn->weight().defined() ? floats(bn->weight()) : ones, {n});
    const std::string beta =
        g_.add_float(base + "_bias", bn->bias().defined() ? floats(bn->bias()) : zeros, {n});
    const std::string mean = g_.add_float(base + "_running_mean", floats(bn->running_mean()), {n});
    const std::string var = g_.add_float(base + "_running_var", floats(bn->running_var()), {n});
    std::string out;
    onnx::NodeProto& node =
        g_.add_node("BatchNormalization", {x, gamma, beta, mean, var}, base, &out);
    OnnxGraph::set_attr(node, "epsilon", static_cast<float>(bn->options().eps_));
    return out;
  }
  if (const auto* l = dynamic_cast<const nn::Linear*>(&m)) {
    const std::string w = g_.add_float(base + "_weight", floats(l->weight()), dims_of(l->weight()));
    std::vector<std::string> in{x, w};
    if (l->bias().defined())
      in.push_back(g_.add_float(base + "_bias", floats(l->bias()), dims_of(l->bias())));
    std::string out;
    OnnxGraph::set_attr(g_.add_node("Gemm", in, base, &out), "transB", std::int64_t{1});
    return out;
  }
  if (const auto* q = dynamic_cast<const quant::QuantConv2d*>(&m)) {
    const std::string xq =
        quantize_activation(q->input_quantizer(), where + " input quantizer", base + "_input", x);
    const std::string w = weight_value(q->weight_quantizer(), q->weight(),
                                       where + " weight quantizer", base + "_weight");
    const std::string b = bias_value(*q, where, base + "_bias");
    return conv_node(m, path, xq, w, b);
  }
  if (const auto* q = dynamic_cast<const quant::QuantConvBn2d*>(&m)) {
    // Training's folded weight W * s (the same ops as QuantConvBn2d::forward), quantized by the
    // weight quantizer; the bias (b - mean) * s + beta in double.
    const Tensor s = q->scale_factor().detach();
    const std::int64_t c = s.numel();
    const Tensor wf = q->weight().detach() * s.view({c, 1, 1, 1});
    const std::string xq =
        quantize_activation(q->input_quantizer(), where + " input quantizer", base + "_input", x);
    const std::string w =
        weight_value(q->weight_quantizer(), wf, where + " weight quantizer", base + "_weight");
    const BnAffine a = bn_affine(*q->bn(), kOp, where + " batch norm");
    const std::vector<float> bias =
        q->bias().defined() ? floats(q->bias()) : std::vector<float>(c, 0.0f);
    std::vector<float> bv(c);
    for (std::int64_t i = 0; i < c; ++i) bv[i] = static_cast<float>(bias[i] * a.k[i] + a.c[i]);
    return conv_node(m, path, xq, w, g_.add_float(base + "_bias", bv, {c}));
  }
  if (const auto* q = dynamic_cast<const quant::QuantLinear*>(&m)) {
    const std::string xq =
        quantize_activation(q->input_quantizer(), where + " input quantizer", base + "_input", x);
    const std::string w = weight_value(q->weight_quantizer(), q->weight(),
                                       where + " weight quantizer", base + "_weight");
    std::vector<std::string> in{xq, w};
    if (q->bias().defined()) in.push_back(bias_value(*q, where, base + "_bias"));
    std::string out;
    OnnxGraph::set_attr(g_.add_node("Gemm", in, base, &out), "transB", std::int64_t{1});
    return out;
  }
  if (dynamic_cast<const nn::ReLU*>(&m)) return g_.node("Relu", {x}, base);
  if (dynamic_cast<const nn::Sigmoid*>(&m)) return g_.node("Sigmoid", {x}, base);
  if (dynamic_cast<const nn::Tanh*>(&m)) return g_.node("Tanh", {x}, base);
  if (dynamic_cast<const nn::ReLU6*>(&m)) {
    return g_.node(
        "Clip",
        {x, g_.add_float(base + "_min", {0.0f}, {}), g_.add_float(base + "_max", {6.0f}, {})},
        base);
  }
  if (const auto* r = dynamic_cast<const nn::LeakyReLU*>(&m)) {
    std::string out;
    OnnxGraph::set_attr(g_.add_node("LeakyRelu", {x}, base, &out), "alpha",
                        static_cast<float>(r->negative_slope()));
    return out;
  }
  if (const auto* p = dynamic_cast<const nn::MaxPool2d*>(&m)) {
    const nn::MaxPool2dOptions& o = p->options();
    std::string out;
    onnx::NodeProto& n = g_.add_node("MaxPool", {x}, base, &out);
    OnnxGraph::set_attr(n, "kernel_shape", v(o.kernel_size_));
    OnnxGraph::set_attr(n, "strides", v(o.stride_));
    OnnxGraph::set_attr(n, "pads", pads_of(o.padding_));
    OnnxGraph::set_attr(n, "dilations", v(o.dilation_));
    OnnxGraph::set_attr(n, "ceil_mode", std::int64_t{o.ceil_mode_ ? 1 : 0});
    return out;
  }
  if (const auto* p = dynamic_cast<const nn::AvgPool2d*>(&m)) {
    const nn::AvgPool2dOptions& o = p->options();
    QGRAD_CHECK(!o.divisor_override_, ValueError, "ONNX export: ", where,
                ": divisor_override has no ONNX AveragePool equivalent");
    std::string out;
    onnx::NodeProto& n = g_.add_node("AveragePool", {x}, base, &out);
    OnnxGraph::set_attr(n, "kernel_shape", v(o.kernel_size_));
    OnnxGraph::set_attr(n, "strides", v(o.stride_.empty() ? o.kernel_size_ : o.stride_));
    OnnxGraph::set_attr(n, "pads", pads_of(o.padding_));
    OnnxGraph::set_attr(n, "ceil_mode", std::int64_t{o.ceil_mode_ ? 1 : 0});
    OnnxGraph::set_attr(n, "count_include_pad", std::int64_t{o.count_include_pad_ ? 1 : 0});
    return out;
  }
  if (const auto* p = dynamic_cast<const nn::AdaptiveAvgPool2d*>(&m)) {
    const Shape& s = p->output_size();
    const bool global = std::all_of(s.begin(), s.end(), [](std::int64_t d) { return d == 1; });
    QGRAD_CHECK(global, ValueError, "ONNX export: ", where, ": output_size ", shape_str(s),
                " is not supported (only 1, as GlobalAveragePool)");
    return g_.node("GlobalAveragePool", {x}, base);
  }
  if (const auto* f = dynamic_cast<const nn::Flatten*>(&m)) {
    QGRAD_CHECK(f->start_dim() == 1 && f->end_dim() == -1, ValueError, "ONNX export: ", where,
                ": only start_dim=1, end_dim=-1 is supported (ONNX Flatten), got start_dim=",
                f->start_dim(), ", end_dim=", f->end_dim());
    std::string out;
    OnnxGraph::set_attr(g_.add_node("Flatten", {x}, base, &out), "axis", std::int64_t{1});
    return out;
  }
  throw ValueError(
      "ONNX export: " + where +
      " has no ONNX mapping (the exporter knows Sequential, BasicBlock, InvertedResidual, Graph, "
      "Conv2d, "
      "BatchNorm2d, Linear, ReLU, ReLU6, LeakyReLU, Sigmoid, Tanh, MaxPool2d, "
      "AvgPool2d, AdaptiveAvgPool2d(1), Flatten, Identity, Dropout, QuantConv2d, "
      "QuantConvBn2d, QuantLinear and QuantAdd)");
}

}  // namespace qgrad::deploy
