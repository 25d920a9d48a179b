/// @file
/// Graph: a module that runs its children over named values in a fixed order, for models whose
/// data flow is not a chain (an imported ONNX graph with residual adds). Each node is a child
/// module (registered under the node's name, so state_dict keys are "<node>.weight") with the
/// names of the values it reads and the one it writes: a UnaryModule reads one value, an nn::Add
/// (or a subclass such as quant::QuantAdd) reads two. forward(x) binds the graph's input name
/// to x, runs the nodes in the order they were added (a topological order: a node may only read
/// values defined before it) and returns the output value. Children can be swapped with
/// replace_module (quantize_model does) as long as the replacement takes the same number of
/// inputs.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "nn/modules/add.h"
#include "nn/unary_module.h"

namespace qgrad::nn {

/// A directed acyclic graph of child modules over named values, run in insertion order.
class Graph : public UnaryModule {
 public:
  /// A graph reading the value `input` and returning the value `output` (added later by a node).
  Graph(std::string input, std::string output);

  /// Adds node `name` (a new child): a UnaryModule with one input or an nn::Add with two, reading
  /// values already defined and writing `output`, a value not defined before. ValueError otherwise.
  void add_node(const std::string& name, std::shared_ptr<Module> module,
                const std::vector<std::string>& inputs, const std::string& output);

  /// Runs the nodes; ValueError when the output value was never written.
  Tensor forward(const Tensor& input) override;

  /// The input and output value names.
  const std::string& input_name() const { return input_; }
  /// The value forward returns.
  const std::string& output_name() const { return output_; }

  /// One node: the child it runs, the values it reads and the one it writes.
  struct Node {
    std::string name;                    ///< the child's name
    std::vector<std::string> inputs;     ///< the values it reads (one, or two for an Add)
    std::string output;                  ///< the value it writes
    std::shared_ptr<UnaryModule> unary;  ///< the child when it reads one value, else null
    std::shared_ptr<Add> add;            ///< the child when it reads two values, else null
    /// The child module (unary or add).
    std::shared_ptr<Module> module() const;
  };
  /// The nodes in run order (for passes that follow the data flow: BN fusion, export, int8).
  const std::vector<Node>& nodes() const { return nodes_; }
  /// The indices of the nodes reading `value`, in run order (a node reading it twice is listed
  /// twice).
  std::vector<std::size_t> readers(const std::string& value) const;

 protected:
  void on_replace_child(const std::string& name, const std::shared_ptr<Module>& module) override;

 private:
  // Sets node's module handle, checking that it takes node.inputs.size() inputs.
  static void bind(Node& node, const std::shared_ptr<Module>& module);

  std::string input_, output_;
  std::vector<Node> nodes_;
  std::vector<std::string> defined_;  // values defined so far (input and node outputs)
};

}  // namespace qgrad::nn
