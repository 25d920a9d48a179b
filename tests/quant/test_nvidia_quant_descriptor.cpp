// Tests of QuantDescriptor: defaults, validation errors, JSON with only non-default fields and an
// exact round trip for every field (including the ones the reference's dict()/YAML lose).
#include <catch2/catch.hpp>

#include "quant/nvidia/quant_descriptor.h"

using namespace qgrad;
using namespace qgrad::nvidia;
using json = nlohmann::json;

namespace {
QuantDescriptor round_trip(const QuantDescriptor& d) {
  // Through text, as a config file would be.
  return QuantDescriptor::from_json(json::parse(d.to_json().dump()));
}
BlockSizes nvfp4_blocks() {
  BlockSizes b;
  b.axes = {{-1, 16}};
  b.type = BlockQuantType::Dynamic;
  b.scale_bits = NumBits(4, 3);
  return b;
}
}  // namespace

TEST_CASE("nvidia QuantDescriptor: defaults and empty JSON", "[quant][nvidia]") {
  QuantDescriptor d;
  CHECK(d.num_bits() == NumBits(8));
  CHECK_FALSE(d.name());
  CHECK(d.fake_quant());
  CHECK(d.axis().is_none());
  CHECK_FALSE(d.block_sizes());
  CHECK_FALSE(d.amax());
  CHECK_FALSE(d.learn_amax());
  CHECK_FALSE(d.scale_amax());
  CHECK(d.calib_method() == CalibMethod::Max);
  CHECK_FALSE(d.is_unsigned());
  CHECK_FALSE(d.narrow_range());
  CHECK_FALSE(d.dynamic());
  CHECK(d.to_json() == json::object());
  CHECK(QuantDescriptor::from_json(json::object()) == d);
}

TEST_CASE("nvidia QuantDescriptor: JSON holds only non-default fields", "[quant][nvidia]") {
  QuantDescriptor d(QuantDescriptorOptions().num_bits(4).axis(0).narrow_range(true));
  CHECK(d.to_json() == json{{"num_bits", 4}, {"axis", 0}, {"narrow_range", true}});
  QuantDescriptor f(QuantDescriptorOptions().num_bits(NumBits(4, 3)).calib_method("histogram"));
  CHECK(f.to_json() == json{{"num_bits", {4, 3}}, {"calib_method", "histogram"}});
  QuantDescriptor b(QuantDescriptorOptions().num_bits(NumBits(2, 1)).block_sizes(nvfp4_blocks()));
  CHECK(b.to_json().dump() ==
        R"({"block_sizes":{"-1":16,"scale_bits":[4,3],"type":"dynamic"},"num_bits":[2,1]})");
}

TEST_CASE("nvidia QuantDescriptor: every field round-trips exactly", "[quant][nvidia]") {
  std::vector<QuantDescriptor> cases;
  cases.emplace_back(QuantDescriptorOptions()
                         .num_bits(6)
                         .name("conv1.weight")
                         .fake_quant(false)
                         .axis(QuantAxis::tuple({0}))
                         .amax(AmaxValue{{3, 1}, {0.5, 1.25, 3.0000000000000004}})
                         .scale_amax(0.9)
                         .is_unsigned(true)
                         .narrow_range(true));
  cases.emplace_back(QuantDescriptorOptions().axis(0));  // int axis (the YAML writer crashed)
  cases.emplace_back(QuantDescriptorOptions().axis(QuantAxis::tuple({0, -1})));
  cases.emplace_back(QuantDescriptorOptions().amax(2.5).learn_amax(true).calib_method("histogram"));
  cases.emplace_back(QuantDescriptorOptions().num_bits(NumBits(2, 1)).block_sizes(nvfp4_blocks()));
  BlockSizes dq;
  dq.axes = {{-1, 64}, {0, 2}};
  dq.scale_bits = NumBits(8);
  dq.scale_block_sizes = {{-1, 256}};
  cases.emplace_back(QuantDescriptorOptions().num_bits(4).block_sizes(dq));
  cases.emplace_back(QuantDescriptorOptions().dynamic(true).num_bits(NumBits(5, 2)));
  cases.emplace_back(QuantDescriptorOptions().num_bits(NumBits(4, 3)).fp8_recipe("modelopt"));
  for (const QuantDescriptor& d : cases) {
    INFO(d.to_json().dump());
    const QuantDescriptor back = round_trip(d);
    CHECK(back == d);
    CHECK(back.to_json() == d.to_json());
  }
  // int axis and 1-tuple stay different, as do a scalar and a 1-element amax.
  CHECK(QuantDescriptor(QuantDescriptorOptions().axis(0)) !=
        QuantDescriptor(QuantDescriptorOptions().axis(QuantAxis::tuple({0}))));
  CHECK(QuantDescriptor(QuantDescriptorOptions().amax(1.0)) !=
        QuantDescriptor(QuantDescriptorOptions().amax(AmaxValue{{1}, {1.0}})));
  CHECK(round_trip(QuantDescriptor(QuantDescriptorOptions().amax(AmaxValue{{1}, {1.0}})))
            .amax()
            ->shape == Shape{1});
}

