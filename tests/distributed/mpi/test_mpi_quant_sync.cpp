// Quantizer statistics synchronised across ranks: on every rank a quantizer given the job's group
// observes its part of each global batch (rank_part: consecutive rows) while an unsynchronised
// twin observes the whole global batch; the two must hold the same bits, and every rank the same
// bits. Every family that gathers statistics: torch.ao's observers (NaN, zeros, per channel,
// first and later batches of moving averages, histograms), FakeQuantize, the fused observer +
// fake quant, LearnableFakeQuantize's initialisations, Horizon, NVIDIA's calibrators, AIMET's
// encoding analyzer, the LSQ initialisations, and calibrate_model over a small model.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "distributed/process_group.h"
#include "mpi_test_support.h"
#include "nn/modules/linear.h"
#include "nn/modules/sequential.h"
#include "ops/binary/binary.h"
#include "ops/unary/unary.h"
#include "quant/learnable/lsq.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/calibrate.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/horizon_fake_quantize.h"
#include "quant/modules/learnable_fake_quantize.h"
#include "quant/modules/observer_module.h"
#include "quant/modules/synchronize_statistics.h"
#include "quant/modules/tensor_quantizer.h"

using namespace qgrad;
using namespace qgrad::quant;
using distributed::ReduceOp;
using nvidia::QuantDescriptor;
using nvidia::QuantDescriptorOptions;
using qgrad_test::differing_entries;
using qgrad_test::differing_state;
using qgrad_test::rank_part;
using qgrad_test::world;

namespace {

constexpr std::int64_t kRows = 8;  // rows of a global batch (divisible by the ranks of the job)

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& e : v) s += e + " ";
  return s;
}

// Fails on every rank when `local` (this rank's findings) is non-empty on any rank, so the ranks
// pass or fail together and no rank leaves the others waiting in a collective.
void check_none(const std::vector<std::string>& local, const std::string& what) {
  Tensor n = from_vector<std::int64_t>({static_cast<std::int64_t>(local.size())}, {1});
  world()->all_reduce(n, ReduceOp::Sum);
  INFO(what << " (rank " << world()->rank() << "): " << joined(local));
  CHECK(n.to_vector<std::int64_t>()[0] == 0);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.to(kCPU).contiguous(), cb = b.to(kCPU).contiguous();
  const std::size_t bytes = static_cast<std::size_t>(ca.numel()) * ca.element_size();
  return bytes == 0 || std::memcmp(ca.raw_data(), cb.raw_data(), bytes) == 0;
}

// The synchronised module against its twin, and across the ranks.
void check_equal_state(const nn::Module& synced, const nn::Module& twin, const std::string& what) {
  check_none(differing_entries(synced, twin), what + ": entries differing from one process");
  check_none(differing_state(synced), what + ": entries differing between ranks");
}

// Global batch `step` (the same on every rank): N(0, 1) rows scaled by `scale`.
Tensor global_batch(std::uint64_t seed, const Shape& shape, float scale = 1.0f) {
  Generator g(seed);
  return mul(randn(shape, g), scale);
}

// Sets element `index` (flat) of a copy of x to v.
Tensor with_value(const Tensor& x, std::int64_t index, float v) {
  std::vector<float> d = x.contiguous().to_vector<float>();
  d[static_cast<std::size_t>(index)] = v;
  return from_vector<float>(d, x.shape());
}

// A batch of zeros of both signs and values of one sign (`sign`): its min (sign > 0) or max
// (sign < 0) is a zero, which one process takes with the sign of the global batch's first zero
// (+0, rank 0's first element) while the other ranks' parts start with -0.
Tensor zeros_batch(const Shape& shape, float sign = 1.0f) {
  Tensor x = mul(relu(global_batch(77, shape)), sign);
  const std::int64_t per_rank = x.numel() / world()->size();
  std::vector<float> d = x.contiguous().to_vector<float>();
  d[0] = 0.0f;
  for (std::int64_t r = 1; r < world()->size(); ++r)
    d[static_cast<std::size_t>(r * per_rank)] = -0.0f;
  return from_vector<float>(d, x.shape());
}

