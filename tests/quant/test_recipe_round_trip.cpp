// The recipe's JSON edge (quant/modules/quant_recipe.h): for every named recipe and a set of
// representative recipes (every family, layer rules in the object and the list form, exclude,
// calibration, numbers written as integers), to_json() writes byte for byte what the version
// before the typed recipe (issue 26) wrote, captured below as the expected text, and from_json()
// reads it back to an equal recipe. Stored checkpoints and configs hold this text.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/factory.h"
#include "quant/learnable/pact.h"
#include "quant/learnable/pact_bits.h"
#include "quant/modules/dorefa_weight_quantizer.h"
#include "quant/modules/named_recipes.h"
#include "quant/modules/pact_activation_quantizer.h"
#include "quant/modules/quant_recipe.h"

using namespace qgrad;
using namespace qgrad::quant;
using json = nlohmann::json;

namespace {

// {recipe text, to_json().dump() as the previous version wrote it}.
const std::vector<std::pair<const char*, const char*>>& representative() {
  static const std::vector<std::pair<const char*, const char*>> cases{
      {R"({"family": "nvidia"})",
       R"({"add":true,"bias":"float","calibration":{"batches":8,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"nvidia","fuse_bn":false,"input":{"num_bits":8},"weight":{"axis":0,"num_bits":8}})"},
      {R"({"family": "torch_ao"})",
       R"({"add":true,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"torch_ao","fuse_bn":false,"input":{"dtype":"quint8","observer":"fused_moving_average_minmax","qscheme":"per_tensor_affine","quant_max":255,"quant_min":0,"reduce_range":true},"weight":{"dtype":"qint8","observer":"fused_moving_average_minmax","qscheme":"per_channel_symmetric","quant_max":127,"quant_min":-128}})"},
      {R"({"family": "lsq"})",
       R"({"add":true,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"lsq","fuse_bn":false,"input":{"init":"minmax","learn_zero_point":true,"signed":false},"weight":{"init":"lsq","signed":true}})"},
      {R"({"family": "horizon", "fuse_bn": true})",
       R"({"add":true,"bias":"float","calibration":{"batches":8,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"horizon","fuse_bn":true,"input":{},"weight":{"per_channel":true}})"},
      {R"({"family": "aimet", "exclude": ["fc"]})",
       R"({"add":true,"bias":"float","calibration":{"batches":8,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":["fc"],"family":"aimet","fuse_bn":false,"input":{"symmetric":false},"weight":{"per_channel":true,"symmetric":true}})"},
      {R"({"family": "pact", "bias": "int32"})",
       R"({"add":true,"bias":"int32","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"pact","fuse_bn":false,"input":{"num_bits":8},"weight":{"num_bits":8}})"},
      {R"({"family": "nvidia", "weight": {"num_bits": 8, "narrow_range": false, "amax": 2, "scale_amax": 1, "name": "w", "fake_quant": true, "unsigned": false}, "input": {"num_bits": 8, "calib_method": "histogram", "num_bins": 1024}, "add": false, "calibration": {"method": "percentile", "percentile": 100, "batches": 16, "start_bin": 64, "stride": 2, "strict": false}})",
       R"({"add":false,"bias":"float","calibration":{"batches":16,"method":"percentile","percentile":100.0,"start_bin":64,"strict":false,"stride":2},"exclude":[],"family":"nvidia","fuse_bn":false,"input":{"calib_method":"histogram","num_bins":1024,"num_bits":8},"weight":{"amax":2,"fake_quant":true,"name":"w","narrow_range":false,"num_bits":8,"scale_amax":1,"unsigned":false}})"},
      {R"({"family": "nvidia", "weight": {"num_bits": [4, 3], "calib_method": "max", "fp8_recipe": "modelopt", "learn_amax": false, "dynamic": false}, "input": null, "calibration": {"method": "mse"}})",
       R"({"add":true,"bias":"float","calibration":{"batches":8,"method":"mse","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"nvidia","fuse_bn":false,"input":null,"weight":{"calib_method":"max","dynamic":false,"fp8_recipe":"modelopt","learn_amax":false,"num_bits":[4,3]}})"},
      {R"({"family": "nvidia", "weight": {"num_bits": 4, "block_sizes": {"-1": 16, "type": "dynamic"}}, "input": {"num_bits": 8, "axis": [1]}})",
       R"({"add":true,"bias":"float","calibration":{"batches":8,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"nvidia","fuse_bn":false,"input":{"axis":[1],"num_bits":8},"weight":{"block_sizes":{"-1":16,"type":"dynamic"},"num_bits":4}})"},
      {R"({"family": "torch_ao", "weight": {"observer": "minmax", "dtype": "qint8", "qscheme": "per_channel_affine", "ch_axis": 1, "eps": 0.0001, "bins": 256, "averaging_constant": 0}, "input": {"observer": "histogram", "reduce_range": false, "quant_min": 0, "quant_max": 127}, "add": false, "exclude": ["0", "fc"]})",
       R"({"add":false,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":["0","fc"],"family":"torch_ao","fuse_bn":false,"input":{"observer":"histogram","quant_max":127,"quant_min":0,"reduce_range":false},"weight":{"averaging_constant":0,"bins":256,"ch_axis":1,"dtype":"qint8","eps":0.0001,"observer":"minmax","qscheme":"per_channel_affine"}})"},
      {R"({"recipe": "lsq_w4a4", "layers": {"layer*": {"weight": {"num_bits": 3}}, "fc": null}, "calibration": {"batches": 2}})",
       R"({"add":false,"bias":"float","calibration":{"batches":2,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"lsq","fuse_bn":false,"input":{"init":"lsq","learn_zero_point":false,"num_bits":4,"signed":false,"use_grad_scaling":true},"layers":[{"match":"layer*","weight":{"num_bits":3}},{"input":{"num_bits":8,"signed":true},"match":"@first","weight":{"num_bits":8}},{"input":{"num_bits":8},"match":"@last","weight":{"num_bits":8}},{"input":null,"match":"fc","weight":null}],"weight":{"init":"lsq","learn_zero_point":false,"num_bits":4,"per_channel":false,"signed":true,"use_grad_scaling":true}})"},
      {R"({"family": "lsq", "weight": {"num_bits": 4, "per_channel": true, "use_grad_scaling": false, "averaging_constant": 1, "init": "observer", "learn_zero_point": true}, "input": {"num_bits": 16, "signed": true}})",
       R"({"add":true,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"lsq","fuse_bn":false,"input":{"num_bits":16,"signed":true},"weight":{"averaging_constant":1,"init":"observer","learn_zero_point":true,"num_bits":4,"per_channel":true,"use_grad_scaling":false}})"},
      {R"({"family": "horizon", "weight": {"dtype": "qint16", "saturate": false, "round_mode": "half_up", "averaging_constant": 0.5}, "layers": [{"match": ["conv*", "fc"], "weight": {"dtype": "qint4"}}, {"match": "@last", "input": null}, {"match": "0", "weight": null}]})",
       R"({"add":true,"bias":"float","calibration":{"batches":8,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"horizon","fuse_bn":false,"input":{},"layers":[{"match":["conv*","fc"],"weight":{"dtype":"qint4"}},{"input":null,"match":"@last"},{"match":"0","weight":null}],"weight":{"averaging_constant":0.5,"dtype":"qint16","round_mode":"half_up","saturate":false}})"},
      {R"({"family": "aimet", "weight": {"bitwidth": 4}, "input": {"bitwidth": 16, "symmetric": true}, "calibration": {"batches": 1}, "layers": {"@first": {"input": {"bitwidth": 8}}, "*": {"weight": {"per_channel": false}}}})", R"({"add":true,"bias":"float","calibration":{"batches":1,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"aimet","fuse_bn":false,"input":{"bitwidth":16,"symmetric":true},"layers":[{"match":"*","weight":{"per_channel":false}},{"input":{"bitwidth":8},"match":"@first"}],"weight":{"bitwidth":4}})"},
      {R"({"family": "pact", "input": {"num_bits": 4, "alpha": 6}, "weight": null, "layers": [{"match": "@first", "input": null, "weight": {"num_bits": 8}}]})",
       R"({"add":true,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"pact","fuse_bn":false,"input":{"alpha":6,"num_bits":4},"layers":[{"input":null,"match":"@first","weight":{"num_bits":8}}],"weight":null})"},
      {R"({"family": "nvidia", "weight": null, "input": null, "layers": {"fc": {"weight": {"num_bits": 4}}}})",
       R"({"add":true,"bias":"float","calibration":{"batches":8,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"nvidia","fuse_bn":false,"input":null,"layers":[{"match":"fc","weight":{"num_bits":4}}],"weight":null})"},
      {R"({"family": "torch_ao", "layers": {"conv?": {"input": {"observer": "minmax"}}, "conv*": {"weight": {"ch_axis": 0, "eps": 1e-05}}}})",
       R"({"add":true,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"torch_ao","fuse_bn":false,"input":{"dtype":"quint8","observer":"fused_moving_average_minmax","qscheme":"per_tensor_affine","quant_max":255,"quant_min":0,"reduce_range":true},"layers":[{"match":"conv*","weight":{"ch_axis":0,"eps":1e-05}},{"input":{"observer":"minmax"},"match":"conv?"}],"weight":{"dtype":"qint8","observer":"fused_moving_average_minmax","qscheme":"per_channel_symmetric","quant_max":127,"quant_min":-128}})"},
  };
  return cases;
}

}  // namespace

