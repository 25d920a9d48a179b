// import_onnx: ONNX nodes to qgrad modules in an nn::Graph (see onnx_import.h). One pass over
// the nodes in file order; constants (initializers, Constant nodes, Identity of a constant) are
// kept aside and become module weights or attribute-like operands, every other value is a graph
// value. A MatMul by a constant waits for its one consumer: an Add of a constant vector makes it
// a Linear with bias, anything else a Linear without.
#include "deploy/onnx/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/factory.h"
#include "core/file_io.h"
#include "core/generator.h"
#include "nn/modules/activation.h"
#include "nn/modules/add.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/flatten.h"
#include "nn/modules/identity.h"
#include "nn/modules/linear.h"
#include "nn/modules/pooling.h"

namespace qgrad::deploy {
namespace {

// A constant operand: float or int64 data with its dims.
struct Constant {
  Shape dims;
  std::vector<float> floats;
  std::vector<std::int64_t> ints;
  bool is_float = true;
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;  // read_tensor bounded the product
    return n;
  }
};

std::string node_label(const onnx::NodeProto& node) {
  return "ONNX node '" + node.name() + "' (" + node.op_type() + ")";
}

Constant read_tensor(const onnx::TensorProto& t, const std::string& where) {
  Constant c;
  c.dims.assign(t.dims().begin(), t.dims().end());
  // Bounded before anything multiplies them: a corrupt file must not overflow the count.
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
  std::int64_t count = 1;
  for (auto d : c.dims) {
    QGRAD_CHECK(d >= 0 && d <= kMaxElements && (d == 0 || count <= kMaxElements / d), ValueError,
                "import_onnx: ", where, ": tensor '", t.name(),
                "' has a negative or too large dimension");
    count *= d;
  }
  QGRAD_CHECK(t.data_location() != onnx::TensorProto::EXTERNAL, ValueError, "import_onnx: ", where,
              ": tensor '", t.name(), "' keeps its data in an external file (not supported)");
  const auto n = static_cast<std::size_t>(c.numel());
  const bool raw = t.has_raw_data();
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    if (raw) {
      QGRAD_CHECK(t.raw_data().size() == n * sizeof(float), ValueError, "import_onnx: ", where,
                  ": tensor '", t.name(), "' holds ", t.raw_data().size(), " bytes for ", n,
                  " floats");
      c.floats.resize(n);
      if (n > 0) std::memcpy(c.floats.data(), t.raw_data().data(), n * sizeof(float));
    } else {
      c.floats.assign(t.float_data().begin(), t.float_data().end());
    }
    QGRAD_CHECK(c.floats.size() == n, ValueError, "import_onnx: ", where, ": tensor '", t.name(),
                "' holds ", c.floats.size(), " values for its ", n, " elements");
  } else if (t.data_type() == onnx::TensorProto::INT64) {
    c.is_float = false;
    if (raw) {
      QGRAD_CHECK(t.raw_data().size() == n * sizeof(std::int64_t), ValueError,
                  "import_onnx: ", where, ": tensor '", t.name(), "' holds ", t.raw_data().size(),
                  " bytes for ", n, " int64 values");
      c.ints.resize(n);
      if (n > 0) std::memcpy(c.ints.data(), t.raw_data().data(), n * sizeof(std::int64_t));
    } else {
      c.ints.assign(t.int64_data().begin(), t.int64_data().end());
    }
    QGRAD_CHECK(c.ints.size() == n, ValueError, "import_onnx: ", where, ": tensor '", t.name(),
                "' holds ", c.ints.size(), " values for its ", n, " elements");
  } else {
    QGRAD_CHECK(false, ValueError, "import_onnx: ", where, ": tensor '", t.name(),
                "' has ONNX data type ", t.data_type(), "; only float and int64 are supported");
  }
  return c;
}

Tensor to_tensor(const Constant& c) {
  return from_vector(c.floats, c.dims);
}

