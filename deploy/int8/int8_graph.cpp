// Int8Graph: int8 steps over named values, run in order.
#include "deploy/int8/int8_graph.h"

#include <algorithm>
#include <unordered_map>

#include "core/error.h"

namespace qgrad::quant {

Int8Graph::Int8Graph(std::string name, std::string input, std::string output)
    : name_(std::move(name)), input_(std::move(input)), output_(std::move(output)) {
  defined_.push_back(input_);
}

bool Int8Graph::defined(const std::string& value) const {
  return std::find(defined_.begin(), defined_.end(), value) != defined_.end();
}

void Int8Graph::append(Step step) {
  QGRAD_CHECK(step.layer != nullptr, ValueError, "Int8Graph: ", name_, ": null step");
  for (const std::string& in : step.inputs)
    QGRAD_CHECK(defined(in), ValueError, "Int8Graph: ", name_, ": step ", step.layer->describe(),
                " reads '", in, "', which no earlier step writes");
  QGRAD_CHECK(!defined(step.output), ValueError, "Int8Graph: ", name_, ": step ",
              step.layer->describe(), " writes '", step.output, "', which is already defined");
  defined_.push_back(step.output);
  steps_.push_back(std::move(step));
}

void Int8Graph::add_step(std::unique_ptr<Int8Layer> layer, const std::string& input,
                         const std::string& output) {
  append({std::move(layer), nullptr, {input}, output});
}

void Int8Graph::add_step(std::unique_ptr<Int8Add> add, const std::string& a, const std::string& b,
                         const std::string& output) {
  Int8Add* raw = add.get();
  append({std::move(add), raw, {a, b}, output});
}

Tensor Int8Graph::forward(const Tensor& x) {
  // How many steps still read each value, so activations are freed as early as in a chain.
  std::unordered_map<std::string, int> pending;
  for (const Step& s : steps_)
    for (const std::string& in : s.inputs) ++pending[in];
  std::unordered_map<std::string, Tensor> values{{input_, x}};
  auto take = [&](const std::string& v) {
    Tensor t = values.at(v);
    if (--pending[v] == 0 && v != output_) values.erase(v);
    return t;
  };
  for (const Step& s : steps_) {
    if (s.add != nullptr) {
      const Tensor a = take(s.inputs[0]);
      const Tensor b = take(s.inputs[1]);
      values[s.output] = s.add->add(a, b);
    } else {
      values[s.output] = s.layer->forward(take(s.inputs[0]));
    }
  }
  const auto it = values.find(output_);
  QGRAD_CHECK(it != values.end(), ValueError, "Int8Graph: ", name_, ": no step writes the output '",
              output_, "'");
  return it->second;
}

std::string Int8Graph::describe() const {
  return name_ + ": int8 graph of " + std::to_string(steps_.size()) + " steps";
}

std::vector<std::pair<std::string, std::string>> Int8Graph::implementations() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Step& s : steps_)
    for (auto& info : s.layer->implementations()) out.push_back(std::move(info));
  return out;
}

}  // namespace qgrad::quant
