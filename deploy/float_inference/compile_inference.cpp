// deploy::compile_inference: the walk over a float Sequential that builds the float layers.
#include "deploy/float_inference/compile_inference.h"

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/shape.h"
#include "deploy/common/bn_affine.h"
#include "deploy/common/layer_geometry.h"
#include "deploy/common/module_walk.h"
#include "deploy/float_inference/float_conv2d.h"
#include "deploy/float_inference/float_linear.h"
#include "deploy/float_inference/float_pool2d.h"
#include "deploy/float_inference/float_residual_block.h"
#include "nn/models/basic_block.h"
#include "nn/models/inverted_residual.h"
#include "nn/modules/activation.h"
#include "nn/modules/add.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/flatten.h"
#include "nn/modules/linear.h"
#include "nn/modules/pooling.h"
#include "nn/modules/sequential.h"

namespace qgrad::deploy {

namespace {

constexpr const char kOp[] = "compile_inference";

// A float Conv2d (quantized layers are other classes, so they never match).
const nn::Conv2d* conv_of(const Item& item) {
  return dynamic_cast<const nn::Conv2d*>(item.second.get());
}

// The convolution of `conv` with the batch norm `bn` (null: none) folded into it, in double:
// w'[o] = w[o] * k[o], b'[o] = b[o] * k[o] + c[o]; a fused ReLU (relu_max 6: ReLU6).
FloatConv2dSpec conv_spec(const Item& conv, const Item* bn, bool relu, double relu_max) {
  const std::string where = describe(conv);
  const nn::Conv2d* c = conv_of(conv);
  QGRAD_CHECK(c != nullptr, ValueError, kOp, ": ", where, " is not a float Conv2d");
  FloatConv2dSpec s;
  set_conv_geometry(s, c->options(), kOp, where);
  s.relu = relu;
  s.relu_max = relu_max;
  const std::int64_t out = s.out_channels;
  if (bn == nullptr) {
    s.weight = c->weight().detach().contiguous().to_vector<float>();
    if (c->bias().defined()) s.bias = c->bias().detach().contiguous().to_vector<float>();
    return s;
  }
  const auto& b = dynamic_cast<const nn::BatchNorm2d&>(*bn->second);
  const BnAffine a = bn_affine(b, kOp, describe(*bn));
  QGRAD_CHECK(static_cast<std::int64_t>(a.k.size()) == out, ValueError, kOp, ": ", describe(*bn),
              " has ", a.k.size(), " features but ", where, " has ", out, " output channels");
  const std::vector<double> w = c->weight().detach().contiguous().to_vector<double>();
  const std::vector<double> bias = c->bias().defined()
                                       ? c->bias().detach().contiguous().to_vector<double>()
                                       : std::vector<double>(static_cast<std::size_t>(out), 0.0);
  const std::size_t per = w.size() / static_cast<std::size_t>(out);
  s.weight.resize(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) s.weight[i] = static_cast<float>(w[i] * a.k[i / per]);
  for (std::int64_t ch = 0; ch < out; ++ch)
    s.bias.push_back(static_cast<float>(bias[ch] * a.k[ch] + a.c[ch]));
  return s;
}

class Compiler {
 public:
  explicit Compiler(const nn::Module& model) {
    QGRAD_CHECK(dynamic_cast<const nn::Sequential*>(&model) != nullptr, ValueError, kOp,
                ": the model (", model.name(),
                ") must be a Sequential of float layers (an nn::Graph is not supported yet)");
    flatten_into(model, "", items_);
  }

  FloatInferenceModel run() {
    for (i_ = 0; i_ < items_.size();) {
      const Item& item = items_[i_];
      if (skipped(item)) {
        ++i_;
      } else if (conv_of(item) != nullptr) {
        conv();
      } else if (is<nn::Linear>(item)) {
        linear();
      } else if (const auto* b = dynamic_cast<const nn::BasicBlock*>(item.second.get())) {
        basic_block(item, *b);
        ++i_;
      } else if (const auto* r = dynamic_cast<const nn::InvertedResidual*>(item.second.get())) {
        inverted_residual(item, *r);
        ++i_;
      } else if (const auto* p = dynamic_cast<const nn::MaxPool2d*>(item.second.get())) {
        max_pool(item, *p);
        ++i_;
      } else if (const auto* p = dynamic_cast<const nn::AdaptiveAvgPool2d*>(item.second.get())) {
        global_avg_pool(item, *p);
        ++i_;
      } else if (const auto* f = dynamic_cast<const nn::Flatten*>(item.second.get())) {
        flatten(item, *f);
        ++i_;
      } else {
        unsupported(item);
      }
    }
    QGRAD_CHECK(model_.num_layers() > 0, ValueError, kOp, ": the model has no layers");
    return std::move(model_);
  }

