// Tests of the torch.ao FakeQuantize / _LearnableFakeQuantize state classes
// (quant/torch_ao/fake_quantizer.h, learnable_fake_quantizer.h) against PyTorch 1.13 modules run
// over several batches (outputs, buffers and gradients), plus the switches and bad arguments.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>

#include "core/factory.h"
#include "core/npy.h"
#include "quant/observer/minmax_observer.h"
#include "quant/observer/per_channel_minmax_observer.h"
#include "quant/torch_ao/fake_quantizer.h"
#include "quant/torch_ao/learnable_fake_quantizer.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::ao;

namespace {

Tensor load(const std::string& name) {
  return qgrad_test::load_fixture("quant_ao", name);
}

void require_bitwise(const Tensor& got, const Tensor& want, const std::string& what) {
  qgrad_test::require_bitwise(got.to_vector<float>(), want.to_vector<float>(), what);
}

void require_close(const Tensor& got, const Tensor& want, const std::string& what) {
  qgrad_test::require_close_values(got.to_vector<double>(), want.to_vector<double>(), 2e-5, 1e-5,
                                   what);
}

std::unique_ptr<FakeQuantizer> make_fq(int i) {
  switch (i) {
    case 0:
      return FakeQuantizer::make_default();
    case 1:
      return std::make_unique<FakeQuantizer>(
          std::make_unique<MovingAveragePerChannelMinMaxObserver>(
              0.01, 1,
              ObserverOptions()
                  .dtype(QuantDType::QInt8)
                  .qscheme(QScheme::PerChannelSymmetric)
                  .quant_range(-128, 127)));
    case 2:
      return std::make_unique<FakeQuantizer>(
          std::make_unique<MinMaxObserver>(ObserverOptions().qscheme(QScheme::PerTensorSymmetric)));
    default:
      return std::make_unique<FakeQuantizer>(std::make_unique<MovingAverageMinMaxObserver>(
          0.01, ObserverOptions().qscheme(QScheme::PerTensorSymmetric).quant_range(0, 255)));
  }
}

std::unique_ptr<LearnableFakeQuantizer> make_lfq(int i) {
  switch (i) {
    case 0:
      return std::make_unique<LearnableFakeQuantizer>(
          std::make_unique<MovingAverageMinMaxObserver>(0.01,
                                                        ObserverOptions().quant_range(0, 255)),
          LearnableFakeQuantizeOptions().use_grad_scaling(true));
    case 1:
      return std::make_unique<LearnableFakeQuantizer>(
          std::make_unique<MovingAveragePerChannelMinMaxObserver>(
              0.01, 1,
              ObserverOptions()
                  .dtype(QuantDType::QInt8)
                  .qscheme(QScheme::PerChannelAffine)
                  .quant_range(-128, 127)),
          LearnableFakeQuantizeOptions().channel_len(4));
    default:
      return std::make_unique<LearnableFakeQuantizer>(
          std::make_unique<MovingAverageMinMaxObserver>(0.01,
                                                        ObserverOptions()
                                                            .dtype(QuantDType::QInt8)
                                                            .qscheme(QScheme::PerTensorSymmetric)
                                                            .quant_range(-8, 7)),
          LearnableFakeQuantizeOptions().use_grad_scaling(true));
  }
}

}  // namespace

TEST_CASE("ao FakeQuantizer matches PyTorch's FakeQuantize over several steps",
          "[quant][torch_ao]") {
  for (int i = 0; i < 4; ++i) {
    INFO("module " << i);
    auto m = make_fq(i);
    for (int k = 0; k < 5; ++k) {
      INFO("step " << k);
      if (k == 3) m->enable_observer(false);
      if (k == 4) m->enable_fake_quant(false);
      Tensor x = load("obs_batch_" + std::to_string(k % 3)).set_requires_grad(true);
      Tensor y = m->forward(x);
      const std::string p = "fqm_" + std::to_string(i) + "_";
      require_bitwise(y, load(p + "y" + std::to_string(k)), "output");
      require_bitwise(m->scale(), load(p + "scale" + std::to_string(k)), "scale");
      REQUIRE(m->zero_point().to_vector<double>() ==
              load(p + "zp" + std::to_string(k)).to_vector<double>());
      if (k == 2) {
        y.backward(load("obs_batch_1"));
        require_bitwise(x.grad(), load(p + "dx"), "dx");
      }
      if (k == 4) REQUIRE(y.is_same(x));
    }
  }
}

TEST_CASE("ao LearnableFakeQuantizer matches PyTorch's _LearnableFakeQuantize",
          "[quant][torch_ao]") {
  for (int i = 0; i < 3; ++i) {
    INFO("module " << i);
    const std::string p = "lfqm_" + std::to_string(i) + "_";
    auto m = make_lfq(i);
    Tensor y0 = m->forward(load("obs_batch_0"));
    require_bitwise(y0, load(p + "y0"), "static-estimate output");
    require_bitwise(m->scale(), load(p + "scale0"), "scale");
    require_bitwise(m->zero_point(), load(p + "zp0"), "zero_point");
    m->enable_param_learning();
    Tensor x = load("obs_batch_2").set_requires_grad(true);
    Tensor y1 = m->forward(x);
    require_bitwise(y1, load(p + "y1"), "learning output");
    y1.backward(load("obs_batch_1"));
    require_bitwise(x.grad(), load(p + "dx"), "dx");
    require_close(m->scale().grad(), load(p + "dscale"), "dscale");
    require_close(m->zero_point().grad(), load(p + "dzp"), "dzero_point");
    const QParams qp = m->calculate_qparams();
    std::vector<double> got = qp.scale.to_vector<double>();
    for (double z : qp.zero_point.to_vector<double>()) got.push_back(z);
    REQUIRE(got == load(p + "qparams").to_vector<double>());
  }
}

TEST_CASE("ao fake quantizers: modes and bad arguments", "[quant][torch_ao]") {
  auto lfq = make_lfq(0);
  lfq->enable_static_observation();
  Tensor x = load("obs_batch_0");
  CHECK(lfq->forward(x).is_same(x));
  CHECK(lfq->scale().item<float>() != 1.0f);  // observed and copied
  CHECK_FALSE(lfq->scale().requires_grad());
  lfq->enable_param_learning();
  CHECK(lfq->scale().requires_grad());
  lfq->enable_static_estimate();
  CHECK_FALSE(lfq->zero_point().requires_grad());

  REQUIRE_THROWS_AS(FakeQuantizer(nullptr), ValueError);
  REQUIRE_THROWS_AS(FakeQuantizer(std::make_unique<PerChannelMinMaxObserver>(
                        0, ObserverOptions().qscheme(QScheme::PerChannelAffineFloatQParams))),
                    ValueError);
  REQUIRE_THROWS_AS(LearnableFakeQuantizer(std::make_unique<MinMaxObserver>(),
                                           LearnableFakeQuantizeOptions().channel_len(3)),
                    ValueError);
  REQUIRE_THROWS_AS(LearnableFakeQuantizer(std::make_unique<PerChannelMinMaxObserver>(0)),
                    ValueError);
}