// The same batches through a synchronised module (this rank's part) and a twin (all of it);
// `feed` runs one forward. Outputs are compared too: the synchronised module's output is the
// twin's rows of this rank.
template <typename M>
void run_pair(const std::string& what, const std::function<std::shared_ptr<M>()>& make,
              const std::vector<Tensor>& batches,
              const std::function<Tensor(M&, const Tensor&)>& feed,
              const std::function<Tensor(const Tensor&)>& part = rank_part) {
  std::shared_ptr<M> synced = make(), twin = make();
  REQUIRE(synchronize_statistics(*synced, world()) >= 1);
  std::vector<std::string> outputs, states;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const Tensor ys = feed(*synced, part(batches[i]));
    const Tensor yt = feed(*twin, batches[i]);
    if (ys.defined() && !same_bits(ys, part(yt))) outputs.push_back("output " + std::to_string(i));
    // After every batch: a later batch can hide an earlier difference (a zero's sign).
    for (const std::string& key : differing_entries(*synced, *twin))
      states.push_back(key + " after batch " + std::to_string(i));
  }
  check_none(outputs, what + ": outputs differing from one process");
  check_none(states, what + ": entries differing from one process");
  check_none(differing_state(*synced), what + ": entries differing between ranks");
}

Tensor forward_of(nn::UnaryModule& m, const Tensor& x) {
  NoGradGuard no_grad;
  return m.forward(x);
}

ObserverConfig observer_config(ObserverKind kind) {
  ObserverConfig c;
  c.kind = kind;
  if (is_per_channel(kind)) {
    c.options.qscheme(ao::QScheme::PerChannelAffine);
    c.ch_axis = 1;
  }
  return c;
}

// Columns [rank x cols, (rank + 1) x cols) of dim 1: the parts for quantizers whose channels lie
// along dim 0 (the fused per-channel op).
Tensor column_part(const Tensor& t) {
  const std::int64_t cols = t.size(1) / world()->size();
  return t.narrow(1, world()->rank() * cols, cols).contiguous();
}

}  // namespace

TEST_CASE("torch.ao observers: the statistics of the global batch, bit for bit", "[quant-sync]") {
  const Shape shape{kRows, 3, 4, 4};
  const std::vector<Tensor> normal = {global_batch(1, shape), global_batch(2, shape, 3.0f),
                                      global_batch(3, shape, 0.5f)};
  // NaN in the last rank's part only: every rank's statistics must become NaN.
  const Tensor nan_batch =
      with_value(global_batch(4, shape), 151, std::numeric_limits<float>::quiet_NaN());
  const Tensor late_nan = with_value(global_batch(5, shape), shape[1] * 16 * (kRows - 1) + 5,
                                     std::numeric_limits<float>::quiet_NaN());
  const std::vector<Tensor> with_nan = {normal[0], late_nan, normal[1]};
  const std::vector<Tensor> with_zeros = {zeros_batch(shape), normal[0]};
  const std::vector<Tensor> with_zero_max = {zeros_batch(shape, -1.0f), normal[0]};
  for (ObserverKind kind :
       {ObserverKind::MinMax, ObserverKind::MovingAverageMinMax, ObserverKind::PerChannelMinMax,
        ObserverKind::MovingAveragePerChannelMinMax}) {
    const std::string name = observer_kind_name(kind);
    auto make = [kind] { return std::make_shared<Observer>(observer_config(kind)); };
    run_pair<Observer>(name + " (normal batches)", make, normal, forward_of);
    run_pair<Observer>(name + " (NaN in a later rank's part)", make, with_nan, forward_of);
    run_pair<Observer>(name + " (NaN first)", make, {nan_batch, normal[0]}, forward_of);
    run_pair<Observer>(name + " (a zero min)", make, with_zeros, forward_of);
    run_pair<Observer>(name + " (a zero max)", make, with_zero_max, forward_of);
  }
  // A histogram whose range grows, shrinks and grows again (re-binning the old counts).
  auto hist = [] {
    ObserverConfig c = observer_config(ObserverKind::Histogram);
    c.bins = 64;
    c.upsample_rate = 16;
    return std::make_shared<Observer>(c);
  };
  run_pair<Observer>("HistogramObserver", hist,
                     {normal[2], normal[0], normal[1], global_batch(6, shape, 10.0f)}, forward_of);
}

