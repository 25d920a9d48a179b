// quant::convert: the walk over a QAT Sequential that builds the int8 layers.
#include "deploy/int8/convert.h"

#include <utility>
#include <vector>

#include "core/error.h"
#include "core/shape.h"
#include "deploy/common/bn_affine.h"
#include "deploy/common/qdq_params.h"
#include "deploy/int8/int8_conv2d.h"
#include "deploy/int8/int8_linear.h"
#include "deploy/int8/int8_max_pool2d.h"
#include "deploy/int8/int8_quantize.h"
#include "nn/models/basic_block.h"
#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/dropout.h"
#include "nn/modules/flatten.h"
#include "nn/modules/identity.h"
#include "nn/modules/linear.h"
#include "nn/modules/pooling.h"
#include "nn/modules/sequential.h"
#include "quant/modules/fold_conv_bn.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_conv_bn2d.h"
#include "quant/modules/quant_linear.h"

namespace qgrad::quant {

namespace {

constexpr const char kOp[] = "int8 convert";

using Item = std::pair<std::string, std::shared_ptr<nn::Module>>;

std::string describe(const Item& item) {
  return item.first.empty() ? "the model (" + item.second->name() + ")"
                            : "layer '" + item.first + "' (" + item.second->name() + ")";
}

// The children of nested Sequentials in forward order, with qualified names.
void flatten_into(const nn::Module& module, const std::string& path, std::vector<Item>& out) {
  for (const auto& c : module.named_children()) {
    const std::string name = path.empty() ? c.key : path + "." + c.key;
    if (dynamic_cast<const nn::Sequential*>(c.value.get()))
      flatten_into(*c.value, name, out);
    else
      out.emplace_back(name, c.value);
  }
}

template <typename T>
bool is(const Item& item) {
  return dynamic_cast<const T*>(item.second.get()) != nullptr;
}

bool skipped(const Item& item) {
  return is<nn::Identity>(item) || is<nn::Dropout>(item);
}

bool is_quantized_layer(const Item& item) {
  return is<QuantConv2d>(item) || is<QuantConvBn2d>(item) || is<QuantLinear>(item);
}

std::array<std::int64_t, 2> pair_of(const Shape& s, const std::string& where, const char* what) {
  QGRAD_CHECK(s.size() == 1 || s.size() == 2, ValueError, kOp, ": ", where, ": ", what,
              " must have 1 or 2 values, got ", shape_str(s));
  return {s[0], s.size() == 1 ? s[0] : s[1]};
}

// The grid of a quantized layer's input quantizer.
Int8Grid input_grid(const std::shared_ptr<nn::UnaryModule>& quantizer, const std::string& where) {
  QGRAD_CHECK(quantizer != nullptr, ValueError, kOp, ": ", where,
              " has no input quantizer: its float input cannot feed an int8 layer");
  const std::string q = where + " input quantizer";
  return Int8Grid::from_params(deploy::qdq_params(*quantizer, kOp, q), q);
}

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
  const deploy::QdqParams p = deploy::qdq_params(*quantizer, kOp, q);
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
  const std::vector<std::int32_t> ints = deploy::quantize_weight(*quantizer, p, w, kOp, q);
  IntWeight r;
  r.values.assign(ints.begin(), ints.end());  // on [-128, 127]: qdq_params checked the grid
  for (std::int64_t c = 0; c < out; ++c) r.scale.push_back(p.scale[p.axis ? c : 0]);
  return r;
}

std::vector<double> bias_of(const Tensor& b, std::int64_t n) {
  if (!b.defined()) return std::vector<double>(static_cast<std::size_t>(n), 0.0);
  return b.detach().contiguous().to_vector<double>();
}

class Converter {
 public:
  explicit Converter(const nn::Module& model) {
    if (dynamic_cast<const nn::Sequential*>(&model) != nullptr)
      flatten_into(model, "", items_);
    else
      throw ValueError(std::string(kOp) + ": the model (" + model.name() +
                       ") must be a Sequential of quantized layers");
  }

