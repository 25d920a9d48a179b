// Regression tests for issue 9 in the quantization JSON readers: QuantRecipe::parse and
// QuantDescriptor::parse go through parse_json (100 000 nested brackets, 1e400 and duplicate keys
// are ValueErrors naming the reader, not crashes or nlohmann exceptions), and integer fields
// never wrap or truncate (num_bits 4294967304 used to become 8 and train).
#include <catch2/catch.hpp>

#include <string>

#include "core/error.h"
#include "quant/modules/quant_recipe.h"
#include "quant/nvidia/quant_descriptor.h"

using namespace qgrad;
using qgrad::nvidia::QuantDescriptor;
using qgrad::quant::QuantRecipe;

namespace {
const std::string kDeep = std::string(100000, '[') + std::string(100000, ']');
}  // namespace

TEST_CASE("quant JSON: recipe text is depth-bounded and overflow-checked", "[quant]") {
  struct Case {
    std::string text, message;
  };
  for (const Case& c : std::vector<Case>{
           {kDeep, "nesting deeper than 64"},
           {R"({"family": "nvidia", "input": {"amax": )" + std::string(80, '[') +
                std::string(80, ']') + "}}",
            "nesting deeper than 64"},
           {R"({"family": "nvidia", "input": {"amax": 1e400}})", "out of range"},
           {R"({"family": "nvidia", "family": "lsq"})", "duplicate key \"family\""},
           {R"({"family": "nvidia", "weight": {"num_bits": 4294967304}})", "num_bits"},
           {R"({"family": "nvidia", "weight": {"axis": 18446744073709551615}})", "axis"},
           {R"({"family": "lsq", "weight": {"num_bits": 18446744073709551615}})",
            "\"weight.num_bits\" must lie in [2, 16], got 18446744073709551615"},
           {R"({"family": "torch_ao", "calibration": {"batches": 1000001}})",
            "\"calibration.batches\" must lie in [0, 1000000], got 1000001"},
           {R"({"family": "aimet", "weight": {"bitwidth": 8.0}})",
            "\"weight.bitwidth\" must be an integer in [1, 32], got 8.0"},
           {R"({"family": "nvidia", "exclude": [[[["0"]]]]})",
            "\"exclude\" entries must be strings, got array of 1 element"},
       }) {
    INFO(c.text.substr(0, 120));
    REQUIRE_THROWS_AS(QuantRecipe::parse(c.text), ValueError);
    REQUIRE_THROWS_WITH(QuantRecipe::parse(c.text),
                        Catch::StartsWith("quant recipe: ") && Catch::Contains(c.message));
  }
}

TEST_CASE("quant JSON: descriptor integers never wrap and its text is depth-bounded", "[quant]") {
  struct Case {
    std::string text, message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"num_bits": 4294967304})", "'num_bits' must be a bit count in [0, 64]"},
           {R"({"num_bits": [4294967300, 3]})", "'num_bits[0]' must be a bit count in [0, 64]"},
           {R"({"num_bits": -4294967288})", "'num_bits' must be a bit count"},
           {R"({"axis": 18446744073709551615})", "'axis' must be an integer in int64's range"},
           {R"({"axis": [0, 18446744073709551615]})", "must be an integer in int64's range"},
           {R"({"block_sizes": {"-1": 18446744073709551615}})",
            "'block_sizes.-1' must be an "
            "integer in int64's range"},
           {R"({"num_bits": 8, "num_bits": 4})", "duplicate key \"num_bits\""},
           {R"({"scale_amax": 1e400})", "out of range"},
           {kDeep, "nesting deeper than 64"},
           {R"({"name": [[[[1]]]]})", "'name' must be a string, got array of 1 element"},
       }) {
    INFO(c.text.substr(0, 120));
    REQUIRE_THROWS_AS(QuantDescriptor::parse(c.text), ValueError);
    REQUIRE_THROWS_WITH(QuantDescriptor::parse(c.text),
                        Catch::StartsWith("QuantDescriptor") && Catch::Contains(c.message));
  }
  // In range, the same fields still parse and round-trip.
  const QuantDescriptor d = QuantDescriptor::parse(R"({"num_bits": 4, "axis": [0, -1]})");
  CHECK(d.num_bits() == nvidia::NumBits(4));
  CHECK(QuantDescriptor::parse(d.to_json().dump()) == d);
}
