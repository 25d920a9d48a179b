// quant::convert: the walk over a QAT Sequential that builds the int8 layers.
#include "deploy/int8/convert.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/shape.h"
#include "deploy/common/bn_affine.h"
#include "deploy/int8/convert_graph.h"
#include "deploy/int8/int8_basic_block.h"
#include "deploy/int8/int8_conv2d.h"
#include "deploy/int8/int8_direct_conv2d.h"
#include "deploy/int8/int8_global_avg_pool.h"
#include "deploy/int8/int8_inverted_residual.h"
#include "deploy/int8/int8_linear.h"
#include "deploy/int8/int8_max_pool2d.h"
#include "deploy/int8/int8_quantize.h"
#include "deploy/int8/layer_specs.h"
#include "nn/models/basic_block.h"
#include "nn/models/inverted_residual.h"
#include "nn/modules/activation.h"
#include "nn/modules/add.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/dropout.h"
#include "nn/modules/flatten.h"
#include "nn/modules/identity.h"
#include "nn/modules/linear.h"
#include "nn/modules/pooling.h"
#include "nn/modules/sequential.h"
#include "quant/modules/fold_conv_bn.h"
#include "quant/modules/int32_bias.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/modules/qdq_params.h"
#include "quant/modules/quant_add.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_conv_bn2d.h"
#include "quant/modules/quant_linear.h"

namespace qgrad::quant {

namespace {

using namespace convert_detail;

// The grid a residual block's input must be on: its conv1's input grid, which must equal the
// shortcut's (the downsample conv's input grid, or the add's input 1 grid).
Int8Grid block_input_grid(const nn::BasicBlock& b, const std::string& path) {
  const Item conv1{path + ".conv1", b.conv1()};
  const Int8Grid g = input_grid(input_quantizer_of(*b.conv1()), describe(conv1));
  std::string shortcut;
  std::optional<Int8Grid> s;
  if (b.downsample()) {
    std::vector<Item> ds;
    flatten_into(*b.downsample(), path + ".downsample", ds);
    QGRAD_CHECK(!ds.empty(), ValueError, kOp, ": layer '", path, ".downsample' is empty");
    shortcut = describe(ds[0]);
    s = input_grid(input_quantizer_of(*ds[0].second), shortcut);
  } else {
    const auto* qa = dynamic_cast<const QuantAdd*>(b.add().get());
    const Item add{path + ".add", b.add()};
    QGRAD_CHECK(qa != nullptr, ValueError, kOp, ": ", describe(add),
                " is not quantized (a QuantAdd): the residual add cannot run in int8");
    shortcut = describe(add) + " input 1";
    s = Int8Grid::from_params(
        params_of(*require_quantizer(qa->input1_quantizer(), shortcut), shortcut + " quantizer"),
        shortcut + " quantizer");
  }
  QGRAD_CHECK(*s == g, ValueError, kOp, ": residual block '", path,
              "': its input is quantized on two grids, ", g.str(), " by ", describe(conv1), " and ",
              s->str(), " by ", shortcut,
              "; an int8 block input has one grid (both quantizers observe the same tensor, so "
              "they agree unless set by hand)");
  return g;
}

class Converter {
 public:
  Converter(const nn::Module& model, const ConvertOptions& options) : options_(options) {
    if (dynamic_cast<const nn::Sequential*>(&model) != nullptr)
      flatten_into(model, "", items_);
    else
      throw ValueError(std::string(kOp) + ": the model (" + model.name() +
                       ") must be a Sequential or a Graph of quantized layers");
  }