// The attributes of one node, each to be claimed by the mapping; unclaimed ones are errors.
class Attributes {
 public:
  explicit Attributes(const onnx::NodeProto& node) : node_(node) {
    for (const auto& a : node.attribute()) attrs_[a.name()] = &a;
  }
  std::int64_t get_int(const std::string& name, std::int64_t fallback) {
    const auto* a = claim(name);
    return a == nullptr ? fallback : a->i();
  }
  float get_float(const std::string& name, float fallback) {
    const auto* a = claim(name);
    return a == nullptr ? fallback : a->f();
  }
  std::vector<std::int64_t> get_ints(const std::string& name, std::vector<std::int64_t> fallback) {
    const auto* a = claim(name);
    return a == nullptr ? fallback : std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
  }
  std::string get_string(const std::string& name, const std::string& fallback) {
    const auto* a = claim(name);
    return a == nullptr ? fallback : a->s();
  }
  const onnx::AttributeProto* claim(const std::string& name) {
    claimed_.insert(name);
    const auto it = attrs_.find(name);
    return it == attrs_.end() ? nullptr : it->second;
  }
  // An attribute whose value the mapping cannot honour.
  [[noreturn]] void reject(const std::string& name, const std::string& why) const {
    throw ValueError("import_onnx: " + node_label(node_) + ": attribute '" + name + "' " + why);
  }
  // Every attribute the node has must have been claimed.
  void check_all_claimed() const {
    for (const auto& [name, a] : attrs_)
      if (claimed_.count(name) == 0) reject(name, "is not supported");
  }

 private:
  const onnx::NodeProto& node_;
  std::map<std::string, const onnx::AttributeProto*> attrs_;
  std::set<std::string> claimed_;
};

std::string sanitize(const std::string& name) {
  std::string out;
  for (char ch : name) {
    const bool ok =
        (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    out += ok ? ch : '_';
  }
  while (!out.empty() && out.front() == '_') out.erase(out.begin());
  return out;
}

// Kernel, stride, padding and dilation of a 2-d Conv / MaxPool / AveragePool. Symmetric pads
// only: qgrad's layers pad both sides alike.
struct Window {
  Shape kernel, stride{1, 1}, padding{0, 0}, dilation{1, 1};
};

Window read_window(Attributes& attrs, const Shape& kernel_from_weight, bool has_dilation) {
  Window w;
  const auto auto_pad = attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET") attrs.reject("auto_pad", "= " + auto_pad + " is not supported");
  w.kernel = attrs.get_ints("kernel_shape", kernel_from_weight);
  if (w.kernel.size() != 2) attrs.reject("kernel_shape", "must have 2 values (2-d only)");
  if (!kernel_from_weight.empty() && w.kernel != kernel_from_weight)
    attrs.reject("kernel_shape", "differs from the weight's shape");
  w.stride = attrs.get_ints("strides", {1, 1});
  if (w.stride.size() != 2) attrs.reject("strides", "must have 2 values");
  const auto pads = attrs.get_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4) attrs.reject("pads", "must have 4 values");
  if (pads[0] != pads[2] || pads[1] != pads[3])
    attrs.reject("pads", "is asymmetric (begin and end differ), which is not supported");
  w.padding = {pads[0], pads[1]};
  if (has_dilation) {
    w.dilation = attrs.get_ints("dilations", {1, 1});
    if (w.dilation.size() != 2) attrs.reject("dilations", "must have 2 values");
  }
  return w;
}

class Importer {
 public:
  Importer(const onnx::GraphProto& graph, std::string what) : g_(graph), what_(std::move(what)) {}

  std::shared_ptr<nn::Graph> run() {
    for (const auto& node : g_.node())
      for (const auto& in : node.input()) readers_.emplace(in, node_label(node));
    for (const auto& t : g_.initializer()) {
      constants_[t.name()] = read_tensor(t, what_);
      check_finite(constants_[t.name()], "initializer '" + t.name() + "'", t.name());
    }
    std::vector<std::string> inputs;
    for (const auto& in : g_.input())
      if (constants_.count(in.name()) == 0) inputs.push_back(in.name());
    QGRAD_CHECK(inputs.size() == 1, ValueError, "import_onnx: ", what_, " has ", inputs.size(),
                " graph inputs besides its weights; only models with one input are supported");
    QGRAD_CHECK(g_.output_size() == 1, ValueError, "import_onnx: ", what_, " has ",
                g_.output_size(), " graph outputs; only models with one output are supported");
    QGRAD_CHECK(g_.node_size() > 0, ValueError, "import_onnx: ", what_, " has no nodes");
    for (const auto& node : g_.node())
      for (const auto& in : node.input()) ++uses_[in];
    ++uses_[g_.output(0).name()];
    graph_ = std::make_shared<nn::Graph>(inputs[0], g_.output(0).name());
    int index = 0;
    for (const auto& node : g_.node()) import_node(node, index++);
    flush_matmuls();
    QGRAD_CHECK(pads_.empty(), ValueError, "import_onnx: ", node_label(pads_.begin()->second.node),
                ": Pad is supported only as the zero padding of an AveragePool");
    QGRAD_CHECK(constants_.count(g_.output(0).name()) == 0, ValueError, "import_onnx: ", what_,
                ": the output '", g_.output(0).name(), "' is a constant");
    return graph_;
  }

