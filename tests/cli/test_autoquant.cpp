// Mixed-precision search (cli/bit_allocation.h) and `qgrad autoquant` (cli/autoquant_command.h):
// budgets parse and bound the weight storage; the greedy search keeps sensitive layers wide,
// meets the budget, uses leftover room and agrees with an exhaustive search on small cases; an
// unreachable budget is an error naming the smallest size; autoquant on the synthetic dataset
// writes a recipe whose per-layer rules give each layer its chosen width and whose size meets
// the budget, and compares it with the uniform width.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <sstream>

#include "cli/autoquant_command.h"
#include "cli/bit_allocation.h"
#include "cli/command_dispatch.h"
#include "cli/train_command.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/generator.h"
#include "core/json_parse.h"
#include "nn/models/zoo.h"
#include "quant/modules/quant_conv2d.h"
#include "quant/modules/quant_linear.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/tensor_quantizer.h"

using namespace qgrad;
using namespace qgrad::cli;
using nlohmann::json;
using qgrad_cli_test::TempDir;

namespace {

// The least total cost over every assignment within the budget (exhaustive).
double best_cost(const std::vector<LayerCosts>& layers, const std::vector<int>& bits,
                 double limit) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::size_t> pick(layers.size(), 0);
  std::function<void(std::size_t, double, double)> go = [&](std::size_t i, double used,
                                                            double cost) {
    if (used > limit) return;
    if (i == layers.size()) {
      best = std::min(best, cost);
      return;
    }
    for (std::size_t k = 0; k < bits.size(); ++k)
      go(i + 1, used + static_cast<double>(layers[i].weights) * bits[k], cost + layers[i].costs[k]);
  };
  go(0, 0, 0);
  return best;
}

// autoquant's options for a two-epoch lenet5bn on the synthetic data in `tmp`.
AutoquantOptions tiny_autoquant(TempDir& tmp, const std::string& budget) {
  qgrad_cli_test::write_synthetic_mnist(tmp.file("data"), 128, 100);
  AutoquantOptions o;
  o.source.checkpoint = qgrad_cli_test::train_tiny(tmp, "f", nullptr, 2);
  o.budget = budget;
  o.recipe.calibration_batches = 2;
  o.images = 60;
  o.out = tmp.file("aq");
  o.source.threads = 2;
  return o;
}

// The weight width of each layer of lenet5bn quantized with the recipe autoquant wrote.
std::map<std::string, int> written_weight_bits(TempDir& tmp) {
  const json written =
      parse_json(read_file(tmp.file("aq/autoquant_recipe.json"), "test"), "recipe");
  Generator gen(0);
  auto model = nn::lenet5bn(gen);
  const std::vector<std::string> names =
      quant::quantize_model(*model, quant::QuantRecipe::from_json(written));
  const auto modules = model->named_modules();
  std::map<std::string, int> bits;
  for (const std::string& name : names) {
    const auto m = *modules.find(name);
    std::shared_ptr<nn::UnaryModule> wq;
    if (auto c = std::dynamic_pointer_cast<quant::QuantConv2d>(m)) wq = c->weight_quantizer();
    if (auto l = std::dynamic_pointer_cast<quant::QuantLinear>(m)) wq = l->weight_quantizer();
    if (auto tq = std::dynamic_pointer_cast<quant::TensorQuantizer>(wq))
      bits[name] = tq->descriptor().num_bits().bits();
  }
  return bits;
}

}  // namespace

TEST_CASE("autoquant: budgets", "[cli][autoquant]") {
  const BitBudget a = BitBudget::parse("avg_weight_bits <= 4");
  CHECK(a.kind == BitBudget::Kind::AvgWeightBits);
  CHECK(a.total_bits(1000) == 4000);
  const BitBudget s = BitBudget::parse("size_bytes<=2500");
  CHECK(s.total_bits(1000) == 20000);
  CHECK(s.str() == "size_bytes<=2500");
  for (const char* bad : {"avg_bits<=4", "avg_weight_bits<=", "avg_weight_bits<=-1",
                          "size_bytes<=4k", "avg_weight_bits>=4"})
    REQUIRE_THROWS_AS(BitBudget::parse(bad), UsageError);
}

