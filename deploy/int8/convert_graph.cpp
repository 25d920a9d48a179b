// quant::convert over an nn::Graph: which grid each value of the graph is written on, the layers
// each node fuses (a float BatchNorm2d after a QuantConv2d, a ReLU / ReLU6, a max pool after a
// direct convolution: only when that node is the sole reader of the value) and the Int8Graph of
// the result. A value is written on the grid of the quantizers that read it, found through
// Identity, Dropout, Flatten and MaxPool2d nodes: every reader must agree (two quantizers of one
// tensor on different grids, or one reading it as float32 and another quantized, is a ValueError
// naming both), float32 where a global average pool or the model's output reads it. A quantized
// layer whose input is float32 (the model's input) gets an Int8Quantize step first.
#include "deploy/int8/convert_graph.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/shape.h"
#include "deploy/int8/int8_direct_conv2d.h"
#include "deploy/int8/int8_global_avg_pool.h"
#include "deploy/int8/int8_graph.h"
#include "deploy/int8/int8_quantize.h"
#include "deploy/int8/layer_specs.h"
#include "nn/modules/activation.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/flatten.h"
#include "nn/modules/linear.h"
#include "quant/modules/quant_add.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"

namespace qgrad::quant::convert_detail {

namespace {

using Grid = std::optional<Int8Grid>;  // none: float32

std::string grid_str(const Grid& g) {
  return g ? g->str() : std::string("float32");
}

class GraphConverter {
 public:
  GraphConverter(const nn::Graph& graph, const ConvertOptions& options)
      : g_(graph), nodes_(graph.nodes()), options_(options), done_(nodes_.size(), false) {
    grid_[g_.input_name()] = std::nullopt;
    name_[g_.input_name()] = g_.input_name();
  }

  Int8Model run() {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (!done_[i]) node(i);
    const std::string& out = g_.output_name();
    QGRAD_CHECK(grid_.count(out), ValueError, kOp, ": no node writes the model's output '", out,
                "'");
    QGRAD_CHECK(!grid_.at(out), ValueError, kOp,
                ": the model ends quantized (no layer leaves the int8 domain)");
    QGRAD_CHECK(quantized_layers_ > 0, ValueError, kOp, ": the model has no quantized layers");
    auto graph = std::make_unique<Int8Graph>("the model (Graph)", g_.input_name(), name_.at(out));
    for (Step& s : steps_) {
      if (s.add)
        graph->add_step(std::move(s.add), s.inputs[0], s.inputs[1], s.output);
      else
        graph->add_step(std::move(s.layer), s.inputs[0], s.output);
    }
    Int8Model model;
    model.append(std::move(graph));
    return model;
  }

 private:
  struct Step {
    std::unique_ptr<Int8Layer> layer;
    std::unique_ptr<Int8Add> add;
    std::vector<std::string> inputs;
    std::string output;
  };

  Item item(std::size_t i) const { return {nodes_[i].name, nodes_[i].module()}; }

  // The node reading `value` when exactly one node does (once) and the model does not return it,
  // looking through Identity / Dropout nodes (a BatchNorm2d fused by fuse_bn leaves an Identity).
  std::optional<std::size_t> sole_reader(const std::string& value) const {
    std::string v = value;
    for (;;) {
      const std::vector<std::size_t> r = g_.readers(v);
      if (r.size() != 1 || v == g_.output_name()) return std::nullopt;
      if (!skipped(item(r[0]))) return r[0];
      v = nodes_[r[0]].output;
    }
  }
  template <typename T>
  std::optional<std::size_t> sole_reader_of_type(const std::string& value) const {
    const auto r = sole_reader(value);
    return r && is<T>(item(*r)) ? r : std::nullopt;
  }

  [[noreturn]] void unsupported(const Item& it) const {
    if (is<nn::Conv2d>(it) || is<nn::Linear>(it))
      throw ValueError(std::string(kOp) + ": " + describe(it) +
                       " is float (excluded from quantization); int8 inference needs every "
                       "convolution and linear layer quantized");
    if (is<nn::ReLU>(it) || is<nn::ReLU6>(it) || is<nn::BatchNorm2d>(it))
      throw ValueError(std::string(kOp) + ": " + describe(it) +
                       " must be the only reader of a quantized convolution's output (a ReLU or "
                       "ReLU6 also of a linear layer's or a residual add's) to be fused into it");
    throw ValueError(std::string(kOp) + ": " + describe(it) +
                     " has no int8 mapping (supported in a Graph: QuantConv2d, QuantConvBn2d, "
                     "QuantLinear, each with an optional BatchNorm2d and ReLU / ReLU6 after it, "
                     "QuantAdd, MaxPool2d, AdaptiveAvgPool2d(1), Flatten before a QuantLinear, "
                     "Identity, Dropout)");
  }

