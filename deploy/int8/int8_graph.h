// Int8Graph: the int8 form of an nn::Graph (an imported ONNX model), its int8 layers run in order
// over named values as the graph runs its modules: each step reads one value (any Int8Layer) or
// two (an Int8Add, a residual add) and writes one. Which grid each value is on was settled by
// quant::convert (convert_graph.cpp); this class only runs the steps. A value that no later step
// reads is released as soon as the step that reads it last has run.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "deploy/int8/int8_add.h"
#include "deploy/int8/int8_layer.h"

namespace qgrad::quant {

class Int8Graph : public Int8Layer {
 public:
  // A graph reading `input` and returning `output`; `name` for describe().
  Int8Graph(std::string name, std::string input, std::string output);
  // Appends a step reading `input` (a value the graph reads or an earlier step writes) and
  // writing `output` (a new value); ValueError otherwise.
  void add_step(std::unique_ptr<Int8Layer> layer, const std::string& input,
                const std::string& output);
  // Appends a residual add of values `a` and `b` writing `output`.
  void add_step(std::unique_ptr<Int8Add> add, const std::string& a, const std::string& b,
                const std::string& output);
  // Whether `value` is the graph's input or written by a step so far.
  bool defined(const std::string& value) const;

  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  // Each step's, in run order.
  std::vector<std::pair<std::string, std::string>> implementations() const override;

 private:
  struct Step {
    std::unique_ptr<Int8Layer> layer;
    Int8Add* add = nullptr;  // layer as an add (two inputs), else null
    std::vector<std::string> inputs;
    std::string output;
  };
  void append(Step step);

  std::string name_, input_, output_;
  std::vector<Step> steps_;
  std::vector<std::string> defined_;
};

}  // namespace qgrad::quant