 private:
  using ModulePtr = std::shared_ptr<nn::Module>;

  // A NaN or infinity in a weight would surface only as NaN outputs far from its cause (and a
  // quantizer cannot represent it), so the import stops at the first one, naming where it is.
  void check_finite(const Constant& c, const std::string& source, const std::string& value) const {
    const auto bad =
        std::find_if(c.floats.begin(), c.floats.end(), [](float v) { return !std::isfinite(v); });
    const auto reader = readers_.find(value);
    QGRAD_CHECK(bad == c.floats.end(), ValueError, "import_onnx: ", what_, ": ", source,
                ", read by ", reader == readers_.end() ? std::string("no node") : reader->second,
                ", has a non-finite value (", *bad, ") at element ", bad - c.floats.begin());
  }

  const Constant* constant(const std::string& name) const {
    const auto it = constants_.find(name);
    return it == constants_.end() ? nullptr : &it->second;
  }
  // Input i of node, which must be a constant (a weight).
  const Constant& const_input(const onnx::NodeProto& node, int i) const {
    QGRAD_CHECK(i < node.input_size() && !node.input(i).empty(), ValueError,
                "import_onnx: ", node_label(node), " lacks input ", i);
    const Constant* c = constant(node.input(i));
    QGRAD_CHECK(c != nullptr && c->is_float, ValueError, "import_onnx: ", node_label(node),
                ": input ", i, " ('", node.input(i), "') must be a float constant");
    return *c;
  }
  const Constant* optional_const(const onnx::NodeProto& node, int i) const {
    if (i >= node.input_size() || node.input(i).empty()) return nullptr;
    return &const_input(node, i);
  }
  // Input i as a graph value (not a constant); a pending MatMul read here becomes a Linear.
  std::string value_input(const onnx::NodeProto& node, int i) {
    QGRAD_CHECK(i < node.input_size() && !node.input(i).empty(), ValueError,
                "import_onnx: ", node_label(node), " lacks input ", i);
    const auto& name = node.input(i);
    QGRAD_CHECK(constant(name) == nullptr, ValueError, "import_onnx: ", node_label(node),
                ": input ", i, " ('", name, "') is a constant; only a computed value is supported");
    flush_matmul(name);
    QGRAD_CHECK(pads_.count(name) == 0, ValueError,
                "import_onnx: ", node_label(pads_.at(name).node),
                ": Pad is supported only as the zero padding of an AveragePool, not before ",
                node_label(node));
    return name;
  }
  std::string output(const onnx::NodeProto& node) const {
    QGRAD_CHECK(node.output_size() >= 1 && !node.output(0).empty(), ValueError,
                "import_onnx: ", node_label(node), " has no output");
    for (int i = 1; i < node.output_size(); ++i) {
      const auto it = uses_.find(node.output(i));
      QGRAD_CHECK(node.output(i).empty() || it == uses_.end() || it->second == 0, ValueError,
                  "import_onnx: ", node_label(node), ": output ", i, " ('", node.output(i),
                  "') is used; only the first output is supported");
    }
    return node.output(0);
  }
  std::string module_name(const onnx::NodeProto& node, int index) {
    std::string base = sanitize(node.name());
    if (base.empty()) base = node.op_type() + "_" + std::to_string(index);
    std::string name = base;
    for (int k = 1; names_.count(name) != 0; ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }
  void add(const onnx::NodeProto& node, int index, ModulePtr module,
           const std::vector<std::string>& inputs) {
    graph_->add_node(module_name(node, index), std::move(module), inputs, output(node));
  }
  static void load(nn::Module& module, const std::vector<std::pair<std::string, Tensor>>& values) {
    auto state = module.state_dict();
    for (const auto& [key, t] : values) state.insert_or_assign(key, t);
    module.load_state_dict(state);
  }

  void import_node(const onnx::NodeProto& node, int index) {
    QGRAD_CHECK(node.domain().empty() || node.domain() == "ai.onnx", ValueError,
                "import_onnx: ", node_label(node), ": operator domain '", node.domain(),
                "' is not supported");
    Attributes attrs(node);
    const auto& op = node.op_type();
    if (op == "Constant") {
      const auto* value = attrs.claim("value");
      QGRAD_CHECK(value != nullptr && value->has_t(), ValueError, "import_onnx: ", node_label(node),
                  ": only a 'value' tensor attribute is supported");
      constants_[output(node)] = read_tensor(value->t(), node_label(node));
      check_finite(constants_[output(node)], "the value of " + node_label(node), output(node));
    } else if ((op == "Identity" || op == "Dropout") && node.input_size() >= 1 &&
               constant(node.input(0)) != nullptr) {
      attrs.get_float("ratio", 0.5f);  // Dropout before opset 12; no effect in inference
      constants_[output(node)] = *constant(node.input(0));
    } else if (op == "Identity" || op == "Dropout") {
      attrs.get_float("ratio", 0.5f);
      if (op == "Dropout" && node.input_size() >= 3 && !node.input(2).empty()) {
        const Constant* training = constant(node.input(2));
        QGRAD_CHECK(training != nullptr && !training->is_float && training->ints.size() == 1 &&
                        training->ints[0] == 0,
                    ValueError, "import_onnx: ", node_label(node),
                    ": only inference-mode Dropout (training_mode a constant false) is supported");
      }
      add(node, index, std::make_shared<nn::Identity>(), {value_input(node, 0)});
    } else if (op == "Conv") {
      import_conv(node, index, attrs);
    } else if (op == "BatchNormalization") {
      import_batchnorm(node, index, attrs);
    } else if (op == "Relu") {
      add(node, index, std::make_shared<nn::ReLU>(), {value_input(node, 0)});
    } else if (op == "Clip") {
      import_clip(node, index, attrs);
    } else if (op == "Add") {
      import_add(node, index);
    } else if (op == "MaxPool") {
      if (attrs.get_int("ceil_mode", 0) != 0) attrs.reject("ceil_mode", "= 1 is not supported");
      if (attrs.get_int("storage_order", 0) != 0)
        attrs.reject("storage_order", "= 1 is not supported");
      const Window w = read_window(attrs, {}, true);
      add(node, index,
          std::make_shared<nn::MaxPool2d>(
              nn::MaxPool2dOptions(w.kernel).stride(w.stride).padding(w.padding).dilation(
                  w.dilation)),
          {value_input(node, 0)});
    } else if (op == "AveragePool") {
      if (attrs.get_int("ceil_mode", 0) != 0) attrs.reject("ceil_mode", "= 1 is not supported");
      bool include_pad = attrs.get_int("count_include_pad", 0) != 0;
      Window w = read_window(attrs, {}, false);
      const std::string x = pooled_input(node, w, include_pad);
      add(node, index,
          std::make_shared<nn::AvgPool2d>(
              nn::AvgPool2dOptions(w.kernel).stride(w.stride).padding(w.padding).count_include_pad(
                  include_pad)),
          {x});
    } else if (op == "Pad") {
      import_pad(node, attrs);
    } else if (op == "GlobalAveragePool") {
      add(node, index, std::make_shared<nn::AdaptiveAvgPool2d>(1), {value_input(node, 0)});
    } else if (op == "Flatten") {
      if (attrs.get_int("axis", 1) != 1) attrs.reject("axis", "must be 1 (flattening after N)");
      add(node, index, std::make_shared<nn::Flatten>(1, -1), {value_input(node, 0)});
    } else if (op == "Reshape") {
      if (attrs.get_int("allowzero", 0) != 0) attrs.reject("allowzero", "= 1 is not supported");
      const std::string x = value_input(node, 0);
      const Constant* shape =
          node.input_size() >= 2 ? constant(node.input(1)) : static_cast<const Constant*>(nullptr);
      // [0, -1] (keep N) or [n, -1] as traced for a fixed batch: both flatten after N.
      QGRAD_CHECK(shape != nullptr && !shape->is_float && shape->ints.size() == 2 &&
                      shape->ints[0] >= 0 && shape->ints[1] == -1,
                  ValueError, "import_onnx: ", node_label(node),
                  ": only a constant target shape [N, -1] is supported");
      add(node, index, std::make_shared<nn::Flatten>(1, -1), {x});
    } else if (op == "Gemm") {
      import_gemm(node, index, attrs);
    } else if (op == "MatMul") {
      const std::string x = value_input(node, 0);
      const Constant& w = const_input(node, 1);
      QGRAD_CHECK(w.dims.size() == 2, ValueError, "import_onnx: ", node_label(node),
                  ": only a 2-d constant right operand is supported");
      pending_[output(node)] = PendingMatMul{node, index, x, w};
    } else {
      QGRAD_CHECK(false, ValueError, "import_onnx: ", node_label(node),
                  ": operator '" + op + "' is not supported (supported: Conv, BatchNormalization, ",
                  "Relu, Clip, Add, MaxPool, AveragePool, GlobalAveragePool, Flatten, Reshape, ",
                  "Gemm, MatMul, Identity, Dropout, Constant, Pad before AveragePool)");
    }
    attrs.check_all_claimed();
  }

  // PyTorch exports AvgPool2d(padding=p, count_include_pad=True) as Pad (zeros) + AveragePool;
  // the Pad waits for its AveragePool, which takes its padding.
  void import_pad(const onnx::NodeProto& node, Attributes& attrs) {
    QGRAD_CHECK(node.input_size() >= 1 && !node.input(0).empty(), ValueError,
                "import_onnx: ", node_label(node), " lacks input 0");
    const std::string x = value_input(node, 0);
    const auto mode = attrs.get_string("mode", "constant");
    if (mode != "constant") attrs.reject("mode", "= " + mode + " is not supported");
    std::vector<std::int64_t> pads = attrs.get_ints("pads", {});
    float value = attrs.get_float("value", 0.0f);
    if (node.input_size() >= 2 && !node.input(1).empty()) {
      const Constant* c = constant(node.input(1));
      QGRAD_CHECK(c != nullptr && !c->is_float, ValueError, "import_onnx: ", node_label(node),
                  ": the pads must be an int64 constant");
      pads = c->ints;
    }
    if (node.input_size() >= 3 && !node.input(2).empty()) {
      const Constant& v = const_input(node, 2);
      QGRAD_CHECK(v.floats.size() == 1, ValueError, "import_onnx: ", node_label(node),
                  ": the constant value must be a scalar");
      value = v.floats[0];
    }
    QGRAD_CHECK(value == 0.0f && pads.size() == 8 && pads[0] == 0 && pads[1] == 0 && pads[4] == 0 &&
                    pads[5] == 0 && pads[2] == pads[6] && pads[3] == pads[7],
                ValueError, "import_onnx: ", node_label(node),
                ": only symmetric zero padding of H and W (4-d) is supported");
    pads_.insert_or_assign(output(node), PendingPad{node, x, {pads[2], pads[3]}});
  }

  // The input of an AveragePool, taking over a Pad before it (then the pool pads nothing itself
  // and counts the padded zeros).
  std::string pooled_input(const onnx::NodeProto& node, Window& w, bool& include_pad) {
    const auto it = node.input_size() >= 1 ? pads_.find(node.input(0)) : pads_.end();
    if (it == pads_.end()) return value_input(node, 0);
    QGRAD_CHECK(uses_[node.input(0)] == 1 && w.padding == Shape({0, 0}), ValueError,
                "import_onnx: ", node_label(it->second.node),
                ": Pad is supported only as the zero padding of an AveragePool without pads");
    w.padding = it->second.padding;
    include_pad = true;
    const std::string x = it->second.input;
    pads_.erase(it);
    return x;
  }

  void import_conv(const onnx::NodeProto& node, int index, Attributes& attrs) {
    const std::string x = value_input(node, 0);
    const Constant& w = const_input(node, 1);
    const Constant* b = optional_const(node, 2);
    QGRAD_CHECK(w.dims.size() == 4, ValueError, "import_onnx: ", node_label(node),
                ": only 2-d convolutions (a 4-d weight) are supported");
    const std::int64_t groups = attrs.get_int("group", 1);
    if (groups < 1 || groups > w.dims[0] || w.dims[0] % groups != 0)
      attrs.reject("group", "must divide the output channels");
    const Window win = read_window(attrs, {w.dims[2], w.dims[3]}, true);
    Generator gen(0);  // the weights are overwritten below
    auto conv =
        std::make_shared<nn::Conv2d>(nn::Conv2dOptions(w.dims[1] * groups, w.dims[0], win.kernel)
                                         .stride(win.stride)
                                         .padding(win.padding)
                                         .dilation(win.dilation)
                                         .groups(groups)
                                         .bias(b != nullptr),
                                     gen);
    std::vector<std::pair<std::string, Tensor>> values{{"weight", to_tensor(w)}};
    if (b != nullptr) values.emplace_back("bias", to_tensor(*b));
    load(*conv, values);
    add(node, index, conv, {x});
  }

  void import_batchnorm(const onnx::NodeProto& node, int index, Attributes& attrs) {
    const std::string x = value_input(node, 0);
    const float eps = attrs.get_float("epsilon", 1e-5f);
    attrs.get_float("momentum", 0.9f);  // training only; qgrad keeps its own default
    if (attrs.get_int("training_mode", 0) != 0)
      attrs.reject("training_mode", "= 1 is not supported (inference form only)");
    const Constant& scale = const_input(node, 1);
    QGRAD_CHECK(scale.dims.size() == 1, ValueError, "import_onnx: ", node_label(node),
                ": the scale must be 1-d");
    auto bn = std::make_shared<nn::BatchNorm2d>(
        nn::BatchNormOptions(scale.dims[0]).eps(static_cast<double>(eps)));
    load(*bn, {{"weight", to_tensor(scale)},
               {"bias", to_tensor(const_input(node, 2))},
               {"running_mean", to_tensor(const_input(node, 3))},
               {"running_var", to_tensor(const_input(node, 4))}});
    add(node, index, bn, {x});
  }

  void import_clip(const onnx::NodeProto& node, int index, Attributes& attrs) {
    const std::string x = value_input(node, 0);
    constexpr float kInf = std::numeric_limits<float>::infinity();
    // Bounds from inputs (opset 11 on) or attributes (before).
    float lo = attrs.get_float("min", -kInf), hi = attrs.get_float("max", kInf);
    auto bound = [&](int i, float& v) {
      const Constant* c = optional_const(node, i);
      if (c == nullptr) return;
      QGRAD_CHECK(c->floats.size() == 1, ValueError, "import_onnx: ", node_label(node), ": bound ",
                  i, " must be a scalar");
      v = c->floats[0];
    };
    bound(1, lo);
    bound(2, hi);
    ModulePtr m;
    if (lo == 0.0f && hi == 6.0f)
      m = std::make_shared<nn::ReLU6>();
    else if (lo == 0.0f && hi == kInf)
      m = std::make_shared<nn::ReLU>();
    else
      m = std::make_shared<nn::Hardtanh>(lo, hi);
    add(node, index, m, {x});
  }

  void import_add(const onnx::NodeProto& node, int index) {
    QGRAD_CHECK(node.input_size() == 2, ValueError, "import_onnx: ", node_label(node),
                ": needs two inputs");
    const bool c0 = constant(node.input(0)) != nullptr, c1 = constant(node.input(1)) != nullptr;
    if (c0 != c1) {
      // A bias after MatMul: the two become one Linear.
      const std::string& v = node.input(c0 ? 1 : 0);
      const Constant& bias = *constant(node.input(c0 ? 0 : 1));
      const auto it = pending_.find(v);
      QGRAD_CHECK(it != pending_.end() && uses_[v] == 1 && bias.is_float &&
                      bias.numel() == it->second.weight.dims[1],
                  ValueError, "import_onnx: ", node_label(node),
                  ": adding a constant is supported only as the bias of a MatMul");
      PendingMatMul mm = it->second;
      pending_.erase(it);
      add_linear(mm.node, mm.index, mm.input, mm.weight, &bias, output(node));
      return;
    }
    add(node, index, std::make_shared<nn::Add>(), {value_input(node, 0), value_input(node, 1)});
  }

  void import_gemm(const onnx::NodeProto& node, int index, Attributes& attrs) {
    const std::string x = value_input(node, 0);
    if (attrs.get_float("alpha", 1.0f) != 1.0f) attrs.reject("alpha", "must be 1");
    if (attrs.get_float("beta", 1.0f) != 1.0f) attrs.reject("beta", "must be 1");
    if (attrs.get_int("transA", 0) != 0) attrs.reject("transA", "= 1 is not supported");
    const bool trans_b = attrs.get_int("transB", 0) != 0;
    Constant w = const_input(node, 1);
    QGRAD_CHECK(w.dims.size() == 2, ValueError, "import_onnx: ", node_label(node),
                ": B must be 2-d");
    if (trans_b) w = transposed(w);  // add_linear takes [in, out] as MatMul does
    const Constant* c = optional_const(node, 2);
    QGRAD_CHECK(c == nullptr || c->numel() == w.dims[1], ValueError,
                "import_onnx: ", node_label(node), ": C must have one value per output");
    add_linear(node, index, x, w, c, output(node));
  }

  static Constant transposed(const Constant& w) {
    Constant t = w;
    const auto rows = w.dims[0], cols = w.dims[1];
    t.dims = {cols, rows};
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t k = 0; k < cols; ++k)
        t.floats[static_cast<std::size_t>(k * rows + r)] =
            w.floats[static_cast<std::size_t>(r * cols + k)];
    return t;
  }