  Int8Model run() {
    for (i_ = 0; i_ < items_.size();) {
      const Item& item = items_[i_];
      if (skipped(item)) {
        ++i_;
      } else if (is_quantized_layer(item)) {
        quantized_layer();
      } else if (const auto* p = dynamic_cast<const nn::MaxPool2d*>(item.second.get())) {
        max_pool(item, *p);
        ++i_;
      } else if (const auto* f = dynamic_cast<const nn::Flatten*>(item.second.get())) {
        flatten(item, *f);
        ++i_;
      } else {
        unsupported(item);
      }
    }
    QGRAD_CHECK(!current_, ValueError, kOp,
                ": the model ends quantized (no layer leaves the int8 "
                "domain)");
    QGRAD_CHECK(!model_.layers().empty(), ValueError, kOp, ": the model has no quantized layers");
    return std::move(model_);
  }

 private:
  // The next item at or after `j` that is not dropped.
  std::size_t next(std::size_t j) const {
    while (j < items_.size() && skipped(items_[j])) ++j;
    return j;
  }

  [[noreturn]] void unsupported(const Item& item) const {
    if (is<nn::Conv2d>(item) || is<nn::Linear>(item))
      throw ValueError(std::string(kOp) + ": " + describe(item) +
                       " is float (excluded from quantization); int8 inference needs every "
                       "convolution and linear layer quantized");
    if (is<nn::ReLU>(item))
      throw ValueError(std::string(kOp) + ": " + describe(item) +
                       " does not follow a quantized convolution or linear layer (only a fused "
                       "ReLU is supported)");
    if (is<nn::BasicBlock>(item))
      throw ValueError(std::string(kOp) + ": " + describe(item) +
                       ": residual blocks are not supported by int8 inference yet");
    throw ValueError(std::string(kOp) + ": " + describe(item) +
                     " has no int8 mapping (supported: QuantConv2d, QuantConvBn2d, QuantLinear, "
                     "each with an optional BatchNorm2d and ReLU after it, MaxPool2d, Flatten, "
                     "Identity, Dropout, in Sequentials)");
  }

  // The grid the output of the quantized layer ending before `j` must be written on: that of
  // the next quantized layer's input quantizer, reached through pooling and flattening only;
  // none (float32) when no quantized layer follows.
  std::optional<Int8Grid> consumer_grid(std::size_t j) const {
    for (; j < items_.size(); ++j) {
      const Item& it = items_[j];
      if (skipped(it) || is<nn::MaxPool2d>(it) || is<nn::Flatten>(it)) continue;
      if (const auto* c = dynamic_cast<const QuantConv2d*>(it.second.get()))
        return input_grid(c->input_quantizer(), describe(it));
      if (const auto* c = dynamic_cast<const QuantConvBn2d*>(it.second.get()))
        return input_grid(c->input_quantizer(), describe(it));
      if (const auto* l = dynamic_cast<const QuantLinear*>(it.second.get()))
        return input_grid(l->input_quantizer(), describe(it));
      unsupported(it);
    }
    return std::nullopt;
  }

  // Enters the quantized domain on `grid` unless the current activation is already on it.
  void enter(const Int8Grid& grid, const std::string& where) {
    if (!current_) {
      model_.append(std::make_unique<Int8Quantize>(where + " input quantizer", grid));
    } else {
      QGRAD_CHECK(*current_ == grid, ValueError, kOp, ": ", where, ": its input grid (", grid.str(),
                  ") differs from the grid its input was written on (", current_->str(), ")");
    }
  }