 private:
  // The next item at or after `j` that is not dropped.
  std::size_t next(std::size_t j) const {
    while (j < items_.size() && skipped(items_[j])) ++j;
    return j;
  }

  [[noreturn]] static void unsupported(const Item& item) {
    throw ValueError(std::string(kOp) + ": " + describe(item) +
                     " has no float inference mapping (supported: Conv2d with an optional "
                     "BatchNorm2d and ReLU or ReLU6 after it, Linear with an optional ReLU, "
                     "BasicBlock, InvertedResidual, MaxPool2d, AdaptiveAvgPool2d(1), Flatten "
                     "before a Linear, Identity, Dropout, in Sequentials)");
  }

  // Conv2d (+ BatchNorm2d) (+ ReLU / ReLU6) from items `d` at `j`; `j` moves past them.
  static FloatConv2dSpec conv_run(const std::vector<Item>& d, std::size_t& j,
                                  const std::function<std::size_t(std::size_t)>& next) {
    const Item& conv = d[j];
    std::size_t k = next(j + 1);
    const Item* bn = nullptr;
    if (k < d.size() && is<nn::BatchNorm2d>(d[k])) {
      bn = &d[k];
      k = next(k + 1);
    }
    const bool relu6 = k < d.size() && is<nn::ReLU6>(d[k]);
    const bool relu = relu6 || (k < d.size() && is<nn::ReLU>(d[k]));
    if (relu) k = next(k + 1);
    j = k;
    return conv_spec(conv, bn, relu, relu6 ? 6.0 : 0.0);
  }

  void conv() {
    FloatConv2dSpec s = conv_run(items_, i_, [this](std::size_t j) { return next(j); });
    model_.append(std::make_unique<FloatConv2d>(std::move(s)));
  }

  void linear() {
    const Item& item = items_[i_];
    const auto& l = dynamic_cast<const nn::Linear&>(*item.second);
    std::size_t j = next(i_ + 1);
    FloatLinearSpec s;
    s.name = describe(item);
    s.in_features = l.options().in_features_;
    s.out_features = l.options().out_features_;
    s.weight = l.weight().detach().contiguous().to_vector<float>();
    if (l.bias().defined()) s.bias = l.bias().detach().contiguous().to_vector<float>();
    s.relu = j < items_.size() && is<nn::ReLU>(items_[j]);
    if (s.relu) j = next(j + 1);
    model_.append(std::make_unique<FloatLinear>(std::move(s)));
    i_ = j;
  }

  // The add of a residual block must be a plain float nn::Add (a QuantAdd is a QAT model's).
  static void check_add(const Item& add) {
    const nn::Module* m = add.second.get();
    QGRAD_CHECK(m != nullptr && typeid(*m) == typeid(nn::Add), ValueError, kOp, ": ", describe(add),
                " is not a float Add");
  }