TEST_CASE("torch.ao observers: bad input raises on every rank", "[quant-sync]") {
  // A per-channel observer whose ranks see different channel counts: ShapeError on each.
  auto per_channel = std::make_shared<Observer>(observer_config(ObserverKind::PerChannelMinMax));
  synchronize_statistics(*per_channel, world());
  const Tensor x = global_batch(8, {2, world()->rank() == 0 ? 3 : 4, 5});
  CHECK_THROWS_AS(per_channel->forward(x), ShapeError);
  // Inf in one rank's part of a histogram observer's batch: ValueError on every rank.
  auto hist = std::make_shared<Observer>(observer_config(ObserverKind::Histogram));
  synchronize_statistics(*hist, world());
  Tensor part = rank_part(global_batch(9, {kRows, 6}));
  if (world()->rank() == world()->size() - 1)
    part = with_value(part, 2, std::numeric_limits<float>::infinity());
  CHECK_THROWS_AS(hist->forward(part), ValueError);
}

TEST_CASE("FakeQuantize and HorizonFakeQuantize: through their observers", "[quant-sync]") {
  const Shape shape{kRows, 3, 5};
  const std::vector<Tensor> batches = {global_batch(11, shape), global_batch(12, shape, 2.0f),
                                       global_batch(13, shape, 0.25f)};
  run_pair<FakeQuantize>(
      "FakeQuantize", [] { return std::make_shared<FakeQuantize>(); }, batches, forward_of);
  run_pair<FakeQuantize>(
      "FakeQuantize (per channel)",
      [] {
        FakeQuantizeConfig c;
        c.observer = observer_config(ObserverKind::MovingAveragePerChannelMinMax);
        c.observer.options.dtype(ao::QuantDType::QInt8).qscheme(ao::QScheme::PerChannelSymmetric);
        return std::make_shared<FakeQuantize>(c);
      },
      batches, forward_of);
  run_pair<HorizonFakeQuantize>(
      "HorizonFakeQuantize", [] { return std::make_shared<HorizonFakeQuantize>(); }, batches,
      forward_of);
  run_pair<HorizonFakeQuantize>(
      "HorizonFakeQuantize (per channel)",
      [] {
        return std::make_shared<HorizonFakeQuantize>(
            horizon::FakeQuantizeOptions().per_channel(1, 3));
      },
      batches, forward_of);
}

TEST_CASE("FusedMovingAvgObsFakeQuantize: the fused update from the global batch's range",
          "[quant-sync]") {
  const Shape shape{kRows, 6};
  const std::vector<Tensor> batches = {zeros_batch(shape), global_batch(21, shape),
                                       global_batch(22, shape, 4.0f), zeros_batch(shape, -1.0f),
                                       global_batch(23, shape, 0.1f)};
  run_pair<FusedMovingAvgObsFakeQuantize>(
      "FusedMovingAvgObsFakeQuantize",
      [] { return std::make_shared<FusedMovingAvgObsFakeQuantize>(); }, batches, forward_of);
  run_pair<FusedMovingAvgObsFakeQuantize>(
      "FusedMovingAvgObsFakeQuantize (observing only)",
      [] {
        auto m = std::make_shared<FusedMovingAvgObsFakeQuantize>();
        m->disable_fake_quant();
        return m;
      },
      batches, forward_of);
  // Per channel along dim 0: the ranks split the columns.
  const Shape wide{4, 2 * kRows};
  run_pair<FusedMovingAvgObsFakeQuantize>(
      "FusedMovingAvgObsFakeQuantize (per channel)",
      [] {
        return std::make_shared<FusedMovingAvgObsFakeQuantize>(
            default_fused_per_channel_wt_fake_quant_config());
      },
      {global_batch(24, wide), global_batch(25, wide, 2.0f)}, forward_of, column_part);
}