TEST_CASE("quant.recipe: to_json writes the same text as before, and reads back equal",
          "[quant][recipe]") {
  for (const auto& [text, expected] : representative()) {
    INFO(text);
    const QuantRecipe r = QuantRecipe::parse(text);
    CHECK(r.to_json().dump() == expected);
    CHECK(QuantRecipe::from_json(r.to_json()).to_json().dump() == expected);
    CHECK(QuantRecipe::from_json(r.to_json()) == r);
  }
}

TEST_CASE("quant.recipe: every named recipe writes the same text as before", "[quant][recipe]") {
  const std::vector<std::pair<std::string, const char*>> expected{
      {"torch_ao_default",
       R"({"add":true,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"torch_ao","fuse_bn":false,"input":{"dtype":"quint8","observer":"fused_moving_average_minmax","qscheme":"per_tensor_affine","quant_max":255,"quant_min":0,"reduce_range":true},"weight":{"dtype":"qint8","observer":"fused_moving_average_minmax","qscheme":"per_channel_symmetric","quant_max":127,"quant_min":-128}})"},
      {"nvidia_int8",
       R"({"add":true,"bias":"float","calibration":{"batches":8,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"nvidia","fuse_bn":false,"input":{"calib_method":"max","num_bits":8},"weight":{"axis":0,"calib_method":"max","num_bits":8}})"},
      {"lsq_w4a4",
       R"({"add":false,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"lsq","fuse_bn":false,"input":{"init":"lsq","learn_zero_point":false,"num_bits":4,"signed":false,"use_grad_scaling":true},"layers":[{"input":{"num_bits":8,"signed":true},"match":"@first","weight":{"num_bits":8}},{"input":{"num_bits":8},"match":"@last","weight":{"num_bits":8}}],"weight":{"init":"lsq","learn_zero_point":false,"num_bits":4,"per_channel":false,"signed":true,"use_grad_scaling":true}})"},
      {"lsq_w3a3",
       R"({"add":false,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"lsq","fuse_bn":false,"input":{"init":"lsq","learn_zero_point":false,"num_bits":3,"signed":false,"use_grad_scaling":true},"layers":[{"input":{"num_bits":8,"signed":true},"match":"@first","weight":{"num_bits":8}},{"input":{"num_bits":8},"match":"@last","weight":{"num_bits":8}}],"weight":{"init":"lsq","learn_zero_point":false,"num_bits":3,"per_channel":false,"signed":true,"use_grad_scaling":true}})"},
      {"lsq_w2a2",
       R"({"add":false,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"lsq","fuse_bn":false,"input":{"init":"lsq","learn_zero_point":false,"num_bits":2,"signed":false,"use_grad_scaling":true},"layers":[{"input":{"num_bits":8,"signed":true},"match":"@first","weight":{"num_bits":8}},{"input":{"num_bits":8},"match":"@last","weight":{"num_bits":8}}],"weight":{"init":"lsq","learn_zero_point":false,"num_bits":2,"per_channel":false,"signed":true,"use_grad_scaling":true}})"},
      {"pact_w4a4",
       R"({"add":false,"bias":"float","calibration":{"batches":0,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"pact","fuse_bn":false,"input":{"alpha":10.0,"num_bits":4},"layers":[{"input":null,"match":"@first","weight":{"num_bits":8}},{"input":{"num_bits":8},"match":"@last","weight":{"num_bits":8}}],"weight":{"num_bits":4}})"},
      {"fp8_e4m3",
       R"({"add":true,"bias":"float","calibration":{"batches":8,"method":"entropy","percentile":99.99,"start_bin":128,"strict":true,"stride":1},"exclude":[],"family":"nvidia","fuse_bn":false,"input":{"calib_method":"max","fp8_recipe":"modelopt","num_bits":[4,3]},"weight":{"calib_method":"max","fp8_recipe":"modelopt","num_bits":[4,3]}})"},
  };
  REQUIRE(expected.size() == named_recipes().size());
  for (const auto& [name, text] : expected) {
    INFO(name);
    const QuantRecipe r = QuantRecipe::from_json(json{{"recipe", name}});
    CHECK(r.to_json().dump() == text);
    CHECK(QuantRecipe::from_json(r.to_json()).to_json().dump() == text);
    CHECK(QuantRecipe::from_json(r.to_json()) == r);
  }
}