  // conv1 (+ bn1, relu1) -> conv2 (+ bn2) + shortcut -> relu2, the add and relu2 fused into conv2.
  void basic_block(const Item& item, const nn::BasicBlock& b) {
    const std::string& path = item.first;
    check_add({path + ".add", b.add()});
    for (const Item& r : {Item{path + ".relu1", b.relu1()}, Item{path + ".relu2", b.relu2()}})
      QGRAD_CHECK(is<nn::ReLU>(r), ValueError, kOp, ": ", describe(r),
                  " must be a ReLU in a residual block");
    // A batch norm may have been fused away already (an Identity in its place).
    auto bn_item = [](const Item& bn) -> const Item* {
      if (is<nn::Identity>(bn)) return nullptr;
      QGRAD_CHECK(is<nn::BatchNorm2d>(bn), ValueError, kOp, ": ", describe(bn),
                  " must be a BatchNorm2d (or Identity) in a residual block");
      return &bn;
    };
    const Item conv1{path + ".conv1", b.conv1()}, bn1{path + ".bn1", b.bn1()},
        conv2{path + ".conv2", b.conv2()}, bn2{path + ".bn2", b.bn2()};
    std::vector<std::unique_ptr<FloatConv2d>> convs;
    convs.push_back(std::make_unique<FloatConv2d>(conv_spec(conv1, bn_item(bn1), true, 0)));
    FloatConv2dSpec s2 = conv_spec(conv2, bn_item(bn2), true, 0);
    s2.residual = true;
    convs.push_back(std::make_unique<FloatConv2d>(std::move(s2)));
    std::unique_ptr<FloatConv2d> ds;
    if (b.downsample()) {
      std::vector<Item> d;
      flatten_into(*b.downsample(), path + ".downsample", d);
      d.erase(std::remove_if(d.begin(), d.end(), skipped), d.end());
      QGRAD_CHECK(!d.empty() && d.size() <= 2 && conv_of(d[0]) != nullptr &&
                      (d.size() == 1 || is<nn::BatchNorm2d>(d[1])),
                  ValueError, kOp, ": layer '", path,
                  ".downsample' must be a float convolution with an optional batch norm");
      ds =
          std::make_unique<FloatConv2d>(conv_spec(d[0], d.size() == 2 ? &d[1] : nullptr, false, 0));
    }
    model_.append(
        std::make_unique<FloatResidualBlock>(describe(item), std::move(convs), std::move(ds)));
  }

  // Its "conv" chain (each Conv2d + BatchNorm2d + ReLU6 / ReLU), the add fused into the last.
  void inverted_residual(const Item& item, const nn::InvertedResidual& b) {
    const std::string& path = item.first;
    check_add({path + ".add", b.add()});
    std::vector<Item> d;
    flatten_into(*b.conv(), path + ".conv", d);
    d.erase(std::remove_if(d.begin(), d.end(), skipped), d.end());
    std::vector<std::unique_ptr<FloatConv2d>> convs;
    for (std::size_t j = 0; j < d.size();) {
      QGRAD_CHECK(conv_of(d[j]) != nullptr, ValueError, kOp, ": ", describe(d[j]),
                  " has no float inference mapping inside residual block '", path,
                  "' (float convolutions, each with an optional BatchNorm2d and ReLU6 or ReLU)");
      FloatConv2dSpec s = conv_run(d, j, [](std::size_t k) { return k; });
      s.residual = j >= d.size();
      convs.push_back(std::make_unique<FloatConv2d>(std::move(s)));
    }
    model_.append(std::make_unique<FloatResidualBlock>(describe(item), std::move(convs), nullptr));
  }

  void max_pool(const Item& item, const nn::MaxPool2d& p) {
    FloatPool2dSpec s;
    set_pool_geometry(s, p.options(), kOp, describe(item));
    model_.append(std::make_unique<FloatPool2d>(std::move(s)));
  }

  void global_avg_pool(const Item& item, const nn::AdaptiveAvgPool2d& p) {
    const Shape& s = p.output_size();
    QGRAD_CHECK(std::all_of(s.begin(), s.end(), [](std::int64_t d) { return d == 1; }), ValueError,
                kOp, ": ", describe(item), ": output_size ", shape_str(s),
                " is not supported (only 1, a global average)");
    FloatPool2dSpec ps;
    ps.name = describe(item);
    ps.global_average = true;
    model_.append(std::make_unique<FloatPool2d>(std::move(ps)));
  }

  // FloatLinear reads a 4-D input as flattened, so a Flatten before a Linear is free.
  void flatten(const Item& item, const nn::Flatten& f) const {
    QGRAD_CHECK(f.start_dim() == 1 && f.end_dim() == -1, ValueError, kOp, ": ", describe(item),
                ": only start_dim=1, end_dim=-1 is supported");
    const std::size_t j = next(i_ + 1);
    QGRAD_CHECK(j < items_.size() && is<nn::Linear>(items_[j]), ValueError, kOp, ": ",
                describe(item), " must be followed by a Linear");
  }

  std::vector<Item> items_;
  std::size_t i_ = 0;
  FloatInferenceModel model_;
};

}  // namespace

FloatInferenceModel compile_inference(const nn::Module& model) {
  return Compiler(model).run();
}

}  // namespace qgrad::deploy
