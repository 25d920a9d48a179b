// nn::Graph: children run over named values in insertion order (a residual add reads a value
// twice), state_dict keys are the node names, and add_node / replace_module refuse nodes that read
// undefined values, redefine a value or take the wrong number of inputs.
#include <catch2/catch.hpp>
#include <memory>

#include "core/error.h"
#include "core/factory.h"
#include "core/generator.h"
#include "nn/modules/activation.h"
#include "nn/modules/add.h"
#include "nn/modules/graph.h"
#include "nn/modules/identity.h"
#include "nn/modules/linear.h"
#include "ops/binary/binary.h"
#include "ops/unary/unary.h"

using namespace qgrad;

TEST_CASE("nn.graph: a residual graph runs its nodes over named values", "[nn][graph]") {
  Generator gen(1);
  nn::Graph g("x", "out");
  auto fc = std::make_shared<nn::Linear>(2, 2, gen);
  g.add_node("fc", fc, {"x"}, "h");
  g.add_node("relu", std::make_shared<nn::ReLU>(), {"h"}, "r");
  g.add_node("add", std::make_shared<nn::Add>(), {"r", "x"}, "out");
  const Tensor x = from_vector<float>({1, -2, 3, 4}, {2, 2});
  const Tensor want = relu(fc->forward(x)) + x;
  CHECK(g.forward(x).to_vector<float>() == want.to_vector<float>());
  const auto keys = g.state_dict().keys();
  CHECK(keys == std::vector<std::string>{"fc.weight", "fc.bias"});

  CHECK_THROWS_AS(g.add_node("bad", std::make_shared<nn::ReLU>(), {"nowhere"}, "z"), ValueError);
  CHECK_THROWS_AS(g.add_node("bad", std::make_shared<nn::ReLU>(), {"x"}, "h"), ValueError);
  CHECK_THROWS_AS(g.add_node("bad", std::make_shared<nn::Add>(), {"x"}, "z"), ValueError);
  CHECK_THROWS_AS(g.add_node("bad", std::make_shared<nn::ReLU>(), {"x", "h"}, "z"), ValueError);
  // Replacing keeps the arity; the replacement is what forward runs.
  CHECK_THROWS_AS(g.replace_module("add", std::make_shared<nn::ReLU>()), ValueError);
  g.replace_module("relu", std::make_shared<nn::Identity>());
  const Tensor want2 = fc->forward(x) + x;
  CHECK(g.forward(x).to_vector<float>() == want2.to_vector<float>());

  nn::Graph empty("x", "y");
  CHECK_THROWS_AS(empty.forward(x), ValueError);
}