TEST_CASE(
    "LearnableFakeQuantize: observer and min/max initialisation are exact; LSQ's is within "
    "a float32 ulp",
    "[quant-sync]") {
  const Shape shape{kRows, 3, 5};
  const std::vector<Tensor> batches = {global_batch(31, shape, 2.0f), global_batch(32, shape)};
  for (LearnableInit init : {LearnableInit::Observer, LearnableInit::MinMax}) {
    run_pair<LearnableFakeQuantize>(
        std::string("LearnableFakeQuantize init ") + learnable_init_name(init),
        [init] {
          LearnableFakeQuantizeConfig c;
          c.init = init;
          c.observer.options.quant_range(0, 255);
          return std::make_shared<LearnableFakeQuantize>(c);
        },
        batches, forward_of);
  }
  // LSQ: 2 * mean|x| / sqrt(Qp) from the ranks' float64 sums (see learnable_fake_quantize.h).
  LearnableFakeQuantizeConfig c;
  c.init = LearnableInit::LSQ;
  c.observer.options.quant_range(0, 255);
  auto synced = std::make_shared<LearnableFakeQuantize>(c);
  auto twin = std::make_shared<LearnableFakeQuantize>(c);
  synchronize_statistics(*synced, world());
  forward_of(*synced, rank_part(batches[0]));
  forward_of(*twin, batches[0]);
  const float a = synced->scale().to_vector<float>()[0], b = twin->scale().to_vector<float>()[0];
  std::vector<std::string> far;
  if (!(std::abs(a - b) <= std::nextafter(b, 2 * b) - b)) far.push_back(std::to_string(a));
  check_none(far, "LSQ init scale vs one process's " + std::to_string(b));
  check_none(differing_state(*synced), "LSQ init: entries differing between ranks");
}

TEST_CASE("NVIDIA calibrators: max (per tensor and per channel) and histogram", "[quant-sync]") {
  const Shape shape{kRows, 3, 4};
  const std::vector<Tensor> batches = {global_batch(41, shape), global_batch(42, shape, 5.0f),
                                       global_batch(43, shape, 0.5f), zeros_batch(shape)};
  // Calibration through the Calibratable interface: statistics, then amax loaded into "_amax".
  auto calibrate = [](TensorQuantizer& q, const Tensor& x) {
    NoGradGuard no_grad;
    return q.forward(x);
  };
  auto run = [&](const std::string& what, const QuantDescriptorOptions& o,
                 const std::string& method) {
    auto make = [o] {
      auto q = std::make_shared<TensorQuantizer>(QuantDescriptor(o));
      q->start_calibration();
      return q;
    };
    auto synced = make(), twin = make();
    REQUIRE(synchronize_statistics(*synced, world()) == 1);
    for (const Tensor& x : batches) {
      calibrate(*synced, rank_part(x));
      calibrate(*twin, x);
    }
    std::vector<std::string> diff;
    if (const nvidia::HistogramCalibrator* h = synced->histogram_calibrator()) {
      if (!same_bits(h->counts(), twin->histogram_calibrator()->counts())) diff.push_back("counts");
      if (!same_bits(h->edges(), twin->histogram_calibrator()->edges())) diff.push_back("edges");
    }
    check_none(diff, what + ": histogram differing from one process");
    CalibrationOptions options;
    options.method = method;
    synced->finish_calibration(options);
    twin->finish_calibration(options);
    check_equal_state(*synced, *twin, what);
  };
  run("MaxCalibrator", QuantDescriptorOptions(), "max");
  run("MaxCalibrator (per channel)", QuantDescriptorOptions().axis(1), "max");
  for (const char* method : {"entropy", "mse", "percentile"})
    run(std::string("HistogramCalibrator ") + method,
        QuantDescriptorOptions().calib_method("histogram"), method);
}

TEST_CASE("AIMET encoding analyzer: compute_encodings over the global batch", "[quant-sync]") {
  const Shape shape{kRows, 3, 2, 2};
  const std::vector<Tensor> batches = {global_batch(51, shape), global_batch(52, shape, 3.0f),
                                       zeros_batch(shape)};
  for (const Shape& encoding : {Shape{}, Shape{3, 1, 1}}) {
    for (bool symmetric : {false, true}) {
      auto make = [encoding, symmetric] {
        auto q = std::make_shared<AimetQuantizeDequantize>(encoding, 8, symmetric);
        q->start_calibration();
        return q;
      };
      auto synced = make(), twin = make();
      REQUIRE(synchronize_statistics(*synced, world()) == 1);
      std::vector<std::string> outputs;
      for (std::size_t i = 0; i < batches.size(); ++i) {
        const Tensor ys = forward_of(*synced, rank_part(batches[i]));
        const Tensor yt = forward_of(*twin, batches[i]);
        if (!same_bits(ys, rank_part(yt))) outputs.push_back("output " + std::to_string(i));
      }
      const std::string what = std::string("AIMET ") + (symmetric ? "symmetric" : "asymmetric") +
                               (encoding.empty() ? " per tensor" : " per channel");
      check_none(outputs, what + ": outputs differing from one process");
      synced->finish_calibration(CalibrationOptions());
      twin->finish_calibration(CalibrationOptions());
      check_equal_state(*synced, *twin, what);
    }
  }
}