TEST_CASE("quant.recipe: equal recipes compare equal, different ones do not", "[quant][recipe]") {
  const QuantRecipe a = QuantRecipe::parse(R"({"family": "pact", "input": {"alpha": 6}})");
  CHECK(a == QuantRecipe::parse(R"({"family": "pact", "input": {"alpha": 6.0}})"));
  CHECK(a != QuantRecipe::parse(R"({"family": "pact", "input": {"alpha": 7}})"));
  CHECK(a != QuantRecipe::parse(R"({"family": "pact", "input": {"alpha": 6, "num_bits": 8}})"));
  CHECK(a != QuantRecipe::parse(R"({"family": "pact", "input": {"alpha": 6}, "add": false})"));
  CHECK(a !=
        QuantRecipe::parse(R"({"family": "pact", "input": {"alpha": 6}, "layers": {"fc": null}})"));
  CHECK(QuantRecipe::parse(R"({"family": "nvidia"})") !=
        QuantRecipe::parse(R"({"family": "nvidia", "weight": {"num_bits": 8}})"));
}

TEST_CASE("quant.recipe: the PACT family has one num_bits range", "[quant][recipe][pact]") {
  // The recipe, the modules and the functions accept the same bits (pact_bits.h).
  const Tensor x = full({4}, 0.5);
  const Tensor alpha = full({1}, 1.0);
  for (const int bits : {learnable::kPactMinBits, learnable::kPactMaxBits}) {
    INFO(bits);
    CHECK_NOTHROW(learnable::pact_quantize(x, alpha, bits));
    CHECK_NOTHROW(PactActivationQuantizer(bits, 1.0));
    CHECK_NOTHROW(DoReFaWeightQuantizer(bits));
    const std::string b = std::to_string(bits);
    CHECK_NOTHROW(QuantRecipe::parse(R"({"family": "pact", "weight": {"num_bits": )" + b +
                                     R"(}, "input": {"num_bits": )" + b + "}}"));
  }
  for (const int bits : {learnable::kPactMinBits - 1, learnable::kPactMaxBits + 1}) {
    INFO(bits);
    CHECK_THROWS_AS(learnable::pact_quantize(x, alpha, bits), ValueError);
    CHECK_THROWS_AS(PactActivationQuantizer(bits, 1.0), ValueError);
    CHECK_THROWS_AS(DoReFaWeightQuantizer(bits), ValueError);
    CHECK_THROWS_WITH(QuantRecipe::parse(R"({"family": "pact", "input": {"num_bits": )" +
                                         std::to_string(bits) + "}}"),
                      Catch::Contains("\"input.num_bits\" must lie in [1, 16]"));
  }
  // 17 bits was accepted by pact_quantize alone before issue 26.
  CHECK_THROWS_WITH(learnable::pact_quantize(x, alpha, 17),
                    Catch::Contains("num_bits must lie in [1, 16], got 17"));
}