  // The grid the node writing `value` must write it on: what its readers quantize it to.
  Grid consumer_grid(const std::string& value) const {
    std::optional<Grid> want;
    std::string who;
    auto merge = [&](const Grid& g, const std::string& by) {
      if (!want) {
        want = g;
        who = by;
        return;
      }
      QGRAD_CHECK(*want == g, ValueError, kOp, ": value '", value, "' is read on two grids, ",
                  grid_str(*want), " by ", who, " and ", grid_str(g), " by ", by,
                  "; an int8 tensor has one grid (quantizers observing the same tensor agree "
                  "unless set by hand)");
    };
    collect(value, merge);
    return want ? *want : std::nullopt;
  }

  template <typename Merge>
  void collect(const std::string& value, Merge& merge) const {
    if (value == g_.output_name()) merge(std::nullopt, "the model's output");
    std::vector<std::size_t> readers = g_.readers(value);
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    for (std::size_t r : readers) {
      const Item it = item(r);
      const nn::Graph::Node& n = nodes_[r];
      if (n.add != nullptr) {
        const ResidualAdd a = residual_add(it);
        if (n.inputs[0] == value) merge(a.input0, describe(it) + " input 0");
        if (n.inputs[1] == value) merge(a.input1, describe(it) + " input 1");
      } else if (skipped(it) || is<nn::Flatten>(it) || is<nn::MaxPool2d>(it)) {
        collect(n.output, merge);
      } else if (is_quantized_layer(it)) {
        merge(input_grid(input_quantizer_of(*it.second), describe(it)), describe(it));
      } else if (is<nn::AdaptiveAvgPool2d>(it)) {
        merge(std::nullopt, describe(it));
      } else {
        unsupported(it);
      }
    }
  }

  // The int8 graph's name of `value` on `grid`: the value itself when it was written there, or
  // (for a float32 value, the model's input) an Int8Quantize step's output.
  std::string on_grid(const std::string& value, const Int8Grid& grid, const std::string& where) {
    const Grid& g = grid_.at(value);
    if (g) {
      QGRAD_CHECK(*g == grid, ValueError, kOp, ": ", where, ": its input grid (", grid.str(),
                  ") differs from the grid its input was written on (", g->str(), ")");
      return name_.at(value);
    }
    const std::string key = name_.at(value) + "@" + grid.str();
    const auto known = quantized_.find(key);
    if (known != quantized_.end()) return known->second;
    const std::string q = name_.at(value) + "_quantized_" + std::to_string(quantized_.size());
    push(std::make_unique<Int8Quantize>(where + " input quantizer", grid), {name_.at(value)}, q);
    quantized_[key] = q;
    return q;
  }

  void push(std::unique_ptr<Int8Layer> layer, std::vector<std::string> inputs,
            const std::string& output) {
    steps_.push_back({std::move(layer), nullptr, std::move(inputs), output});
  }

  // `value` is the int8 value `name` on grid `g`.
  void define(const std::string& value, const std::string& name, Grid g) {
    name_[value] = name;
    grid_[value] = std::move(g);
  }

  void node(std::size_t i) {
    const nn::Graph::Node& n = nodes_[i];
    const Item it = item(i);
    if (n.add != nullptr) return add(i);
    const std::string& in = n.inputs[0];
    if (skipped(it)) return define(n.output, name_.at(in), grid_.at(in));
    if (is<QuantLinear>(it)) return linear(i);
    if (is_quantized_layer(it)) return conv(i);
    if (const auto* f = dynamic_cast<const nn::Flatten*>(it.second.get())) {
      // Int8Linear reads a 4-D input as flattened, so a Flatten before one is free.
      QGRAD_CHECK(f->start_dim() == 1 && f->end_dim() == -1, ValueError, kOp, ": ", describe(it),
                  ": only start_dim=1, end_dim=-1 is supported");
      for (std::size_t r : g_.readers(n.output))
        QGRAD_CHECK(is<QuantLinear>(item(r)), ValueError, kOp, ": ", describe(it),
                    " must be read only by QuantLinear layers (", describe(item(r)), " reads it)");
      QGRAD_CHECK(n.output != g_.output_name(), ValueError, kOp, ": ", describe(it),
                  " must be followed by a QuantLinear");
      return define(n.output, name_.at(in), grid_.at(in));
    }
    if (const auto* p = dynamic_cast<const nn::MaxPool2d*>(it.second.get())) {
      QGRAD_CHECK(grid_.at(in).has_value(), ValueError, kOp, ": ", describe(it),
                  " must read a quantized layer's output (its input is float32)");
      push(std::make_unique<Int8MaxPool2d>(pool_spec(it, *p)), {name_.at(in)}, n.output);
      return define(n.output, n.output, grid_.at(in));
    }
    if (const auto* p = dynamic_cast<const nn::AdaptiveAvgPool2d*>(it.second.get())) {
      const Shape& s = p->output_size();
      QGRAD_CHECK(std::all_of(s.begin(), s.end(), [](std::int64_t d) { return d == 1; }),
                  ValueError, kOp, ": ", describe(it), ": output_size ", shape_str(s),
                  " is not supported (only 1, a global average)");
      QGRAD_CHECK(!grid_.at(in), ValueError, kOp, ": ", describe(it),
                  " must follow a layer with float output");
      push(std::make_unique<Int8GlobalAvgPool>(describe(it)), {name_.at(in)}, n.output);
      return define(n.output, n.output, std::nullopt);
    }
    unsupported(it);
  }

