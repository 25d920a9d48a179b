// Synchronised statistics in a world of one process: synchronize_statistics() finds the
// quantizers that gather statistics, and with a SingleProcessGroup (or none) every quantizer
// computes exactly what it computes without a group. (Several ranks: tests/distributed/mpi.)
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "distributed/single_process_group.h"
#include "nn/modules/linear.h"
#include "nn/modules/sequential.h"
#include "ops/binary/binary.h"
#include "quant/learnable/lsq.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/modules/observer_module.h"
#include "quant/modules/synchronize_statistics.h"
#include "quant/modules/tensor_quantizer.h"

using namespace qgrad;
using namespace qgrad::quant;
using nvidia::QuantDescriptor;
using nvidia::QuantDescriptorOptions;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  const std::size_t bytes = static_cast<std::size_t>(ca.numel()) * ca.element_size();
  return bytes == 0 || std::memcmp(ca.raw_data(), cb.raw_data(), bytes) == 0;
}

// The state_dict entries whose bits differ between a and b.
std::vector<std::string> differing(const nn::Module& a, const nn::Module& b) {
  std::vector<std::string> out;
  const TensorDict sb = b.state_dict();
  for (const auto& it : a.state_dict()) {
    const Tensor* other = sb.find(it.key);
    if (other == nullptr || !same_bits(it.value, *other)) out.push_back(it.key);
  }
  return out;
}

std::shared_ptr<nn::Sequential> model() {
  Generator g(3);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<FakeQuantize>());
  m->push_back(std::make_shared<nn::Linear>(6, 5, g));
  m->push_back(std::make_shared<FusedMovingAvgObsFakeQuantize>());
  ObserverConfig hist;
  hist.kind = ObserverKind::Histogram;
  hist.bins = 32;
  m->push_back(std::make_shared<Observer>(hist));
  LearnableFakeQuantizeConfig lsq;
  lsq.init = LearnableInit::LSQ;
  lsq.observer.options.quant_range(0, 255);
  m->push_back(std::make_shared<LearnableFakeQuantize>(lsq));
  m->push_back(std::make_shared<HorizonFakeQuantize>());
  m->push_back(std::make_shared<TensorQuantizer>(
      QuantDescriptor(QuantDescriptorOptions().calib_method("histogram"))));
  auto aimet = m->push_back(std::make_shared<AimetQuantizeDequantize>(Shape{}, 8, true));
  aimet->start_calibration();  // gathering statistics (compute_encodings)
  return m;
}

}  // namespace

TEST_CASE("synchronize_statistics: the modules that gather statistics, and null to stop") {
  auto m = model();
  auto group = std::make_shared<distributed::SingleProcessGroup>();
  // FakeQuantize's observer, the fused module, the histogram Observer, LearnableFakeQuantize and
  // its observer, Horizon's observer, the TensorQuantizer, the AIMET quantizer.
  CHECK(synchronize_statistics(*m, group) == 8);
  const auto* observer = dynamic_cast<const Observer*>(m->children()[3].get());
  REQUIRE(observer != nullptr);
  CHECK(observer->process_group() == group);
  CHECK(observer->observer().process_group() == group);
  CHECK_FALSE(observer->statistics_synced());  // one rank: nothing is reduced
  CHECK(synchronize_statistics(*m, nullptr) == 8);
  CHECK(observer->observer().process_group() == nullptr);
  Generator g(1);
  nn::Linear plain(2, 2, g);
  CHECK(synchronize_statistics(plain, group) == 0);
}

TEST_CASE("synchronised statistics: a world of one process changes no bit") {
  auto synced = model(), twin = model();
  synchronize_statistics(*synced, std::make_shared<distributed::SingleProcessGroup>());
  for (int step = 0; step < 3; ++step) {
    Generator g(10 + static_cast<std::uint64_t>(step));
    const Tensor x = mul(randn({8, 6}, g), 1.0 + step);
    NoGradGuard no_grad;
    CHECK(same_bits(synced->forward(x), twin->forward(x)));
  }
  CHECK(differing(*synced, *twin).empty());
  // The calibrators (through calibrate_model's interface) and the LSQ initialisations.
  auto q1 = std::make_shared<TensorQuantizer>(), q2 = std::make_shared<TensorQuantizer>();
  synchronize_statistics(*q1, std::make_shared<distributed::SingleProcessGroup>());
  q1->start_calibration();
  q2->start_calibration();
  Generator g(20);
  const Tensor x = randn({4, 5}, g);
  q1->forward(x);
  q2->forward(x);
  q1->finish_calibration(CalibrationOptions());
  q2->finish_calibration(CalibrationOptions());
  CHECK(differing(*q1, *q2).empty());
  auto one = std::make_shared<distributed::SingleProcessGroup>();
  CHECK(learnable::lsq_init_scale(x, 127, one) == learnable::lsq_init_scale(x, 127));
  CHECK(learnable::lsq_plus_init_minmax(x, 0, 255, one) ==
        learnable::lsq_plus_init_minmax(x, 0, 255));
  CHECK_THROWS_AS(learnable::lsq_init_scale(empty({0}), 127, one), ValueError);
  CHECK_THROWS_AS(learnable::lsq_plus_init_minmax(empty({0}), 0, 255, one), ValueError);
}