TEST_CASE("nvidia QuantDescriptor: validation errors", "[quant][nvidia]") {
  using O = QuantDescriptorOptions;
  auto make = [](const O& o) { return QuantDescriptor(o); };
  BlockSizes b;
  b.axes = {{-1, 32}};
  REQUIRE_THROWS_WITH(make(O().axis(0).block_sizes(b)), Catch::Contains("mutually exclusive"));
  REQUIRE_THROWS_WITH(make(O().num_bits(1)), Catch::Contains("QuantDescriptor"));
  REQUIRE_THROWS_AS(make(O().num_bits(0)), ValueError);
  REQUIRE_THROWS_AS(make(O().num_bits(25)), ValueError);
  REQUIRE_NOTHROW(make(O().num_bits(1).is_unsigned(true)));
  REQUIRE_THROWS_AS(make(O().num_bits(NumBits(9, 3))), ValueError);
  REQUIRE_THROWS_AS(make(O().num_bits(NumBits(4, 3)).is_unsigned(true)), ValueError);
  REQUIRE_THROWS_AS(make(O().num_bits(NumBits(4, 3)).narrow_range(true)), ValueError);
  REQUIRE_THROWS_WITH(make(O().learn_amax(true).axis(0)), Catch::Contains("learn_amax"));
  REQUIRE_THROWS_AS(make(O().learn_amax(true).block_sizes(b)), ValueError);
  REQUIRE_THROWS_AS(make(O().learn_amax(true).dynamic(true)), ValueError);
  REQUIRE_THROWS_WITH(make(O().calib_method("entropy")), Catch::Contains("calib_method"));
  REQUIRE_THROWS_AS(make(O().calib_method("histogram").axis(1)), ValueError);
  REQUIRE_THROWS_AS(make(O().amax(-1.0)), ValueError);
  REQUIRE_THROWS_AS(make(O().amax(AmaxValue{{2}, {1.0}})), ValueError);
  REQUIRE_THROWS_AS(make(O().amax(1.0).dynamic(true)), ValueError);
  REQUIRE_THROWS_AS(make(O().scale_amax(0.0)), ValueError);
  REQUIRE_THROWS_AS(make(O().axis(QuantAxis::tuple({}))), ValueError);
  REQUIRE_THROWS_WITH(make(O().fp8_recipe("modelopt")), Catch::Contains("needs num_bits (4, 3)"));
  REQUIRE_THROWS_AS(make(O().num_bits(NumBits(5, 2)).fp8_recipe("modelopt")), ValueError);
  REQUIRE_THROWS_WITH(make(O().num_bits(NumBits(4, 3)).fp8_recipe("tensorrt")),
                      Catch::Contains("unknown fp8_recipe"));
  REQUIRE(make(O().num_bits(NumBits(4, 3)).fp8_recipe("modelopt")).fp8_recipe() ==
          Fp8Recipe::Modelopt);
  REQUIRE(QuantDescriptor().fp8_recipe() == Fp8Recipe::PytorchQuantization);
  REQUIRE_THROWS_AS(make(O().axis(QuantAxis::tuple({1, 1}))), ValueError);
  BlockSizes bad = b;
  bad.axes = {{-1, 0}};
  REQUIRE_THROWS_AS(make(O().block_sizes(bad)), ValueError);
  bad = b;
  bad.scale_block_sizes = {{-1, 4}};
  REQUIRE_THROWS_AS(make(O().block_sizes(bad)), ValueError);
  // from_json: unknown fields and wrong types.
  REQUIRE_THROWS_WITH(QuantDescriptor::from_json(json{{"num_bitz", 8}}),
                      Catch::Contains("unknown field"));
  REQUIRE_THROWS_AS(QuantDescriptor::from_json(json{{"axis", "0"}}), ValueError);
  REQUIRE_THROWS_AS(QuantDescriptor::from_json(json{{"num_bits", {4, 3, 1}}}), ValueError);
  REQUIRE_THROWS_AS(QuantDescriptor::from_json(json{{"unsigned", 1}}), ValueError);
  REQUIRE_THROWS_AS(QuantDescriptor::from_json(json::parse(R"({"amax": [[1, 2], [3]]})")),
                    ValueError);
  REQUIRE_THROWS_AS(QuantDescriptor::from_json(json::parse(R"({"block_sizes": {"x": 3}})")),
                    ValueError);
  REQUIRE_THROWS_AS(
      QuantDescriptor::from_json(json::parse(R"({"block_sizes": {"-1": 3, "type": "later"}})")),
      ValueError);
  REQUIRE_THROWS_AS(QuantDescriptor::from_json(json::array()), ValueError);
}