TEST_CASE("autoquant: the greedy search", "[cli][autoquant]") {
  const std::vector<int> bits{8, 4, 2};
  // A big insensitive layer and a small sensitive one: the big one goes narrow first.
  const std::vector<LayerCosts> layers{{"big", 1000, {0.0, 0.001, 0.01}},
                                       {"small", 100, {0.0, 0.05, 0.30}},
                                       {"mid", 400, {0.0, 0.002, 0.08}}};
  const BitAllocation a = allocate_bits(layers, bits, BitBudget::parse("avg_weight_bits<=4"));
  CHECK(a.weight_bits <= 4 * 1500);
  CHECK(a.bits[0] == 2);  // cheapest bits saved
  CHECK(a.bits[1] == 8);  // sensitive and small: kept wide
  // "mid" went to 4 bits on the way down, then back to 8 in the room left.
  CHECK(a.bits[2] == 8);
  CHECK(a.cost == Approx(0.01));
  CHECK(a.cost == Approx(best_cost(layers, bits, 4 * 1500)));
  CHECK(uniform_bits(layers, bits, BitBudget::parse("avg_weight_bits<=4")) == 4);
  CHECK(uniform_bits(layers, bits, BitBudget::parse("avg_weight_bits<=3.9")) == 2);
  // A generous budget keeps everything at 8 bits; the step back up uses leftover room.
  CHECK(allocate_bits(layers, bits, BitBudget::parse("avg_weight_bits<=8")).bits ==
        std::vector<int>{8, 8, 8});
  // Random small cases: within the budget and close to the exhaustive optimum.
  Generator gen(11);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<LayerCosts> ls;
    for (int i = 0; i < 4; ++i) {
      const double c4 = gen.next_double() * 0.05, c2 = c4 + gen.next_double() * 0.3;
      ls.push_back({"l" + std::to_string(i),
                    50 + static_cast<std::int64_t>(gen.next_double() * 1000),
                    {0.0, c4, c2}});
    }
    std::int64_t n = 0;
    for (const LayerCosts& l : ls) n += l.weights;
    const double avg = 2.5 + gen.next_double() * 4;
    const BitBudget b = BitBudget::parse("avg_weight_bits<=" + std::to_string(avg));
    const BitAllocation al = allocate_bits(ls, bits, b);
    INFO(trial << " budget " << avg);
    CHECK(static_cast<double>(al.weight_bits) <= b.total_bits(n));
    CHECK(al.cost <= best_cost(ls, bits, b.total_bits(n)) + 0.1);
  }
  REQUIRE_THROWS_WITH(allocate_bits(layers, bits, BitBudget::parse("size_bytes<=100")),
                      Catch::Contains("cannot be met") && Catch::Contains("375 bytes"));
}

TEST_CASE("autoquant: a per-layer recipe within the budget", "[cli][autoquant]") {
  TempDir tmp;
  AutoquantOptions o = tiny_autoquant(tmp, "avg_weight_bits<=5");
  std::ostringstream out;
  const AutoquantResult r = run_autoquant(o, out);
  INFO(out.str());
  REQUIRE(r.layers.size() == 5);
  std::int64_t n = 0;
  for (const LayerCosts& l : r.layers) {
    n += l.weights;
    CHECK(l.costs.size() == 3);
  }
  CHECK(n == 150 + 2400 + 30720 + 10080 + 840);  // lenet5bn's conv and linear weights
  CHECK(static_cast<double>(r.allocation.weight_bits) <= 5.0 * static_cast<double>(n));
  CHECK(r.uniform_bits == 4);
  CHECK(r.mixed_accuracy >= 0);
  CHECK(r.mixed_accuracy <= 1);
  // The written recipe gives every layer its chosen width.
  const json written =
      parse_json(read_file(tmp.file("aq/autoquant_recipe.json"), "test"), "recipe");
  CHECK(written == r.recipe);
  const std::map<std::string, int> bits = written_weight_bits(tmp);
  REQUIRE(bits.size() == r.layers.size());
  for (std::size_t i = 0; i < r.layers.size(); ++i)
    CHECK(bits.at(r.layers[i].name) == r.allocation.bits[i]);

  // Bad arguments.
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--checkpoint", "x"}, "autoquant: --budget is required"},
           {{"--checkpoint", "x", "--budget", "bits<4"}, "--budget must be \"avg_weight_bits<=B\""},
           {{"--checkpoint", "x", "--budget", "size_bytes<=9", "--bits", "8,8"},
            "--bits lists 8 twice"},
           {{"--checkpoint", o.source.checkpoint, "--budget", "size_bytes<=9", "--recipe",
             "torch_ao_default", "--out", tmp.file("no")},
            "whose weights have no bit-width key"},
           // Every layer excluded: nothing to allocate (it printed "-nan bits on average").
           {{"--checkpoint", o.source.checkpoint, "--budget", "avg_weight_bits<=5", "--recipe",
             R"({"family": "nvidia", "exclude": ["0", "4", "9", "11", "13"]})", "--out",
             tmp.file("no")},
            "autoquant: the recipe quantizes the weights of no layer"}}) {
    std::vector<std::string> full{"autoquant"};
    full.insert(full.end(), args.begin(), args.end());
    std::ostringstream o2, e2;
    CHECK(run_command_line(full, o2, e2) == 2);
    CHECK_THAT(e2.str(), Catch::Contains(message));
  }
  CHECK_FALSE(std::filesystem::exists(tmp.file("no")));
}

TEST_CASE("autoquant: a layer whose weights --recipe's rules set keeps its rule",
          "[cli][autoquant]") {
  // It was measured with the rule (so its cost looked flat), then written without it: the pinned
  // first layer went to the narrowest width.
  TempDir tmp;
  AutoquantOptions o = tiny_autoquant(tmp, "avg_weight_bits<=4");
  o.recipe.recipe = R"({"family": "nvidia", "layers": {"@first": {"weight": {"num_bits": 8}}}})";
  std::ostringstream out;
  const AutoquantResult r = run_autoquant(o, out);
  INFO(out.str());
  CHECK(r.fixed_layers == std::vector<std::string>{"0"});
  REQUIRE(r.layers.size() == 4);
  CHECK(r.layers.front().name == "4");
  CHECK_THAT(out.str(), Catch::Contains("kept as --recipe's rules set them (not allocated, "
                                        "outside the budget): 0\n"));
  const std::map<std::string, int> bits = written_weight_bits(tmp);
  CHECK(bits.at("0") == 8);  // the user's rule, still in the written recipe
  for (std::size_t i = 0; i < r.layers.size(); ++i)
    CHECK(bits.at(r.layers[i].name) == r.allocation.bits[i]);
}