  // A Linear computing x @ w (+ bias), w of shape [in, out].
  void add_linear(const onnx::NodeProto& node, int index, const std::string& x, const Constant& w,
                  const Constant* bias, const std::string& out) {
    Generator gen(0);
    auto linear = std::make_shared<nn::Linear>(
        nn::LinearOptions(w.dims[0], w.dims[1]).bias(bias != nullptr), gen);
    std::vector<std::pair<std::string, Tensor>> values{{"weight", to_tensor(transposed(w))}};
    if (bias != nullptr) {
      Constant b = *bias;
      b.dims = {w.dims[1]};
      values.emplace_back("bias", to_tensor(b));
    }
    load(*linear, values);
    graph_->add_node(module_name(node, index), linear, {x}, out);
  }

  // A MatMul whose output is read by something other than a bias Add: a Linear without bias.
  void flush_matmul(const std::string& value) {
    const auto it = pending_.find(value);
    if (it == pending_.end()) return;
    PendingMatMul mm = it->second;
    pending_.erase(it);
    add_linear(mm.node, mm.index, mm.input, mm.weight, nullptr, value);
  }
  void flush_matmuls() {
    while (!pending_.empty()) flush_matmul(pending_.begin()->first);
  }

  struct PendingMatMul {
    onnx::NodeProto node;
    int index = 0;
    std::string input;
    Constant weight;
  };

