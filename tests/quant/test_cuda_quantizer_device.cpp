// The quantizers on a GPU tensor (part of test_gpu, Skipped without a GPU): they have no CUDA
// kernels yet, so every quantized model of every named recipe, moved to the GPU, stops at its
// first quantizer with a DeviceError naming it, never a host read of device memory.
#include <catch2/catch.hpp>

#include "core/factory.h"
#include "nn/models/zoo.h"
#include "quant/modules/named_recipes.h"
#include "quant/modules/quantize_model.h"

using namespace qgrad;

TEST_CASE("cuda quantizers: a quantized model on the GPU is a DeviceError naming a quantizer") {
  for (const quant::NamedRecipe& r : quant::named_recipes()) {
    INFO("recipe " << r.name);
    auto model = nn::make_model("lenet5bn", 0);
    quant::quantize_model(*model, r.recipe);
    model->to(kCUDA);
    Generator gen(1);
    const Tensor x = randn({2, 1, 28, 28}, gen).to(kCUDA);
    CHECK_THROWS_AS(model->forward(x), DeviceError);
    CHECK_THROWS_WITH(model->forward(x), Catch::Contains("run on the CPU only"));
  }
}