  // Marks node r, read by `value` through sole_reader, fused (with the Identity / Dropout nodes
  // between them) and returns the value it writes.
  const std::string& fuse(const std::string& value, std::size_t r) {
    for (std::string v = value; v != nodes_[r].inputs[0];) {
      const std::size_t s = g_.readers(v)[0];
      done_[s] = true;
      v = nodes_[s].output;
    }
    done_[r] = true;
    return nodes_[r].output;
  }

  void linear(std::size_t i) {
    const nn::Graph::Node& n = nodes_[i];
    std::string out = n.output;
    const auto relu = sole_reader_of_type<nn::ReLU>(out);
    if (relu) out = fuse(out, *relu);
    Int8LinearSpec s = linear_spec(item(i), relu.has_value(), std::nullopt);
    const std::string x = on_grid(n.inputs[0], s.input, s.name);
    s.output = consumer_grid(out);
    define(out, out, s.output);
    push(std::make_unique<Int8Linear>(std::move(s)), {x}, out);
    ++quantized_layers_;
  }

  void conv(std::size_t i) {
    const nn::Graph::Node& n = nodes_[i];
    const Item it = item(i);
    std::string out = n.output;
    std::optional<Item> bn;
    if (is<QuantConv2d>(it))
      if (const auto r = sole_reader_of_type<nn::BatchNorm2d>(out)) {
        bn = item(*r);
        out = fuse(out, *r);
      }
    const auto relu6 = sole_reader_of_type<nn::ReLU6>(out);
    const auto relu = relu6 ? relu6 : sole_reader_of_type<nn::ReLU>(out);
    if (relu) out = fuse(out, *relu);
    Int8Conv2dSpec s = conv_spec(it, bn ? &*bn : nullptr, relu.has_value(), std::nullopt);
    if (relu6) s.relu_max = 6;
    s.output = consumer_grid(out);  // after the layer's own checks, so errors come in order
    ++quantized_layers_;
    const std::string& in = n.inputs[0];
    const bool direct = options_.direct_conv && Int8DirectConv2d::preferred(s);
    if (!direct) {
      const std::string x = on_grid(in, s.input, s.name);
      define(out, out, s.output);
      push(std::make_unique<Int8Conv2d>(std::move(s)), {x}, out);
      return;
    }
    // The direct kernel quantizes a float input itself and fuses a max pool read only by it.
    Int8DirectConv2dOptions o;
    o.quantize_input = !grid_.at(in);
    const std::string x = o.quantize_input ? name_.at(in) : on_grid(in, s.input, s.name);
    std::optional<Int8MaxPool2dSpec> pool;
    if (const auto r = sole_reader_of_type<nn::MaxPool2d>(out)) {
      const Item p = item(*r);
      Int8MaxPool2dSpec ps = pool_spec(p, dynamic_cast<const nn::MaxPool2d&>(*p.second));
      if (Int8DirectConv2d::supports_pool(ps)) {
        pool = std::move(ps);
        out = fuse(out, *r);
      }
    }
    define(out, out, s.output);
    push(std::make_unique<Int8DirectConv2d>(std::move(s), std::move(pool), o), {x}, out);
  }

  void add(std::size_t i) {
    const nn::Graph::Node& n = nodes_[i];
    const ResidualAdd r = residual_add(item(i));
    std::string out = n.output;
    const auto relu = sole_reader_of_type<nn::ReLU>(out);
    if (relu) out = fuse(out, *relu);
    Int8AddSpec a;
    a.name = describe(r.item);
    a.a = r.input0;
    a.b = r.input1;
    a.relu = relu.has_value();
    const std::string x0 = on_grid(n.inputs[0], a.a, a.name + " input 0");
    const std::string x1 = on_grid(n.inputs[1], a.b, a.name + " input 1");
    a.output = consumer_grid(out);
    define(out, out, a.output);
    steps_.push_back({nullptr, std::make_unique<Int8Add>(std::move(a)), {x0, x1}, out});
  }

  const nn::Graph& g_;
  const std::vector<nn::Graph::Node>& nodes_;
  ConvertOptions options_;
  std::vector<bool> done_;                             // fused into an earlier node's layer
  std::unordered_map<std::string, Grid> grid_;         // each value defined so far: its grid
  std::unordered_map<std::string, std::string> name_;  // ... and its name in the Int8Graph
  std::map<std::string, std::string> quantized_;       // "<value>@<grid>" -> Int8Quantize output
  std::vector<Step> steps_;
  int quantized_layers_ = 0;
};

}  // namespace

Int8Model convert_graph(const nn::Graph& graph, const ConvertOptions& options) {
  return GraphConverter(graph, options).run();
}

}  // namespace qgrad::quant::convert_detail