  struct PendingPad {
    onnx::NodeProto node;
    std::string input;
    Shape padding;
  };

  const onnx::GraphProto& g_;
  std::string what_;
  std::shared_ptr<nn::Graph> graph_;
  std::map<std::string, Constant> constants_;
  std::map<std::string, int> uses_;
  std::map<std::string, std::string> readers_;  // value -> label of the first node reading it
  std::map<std::string, PendingMatMul> pending_;
  std::map<std::string, PendingPad> pads_;
  std::set<std::string> names_;
};

}  // namespace

std::shared_ptr<nn::Graph> import_onnx_bytes(const std::string& bytes, const std::string& what) {
  onnx::ModelProto model;
  QGRAD_CHECK(!bytes.empty() && model.ParseFromString(bytes) && model.has_graph() &&
                  model.graph().node_size() > 0,
              ValueError, "import_onnx: ", what,
              " is not an ONNX model (it does not parse as one, is truncated or has no graph)");
  for (const auto& opset : model.opset_import())
    QGRAD_CHECK(!(opset.domain().empty() || opset.domain() == "ai.onnx") || opset.version() <= 17,
                ValueError, "import_onnx: ", what, " uses ONNX opset ", opset.version(),
                "; opsets up to 17 are supported");
  return Importer(model.graph(), what).run();
}

std::shared_ptr<nn::Graph> import_onnx(const std::string& path) {
  return import_onnx_bytes(read_file(path, "import_onnx"), "'" + path + "'");
}

}  // namespace qgrad::deploy