  void quantized_layer() {
    const Item& item = items_[i_];
    const std::string where = describe(item);
    std::size_t j = next(i_ + 1);
    if (const auto* l = dynamic_cast<const QuantLinear*>(item.second.get())) {
      const Int8Grid in = input_grid(l->input_quantizer(), where);
      enter(in, where);
      Int8LinearSpec s;
      s.name = where;
      s.in_features = l->options().in_features_;
      s.out_features = l->options().out_features_;
      IntWeight w = int_weight(l->weight_quantizer(), l->weight(), where);
      s.weight = std::move(w.values);
      s.weight_scale = std::move(w.scale);
      s.bias = bias_of(l->bias(), s.out_features);
      s.input = in;
      s.relu = j < items_.size() && is<nn::ReLU>(items_[j]);
      if (s.relu) j = next(j + 1);
      s.output = consumer_grid(j);
      current_ = s.output;
      model_.append(std::make_unique<Int8Linear>(std::move(s)));
      i_ = j;
      return;
    }
    // A fused conv + BN is the QuantConv2d with the folded weight, sharing its quantizers.
    std::shared_ptr<QuantConv2d> conv;
    if (const auto* f = dynamic_cast<const QuantConvBn2d*>(item.second.get()))
      conv = fold_quant_conv_bn(*f);
    else
      conv = std::dynamic_pointer_cast<QuantConv2d>(item.second);
    const nn::Conv2dOptions& o = conv->options();
    const Int8Grid in = input_grid(conv->input_quantizer(), where);
    enter(in, where);
    Int8Conv2dSpec s;
    s.name = where;
    s.in_channels = o.in_channels_;
    s.out_channels = o.out_channels_;
    s.groups = o.groups_;
    s.kernel = pair_of(o.kernel_size_, where, "kernel_size");
    s.stride = pair_of(o.stride_, where, "stride");
    s.padding = pair_of(o.padding_, where, "padding");
    s.dilation = pair_of(o.dilation_, where, "dilation");
    IntWeight w = int_weight(conv->weight_quantizer(), conv->weight(), where);
    s.weight = std::move(w.values);
    s.weight_scale = std::move(w.scale);
    s.bias = bias_of(conv->bias(), s.out_channels);
    s.input = in;
    if (j < items_.size() && is<nn::BatchNorm2d>(items_[j])) {
      // Float BN after the quantized conv: y = k * (conv + b) + c, so the per-channel scale of
      // the integer accumulator gains k and the bias becomes k * b + c.
      const auto& bn = dynamic_cast<const nn::BatchNorm2d&>(*items_[j].second);
      const deploy::BnAffine a = deploy::bn_affine(bn, kOp, describe(items_[j]));
      QGRAD_CHECK(static_cast<std::int64_t>(a.k.size()) == s.out_channels, ValueError, kOp, ": ",
                  describe(items_[j]), " has ", a.k.size(), " features but ", where, " has ",
                  s.out_channels, " output channels");
      for (std::int64_t c = 0; c < s.out_channels; ++c) {
        QGRAD_CHECK(a.k[c] != 0, ValueError, kOp, ": ", describe(items_[j]), ": channel ", c,
                    " has gamma 0 (a constant channel has no int8 scale)");
        s.weight_scale[c] *= a.k[c];
        s.bias[c] = s.bias[c] * a.k[c] + a.c[c];
      }
      j = next(j + 1);
    }
    s.relu = j < items_.size() && is<nn::ReLU>(items_[j]);
    if (s.relu) j = next(j + 1);
    s.output = consumer_grid(j);
    current_ = s.output;
    model_.append(std::make_unique<Int8Conv2d>(std::move(s)));
    i_ = j;
  }

  void max_pool(const Item& item, const nn::MaxPool2d& p) {
    const std::string where = describe(item);
    const nn::MaxPool2dOptions& o = p.options();
    Int8MaxPool2dSpec s;
    s.name = where;
    s.kernel = pair_of(o.kernel_size_, where, "kernel_size");
    s.stride = pair_of(o.stride_.empty() ? o.kernel_size_ : o.stride_, where, "stride");
    s.padding = pair_of(o.padding_, where, "padding");
    s.dilation = pair_of(o.dilation_, where, "dilation");
    s.ceil_mode = o.ceil_mode_;
    model_.append(std::make_unique<Int8MaxPool2d>(s));
  }

  // Int8Linear reads a 4-D input as flattened, so a Flatten before a QuantLinear is free.
  void flatten(const Item& item, const nn::Flatten& f) const {
    QGRAD_CHECK(f.start_dim() == 1 && f.end_dim() == -1, ValueError, kOp, ": ", describe(item),
                ": only start_dim=1, end_dim=-1 is supported");
    const std::size_t j = next(i_ + 1);
    QGRAD_CHECK(j < items_.size() && is<QuantLinear>(items_[j]), ValueError, kOp, ": ",
                describe(item), " must be followed by a QuantLinear");
  }

  std::vector<Item> items_;
  std::size_t i_ = 0;
  std::optional<Int8Grid> current_;  // the grid of the current activation; none: float32
  Int8Model model_;
};

}  // namespace

Int8Model convert(const nn::Module& model) {
  return Converter(model).run();
}

}  // namespace qgrad::quant