  Int8Model run() {
    for (i_ = 0; i_ < items_.size();) {
      const Item& item = items_[i_];
      if (skipped(item)) {
        ++i_;
      } else if (is_quantized_layer(item)) {
        quantized_layer();
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
    QGRAD_CHECK(!current_, ValueError, kOp,
                ": the model ends quantized (no layer leaves the int8 domain)");
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
    if (is<nn::ReLU>(item) || is<nn::ReLU6>(item))
      throw ValueError(std::string(kOp) + ": " + describe(item) +
                       " does not follow a quantized convolution, linear layer or residual "
                       "block (only a fused ReLU, or a ReLU6 after a convolution, is supported)");
    throw ValueError(std::string(kOp) + ": " + describe(item) +
                     " has no int8 mapping (supported: QuantConv2d, QuantConvBn2d, QuantLinear, "
                     "each with an optional BatchNorm2d and ReLU (ReLU6 after a convolution) after "
                     "it, BasicBlock and InvertedResidual with QuantAdd, MaxPool2d, "
                     "AdaptiveAvgPool2d(1), Flatten, Identity, Dropout, in "
                     "Sequentials)");
  }

  // The grid the output of the layer ending before `j` must be written on: that of the next
  // quantized layer's input quantizer (or residual block's input), reached through pooling and
  // flattening only; none (float32) when no quantized layer follows or a global average pool
  // comes first (it averages the float tensor, as the QAT model does).
  std::optional<Int8Grid> consumer_grid(std::size_t j) const {
    for (; j < items_.size(); ++j) {
      const Item& it = items_[j];
      if (skipped(it) || is<nn::MaxPool2d>(it) || is<nn::Flatten>(it)) continue;
      if (is<nn::AdaptiveAvgPool2d>(it)) return std::nullopt;
      if (is_quantized_layer(it)) return input_grid(input_quantizer_of(*it.second), describe(it));
      if (const auto* b = dynamic_cast<const nn::BasicBlock*>(it.second.get()))
        return block_input_grid(*b, it.first);
      if (const auto* r = dynamic_cast<const nn::InvertedResidual*>(it.second.get()))
        return inverted_residual_input_grid(*r, it.first);
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
    current_ = grid;
  }

  void quantized_layer() {
    const Item& item = items_[i_];
    const std::string where = describe(item);
    std::size_t j = next(i_ + 1);
    if (is<QuantLinear>(item)) {
      const bool relu = j < items_.size() && is<nn::ReLU>(items_[j]);
      if (relu) j = next(j + 1);
      Int8LinearSpec s = linear_spec(item, relu, std::nullopt);
      enter(s.input, where);
      s.output = consumer_grid(j);
      current_ = s.output;
      model_.append(std::make_unique<Int8Linear>(std::move(s)));
      i_ = j;
      return;
    }
    const Item* bn = nullptr;
    if (is<QuantConv2d>(item) && j < items_.size() && is<nn::BatchNorm2d>(items_[j])) {
      bn = &items_[j];
      j = next(j + 1);
    }
    const bool relu6 = j < items_.size() && is<nn::ReLU6>(items_[j]);
    const bool relu = relu6 || (j < items_.size() && is<nn::ReLU>(items_[j]));
    if (relu) j = next(j + 1);
    Int8Conv2dSpec s = conv_spec(item, bn, relu, std::nullopt);
    if (relu6) s.relu_max = 6;
    s.output = consumer_grid(j);  // after this layer's own checks, so errors come in order
    const bool direct = options_.direct_conv && Int8DirectConv2d::preferred(s);
    // The model's first layer quantizes its float input itself when it runs the direct kernel.
    const bool quantize_input = direct && !current_;
    if (!quantize_input) enter(s.input, where);
    current_ = s.output;
    if (direct) {
      // A max pool right after it is fused (the grid is unchanged by pooling).
      std::optional<Int8MaxPool2dSpec> pool;
      if (j < items_.size()) {
        if (const auto* p = dynamic_cast<const nn::MaxPool2d*>(items_[j].second.get())) {
          Int8MaxPool2dSpec ps = pool_spec(items_[j], *p);
          if (Int8DirectConv2d::supports_pool(ps)) {
            pool = std::move(ps);
            j = next(j + 1);
          }
        }
      }
      Int8DirectConv2dOptions o;
      o.quantize_input = quantize_input;
      model_.append(std::make_unique<Int8DirectConv2d>(std::move(s), std::move(pool), o));
    } else {
      model_.append(std::make_unique<Int8Conv2d>(std::move(s)));
    }
    i_ = j;
  }

  // A BasicBlock: conv1 (+ bn1, relu1) -> conv2 (+ bn2) on the add's input 0 grid, the
  // shortcut on its input 1 grid, the add (+ relu2) on the next consumer's grid.
  void basic_block(const Item& item, const nn::BasicBlock& b) {
    const std::string& path = item.first;
    const ResidualAdd residual = residual_add({path + ".add", b.add()});
    const Item& add_item = residual.item;
    const Int8Grid &g0 = residual.input0, &g1 = residual.input1;
    const Int8Grid in = block_input_grid(b, path);
    enter(in, describe(item));
    // A BN item after a QuantConv2d (a fused QuantConvBn2d leaves an Identity in its place).
    auto bn_of = [](const Item& conv, const Item& bn) -> const Item* {
      return is<QuantConv2d>(conv) && is<nn::BatchNorm2d>(bn) ? &bn : nullptr;
    };
    auto check_relu = [](const Item& r) {
      QGRAD_CHECK(is<nn::ReLU>(r), ValueError, kOp, ": ", describe(r),
                  " must be a ReLU for the int8 residual block");
    };
    const Item conv1{path + ".conv1", b.conv1()}, bn1{path + ".bn1", b.bn1()},
        conv2{path + ".conv2", b.conv2()}, bn2{path + ".bn2", b.bn2()},
        relu1{path + ".relu1", b.relu1()}, relu2{path + ".relu2", b.relu2()};
    check_relu(relu1);
    check_relu(relu2);
    const Int8Grid conv2_in = input_grid(input_quantizer_of(*b.conv2()), describe(conv2));
    auto c1 = std::make_unique<Int8Conv2d>(conv_spec(conv1, bn_of(conv1, bn1), true, conv2_in));
    const std::optional<Int8Grid> out = consumer_grid(i_ + 1);
    const bool fuse = options_.fuse_residual_sum && out.has_value();
    Int8Conv2dSpec s2 = conv_spec(conv2, bn_of(conv2, bn2), fuse, fuse ? out : g0);
    if (fuse) s2.residual = g1;  // conv2 + shortcut + relu2 in one primitive
    auto c2 = std::make_unique<Int8Conv2d>(std::move(s2));
    std::unique_ptr<Int8Conv2d> ds;
    if (b.downsample()) {
      std::vector<Item> d;
      flatten_into(*b.downsample(), path + ".downsample", d);
      const bool with_bn = d.size() == 2 && (is<nn::BatchNorm2d>(d[1]) || is<nn::Identity>(d[1]));
      QGRAD_CHECK((d.size() == 1 || with_bn) && (is<QuantConv2d>(d[0]) || is<QuantConvBn2d>(d[0])),
                  ValueError, kOp, ": layer '", path,
                  ".downsample' must be a quantized 1x1 convolution with an optional batch norm");
      ds = std::make_unique<Int8Conv2d>(
          conv_spec(d[0], d.size() == 2 ? bn_of(d[0], d[1]) : nullptr, false, g1));
    } else {
      QGRAD_CHECK(in == g1, ValueError, kOp, ": residual block '", path,
                  "': its input grid differs from the add's input 1 grid");
    }
    std::unique_ptr<Int8Add> add;
    if (!fuse) {
      Int8AddSpec a;
      a.name = describe(add_item);
      a.a = g0;
      a.b = g1;
      a.relu = true;
      a.output = out;
      add = std::make_unique<Int8Add>(std::move(a));
    }
    current_ = out;
    model_.append(std::make_unique<Int8BasicBlock>(describe(item), std::move(c1), std::move(c2),
                                                   std::move(ds), std::move(add)));
  }

  // The layers of an InvertedResidual's "conv" in forward order (Identity and Dropout dropped).
  static std::vector<Item> block_layers(const nn::InvertedResidual& b, const std::string& path) {
    std::vector<Item> d;
    flatten_into(*b.conv(), path + ".conv", d);
    d.erase(std::remove_if(d.begin(), d.end(), skipped), d.end());
    QGRAD_CHECK(!d.empty() && (is<QuantConv2d>(d[0]) || is<QuantConvBn2d>(d[0])), ValueError, kOp,
                ": layer '", path, ".conv' must start with a quantized convolution");
    return d;
  }

  // The grid an InvertedResidual's input must be on: its first convolution's input grid.
  static Int8Grid inverted_residual_input_grid(const nn::InvertedResidual& b,
                                               const std::string& path) {
    const std::vector<Item> d = block_layers(b, path);
    return input_grid(input_quantizer_of(*d[0].second), describe(d[0]));
  }

  // An InvertedResidual with its shortcut: each quantized convolution (+ BatchNorm2d, + ReLU6 or
  // ReLU) writes the next one's input grid, the last the add's input 0 grid; x, on the first's
  // input grid, must be on the add's input 1 grid; the add writes the next consumer's grid.
  void inverted_residual(const Item& item, const nn::InvertedResidual& b) {
    const std::string& path = item.first;
    const ResidualAdd residual = residual_add({path + ".add", b.add()});
    const Int8Grid &g0 = residual.input0, &g1 = residual.input1;
    const std::vector<Item> d = block_layers(b, path);
    const Int8Grid in = input_grid(input_quantizer_of(*d[0].second), describe(d[0]));
    QGRAD_CHECK(in == g1, ValueError, kOp, ": residual block '", path,
                "': its input grid differs from the add's input 1 grid");
    enter(in, describe(item));
    std::vector<std::unique_ptr<Int8Conv2d>> convs;
    for (std::size_t j = 0; j < d.size();) {
      const Item& conv = d[j];
      QGRAD_CHECK(is<QuantConv2d>(conv) || is<QuantConvBn2d>(conv), ValueError, kOp, ": ",
                  describe(conv), " has no int8 mapping inside residual block '", path,
                  "' (quantized convolutions, each with an optional BatchNorm2d and ReLU6 or "
                  "ReLU after it)");
      std::size_t k = j + 1;
      const Item* bn = nullptr;
      if (is<QuantConv2d>(conv) && k < d.size() && is<nn::BatchNorm2d>(d[k])) bn = &d[k++];
      const bool relu6 = k < d.size() && is<nn::ReLU6>(d[k]);
      const bool relu = relu6 || (k < d.size() && is<nn::ReLU>(d[k]));
      if (relu) ++k;
      const Int8Grid out =
          k < d.size() ? input_grid(input_quantizer_of(*d[k].second), describe(d[k])) : g0;
      Int8Conv2dSpec s = conv_spec(conv, bn, relu, out);
      if (relu6) s.relu_max = 6;
      convs.push_back(std::make_unique<Int8Conv2d>(std::move(s)));
      j = k;
    }
    Int8AddSpec a;
    a.name = describe(residual.item);
    a.a = g0;
    a.b = g1;
    a.relu = false;
    a.output = consumer_grid(i_ + 1);
    current_ = a.output;
    model_.append(std::make_unique<Int8InvertedResidual>(describe(item), std::move(convs),
                                                         std::make_unique<Int8Add>(std::move(a))));
  }

  void max_pool(const Item& item, const nn::MaxPool2d& p) {
    model_.append(std::make_unique<Int8MaxPool2d>(pool_spec(item, p)));
  }

  // On the float32 output of the layer before (consumer_grid stops there).
  void global_avg_pool(const Item& item, const nn::AdaptiveAvgPool2d& p) {
    const Shape& s = p.output_size();
    QGRAD_CHECK(std::all_of(s.begin(), s.end(), [](std::int64_t d) { return d == 1; }), ValueError,
                kOp, ": ", describe(item), ": output_size ", shape_str(s),
                " is not supported (only 1, a global average)");
    QGRAD_CHECK(!current_, ValueError, kOp, ": ", describe(item),
                " must follow a layer with float output");
    model_.append(std::make_unique<Int8GlobalAvgPool>(describe(item)));
  }

  // Int8Linear reads a 4-D input as flattened, so a Flatten before a QuantLinear is free.
  void flatten(const Item& item, const nn::Flatten& f) const {
    QGRAD_CHECK(f.start_dim() == 1 && f.end_dim() == -1, ValueError, kOp, ": ", describe(item),
                ": only start_dim=1, end_dim=-1 is supported");
    const std::size_t j = next(i_ + 1);
    QGRAD_CHECK(j < items_.size() && is<QuantLinear>(items_[j]), ValueError, kOp, ": ",
                describe(item), " must be followed by a QuantLinear");
  }

  ConvertOptions options_;
  std::vector<Item> items_;
  std::size_t i_ = 0;
  std::optional<Int8Grid> current_;  // the grid of the current activation; none: float32
  Int8Model model_;
};

}  // namespace

Int8Model convert(const nn::Module& model, const ConvertOptions& options) {
  if (const auto* g = dynamic_cast<const nn::Graph*>(&model))
    return convert_detail::convert_graph(*g, options);
  return Converter(model, options).run();
}

}  // namespace qgrad::quant
