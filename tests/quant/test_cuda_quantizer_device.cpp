// The quantizers on a GPU tensor (part of test_gpu, Skipped without a GPU): every quantized model
// of every named recipe, moved to the GPU, either runs there, when quantizers_not_on() finds
// nothing to refuse (every named recipe since 2026-11-28), or stops at its first quantizer with
// a DeviceError naming it, never a host read of device memory. So the command-line check and the
// modules' own agree; a CPU-only recipe (histogram calibration) is refused the same way.
#include <catch2/catch.hpp>

#include "core/factory.h"
#include "nn/models/zoo.h"
#include "quant/modules/named_recipes.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/quantizer_device.h"

using namespace qgrad;

TEST_CASE("cuda quantizers: a quantized model on the GPU runs or is a DeviceError naming one") {
  std::size_t runs = 0;
  for (const quant::NamedRecipe& r : quant::named_recipes()) {
    INFO("recipe " << r.name);
    auto model = nn::make_model("lenet5bn", 0);
    quant::quantize_model(*model, r.recipe);
    model->to(kCUDA);
    Generator gen(1);
    const Tensor x = randn({2, 1, 28, 28}, gen).to(kCUDA);
    if (quant::quantizers_not_on(*model, kCUDA).empty()) {
      CHECK(model->forward(x).device().is_cuda());
      ++runs;
      continue;
    }
    CHECK_THROWS_AS(model->forward(x), DeviceError);
    CHECK_THROWS_WITH(model->forward(x), Catch::Contains("runs on the CPU only"));
  }
  CHECK(runs == quant::named_recipes().size());  // quant.named_recipes's CPU test says so too
  auto hist = nn::make_model("lenet5bn", 0);
  quant::quantize_model(
      *hist, nlohmann::json{{"family", "nvidia"}, {"input", {{"calib_method", "histogram"}}}});
  REQUIRE(!quant::quantizers_not_on(*hist, kCUDA).empty());
  hist->to(kCUDA);
  Generator gen(1);
  CHECK_THROWS_AS(hist->forward(randn({2, 1, 28, 28}, gen).to(kCUDA)), DeviceError);
}