TEST_CASE("LSQ initialisations: LSQ+ min/max exact, LSQ's mean within a few float64 ulps",
          "[quant-sync]") {
  const Tensor x = global_batch(61, {kRows, 33}, 2.0f);
  const auto global = learnable::lsq_plus_init_minmax(x, -128, 127);
  const auto synced = learnable::lsq_plus_init_minmax(rank_part(x), -128, 127, world());
  std::vector<std::string> diff;
  if (!(global.first == synced.first && global.second == synced.second)) diff.push_back("LSQ+");
  const double s1 = learnable::lsq_init_scale(x, 127);
  const double s2 = learnable::lsq_init_scale(rank_part(x), 127, world());
  if (!(std::abs(s1 - s2) <= 1e-14 * s1)) diff.push_back("LSQ " + std::to_string(s2 - s1));
  check_none(diff, "LSQ initialisations vs one process");
  // An empty part on one rank: lsq_plus_init_minmax raises on every rank.
  const Tensor part = world()->rank() == 0 ? rank_part(x) : empty({0});
  CHECK_THROWS_AS(learnable::lsq_plus_init_minmax(part, -128, 127, world()), ValueError);
}

TEST_CASE(
    "calibrate_model: ranks calibrating on their halves equal one process on the whole "
    "batches",
    "[quant-sync]") {
  auto make = [] {
    Generator g(5);
    auto m = std::make_shared<nn::Sequential>();
    m->push_back(std::make_shared<FakeQuantize>());
    m->push_back(std::make_shared<nn::Linear>(6, 5, g));
    m->push_back(std::make_shared<TensorQuantizer>(
        QuantDescriptor(QuantDescriptorOptions().calib_method("histogram"))));
    m->push_back(std::make_shared<HorizonFakeQuantize>());
    m->push_back(std::make_shared<nn::Linear>(5, 4, g));
    m->push_back(std::make_shared<AimetQuantizeDequantize>(Shape{}, 8, false));
    m->push_back(std::make_shared<TensorQuantizer>());
    return m;
  };
  std::vector<Tensor> batches;
  for (int i = 0; i < 3; ++i) batches.push_back(global_batch(70 + i, {kRows, 6}, 1.0f + i));
  auto synced = make(), twin = make();
  // FakeQuantize's and Horizon's observers, the two TensorQuantizers, the AIMET quantizer.
  CHECK(synchronize_statistics(*synced, world()) == 5);
  CalibrationOptions options;
  options.method = "percentile";
  calibrate_model(
      *synced, 3,
      [&](std::int64_t i) { synced->forward(rank_part(batches[static_cast<std::size_t>(i)])); },
      options);
  calibrate_model(
      *twin, 3, [&](std::int64_t i) { twin->forward(batches[static_cast<std::size_t>(i)]); },
      options);
  check_equal_state(*synced, *twin, "calibrate_model");
  // A null group stops the synchronisation: the ranks' statistics then differ.
  CHECK(synchronize_statistics(*synced, nullptr) == 5);
  synced->train();
  {
    NoGradGuard no_grad;
    synced->forward(rank_part(global_batch(80, {kRows, 6}, 7.0f)));
  }
  Tensor differing = from_vector<std::int64_t>(
      {static_cast<std::int64_t>(differing_state(*synced).empty() ? 0 : 1)}, {1});
  world()->all_reduce(differing, ReduceOp::Min);
  CHECK(differing.to_vector<std::int64_t>()[0] == 1);
}
