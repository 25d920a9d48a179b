// Quantization-aware training on the GPU (part of test_gpu, Skipped without a GPU), with the
// recipes whose quantizers run there (so far torch.ao's, with min/max observers: the fused
// observer + fake quant of torch_ao_default, FakeQuantize with moving-average observers, the
// main job's recipe, and LearnableFakeQuantize, the LSQ recipes; Horizon's; PACT's; NVIDIA's;
// torch_ao with fuse_bn): the fused op's flags switched on and off give the CPU's bits, NaN
// statistics are a ValueError at the next wait, the zoo's small models (lenet5bn, vggfm, resnet20)
// take the CPU's QAT steps (the quantizers' state from the same data bit for bit; after training
// steps, as the float test, within 1% in norm, since cuDNN rounds otherwise than oneDNN), and a QAT
// step makes the host wait nowhere.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "core/device.h"
#include "core/factory.h"
#include "core/host_device.h"
#include "nn/models/zoo.h"
#include "nn/optim/sgd.h"
#include "ops/binary/binary.h"
#include "ops/loss/loss.h"
#include "quant/modules/aimet_quantizer.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/fused_fake_quantize.h"
#include "quant/modules/named_recipes.h"
#include "quant/modules/quantize_model.h"
#include "quant/modules/quantizer_device.h"
#include "quant/torch_ao/fused_obs_fake_quant.h"
#include "support/close_in_norm.h"
#include "support/test_paths.h"

using namespace qgrad;

namespace {

// The "quant" recipe of configs/lenet5bn_qat.json.
nlohmann::json main_job_recipe() {
  std::ifstream f(qgrad_test::source_dir() + "/configs/lenet5bn_qat.json");
  REQUIRE(f);
  return nlohmann::json::parse(f).at("quant");
}

// The recipes whose quantizers run on the GPU: torch.ao's fused observer + fake quant
// (torch_ao_default), FakeQuantize with moving-average min/max observers (the recipe of
// configs/lenet5bn_qat.json, qgrad's main job), Horizon's, LearnableFakeQuantize (LSQ with its
// initialisation from the first batch, and LSQ+ with a learned zero point), PACT with DoReFa
// weights, NVIDIA's TensorQuantizer (int8, FP8, NVFP4 blocks, learn_amax), and torch_ao's conv +
// batch norm folded for QAT (QuantConvBn2d).
const std::vector<std::pair<std::string, nlohmann::json>>& gpu_recipes() {
  static const std::vector<std::pair<std::string, nlohmann::json>> r = {
      {"torch_ao_default", quant::named_recipe("torch_ao_default").recipe},
      {"configs/lenet5bn_qat.json's FakeQuantize", main_job_recipe()},
      {"horizon", nlohmann::json{{"family", "horizon"}}},
      {"lsq_w4a4", quant::named_recipe("lsq_w4a4").recipe},
      {"pact_w4a4", quant::named_recipe("pact_w4a4").recipe},
      {"nvidia_int8", quant::named_recipe("nvidia_int8").recipe},
      {"fp8_e4m3", quant::named_recipe("fp8_e4m3").recipe},
      {"nvidia NVFP4 weights (dynamic E2M1 blocks of 16, E4M3 scales)",
       nlohmann::json{
           {"family", "nvidia"},
           {"weight",
            {{"num_bits", {2, 1}},
             {"block_sizes", {{"-1", 16}, {"type", "dynamic"}, {"scale_bits", {4, 3}}}}}}}},
      {"nvidia with learn_amax (the Clip's bounds learned)",
       nlohmann::json{{"family", "nvidia"}, {"input", {{"learn_amax", true}}}}},
      {"torch_ao with fuse_bn (QuantConvBn2d)",
       nlohmann::json{{"family", "torch_ao"}, {"fuse_bn", true}}},
      {"lsq+ (learned zero point, per-channel weights)",
       nlohmann::json{{"family", "lsq"},
                      {"weight", {{"per_channel", true}}},
                      {"input", {{"learn_zero_point", true}}}}}};
  return r;
}

std::shared_ptr<nn::UnaryModule> qat_model(const std::string& name, Device device,
                                           const nlohmann::json& recipe) {
  auto model = nn::make_model(name, 0);
  quant::quantize_model(*model, recipe);
  model->to(device);
  model->train();
  return model;
}

// Bit for bit, or within `ulps` float32 units in the last place.
void require_bitwise(const Tensor& cpu, const Tensor& gpu, std::int64_t ulps = 0) {
  REQUIRE(gpu.device().is_cuda());
  REQUIRE(cpu.shape() == gpu.shape());
  const std::vector<float> a = cpu.to(kFloat32).to_vector<float>();
  const std::vector<float> b = gpu.to(kCPU).to(kFloat32).to_vector<float>();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto d =
        static_cast<std::int64_t>(hd::bits_of(a[i])) - static_cast<std::int64_t>(hd::bits_of(b[i]));
    bad += (d < 0 ? -d : d) > ulps;
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("cuda fused observer: its flags switched on and off give the CPU's bits") {
  Generator gen(11);
  const Tensor x0 = randn({4, 3, 9, 13}, gen);
  for (const bool per_channel : {false, true}) {
    INFO((per_channel ? "per channel" : "per tensor"));
    std::vector<Tensor> outs[2], grads[2], states[2];
    for (int dev = 0; dev < 2; ++dev) {
      const Device d = dev == 0 ? Device(kCPU) : Device(kCUDA);
      const TensorOptions f32 = TensorOptions().dtype(kFloat32).device(d);
      const TensorOptions i64 = TensorOptions().dtype(kInt64).device(d);
      const float inf = std::numeric_limits<float>::infinity();
      const std::int64_t n = per_channel ? 4 : 1;
      Tensor rmin = full({n}, inf, f32), rmax = full({n}, -inf, f32);
      Tensor scale = ones({n}, f32), zp = zeros({n}, TensorOptions().dtype(kInt32).device(d));
      // (observer, fake quant): observe only, both, neither, fake quant only, both.
      const int flags[][2] = {{1, 0}, {1, 1}, {0, 0}, {0, 1}, {1, 1}};
      int k = 0;
      for (const auto& f : flags) {
        const Tensor x = (x0 * (1.0 + 0.25 * k++)).to(d).set_requires_grad(true);
        const Tensor y = ao::fused_moving_avg_obs_fake_quant(
            x, full({1}, f[0], i64), full({1}, f[1], i64), rmin, rmax, scale, zp, 0.01,
            per_channel ? -128 : 0, per_channel ? 127 : 255, per_channel ? 0 : -1, per_channel,
            per_channel);
        y.backward((x0 * 0.5 - 0.1).to(d));  // negatives too: masked out, they give -0.0
        outs[dev].push_back(y.detach());
        grads[dev].push_back(x.grad());
        for (const Tensor& s : {rmin, rmax, scale, zp}) states[dev].push_back(s.clone());
      }
    }
    for (std::size_t i = 0; i < outs[0].size(); ++i) {
      INFO("call " << i);
      require_bitwise(outs[0][i], outs[1][i]);
      require_bitwise(grads[0][i], grads[1][i]);
    }
    for (std::size_t i = 0; i < states[0].size(); ++i) {
      INFO("state " << i % 4 << " after call " << i / 4);
      require_bitwise(states[0][i], states[1][i]);
    }
  }
}

TEST_CASE("cuda fused observer: NaN statistics are a ValueError at the next wait") {
  for (const bool per_channel : {false, true}) {
    INFO((per_channel ? "per channel" : "per tensor"));
    const TensorOptions f32 = TensorOptions().dtype(kFloat32).device(kCUDA);
    const Tensor on = ones({1}, TensorOptions().dtype(kInt64).device(kCUDA));
    const std::int64_t n = per_channel ? 3 : 1;
    const float inf = std::numeric_limits<float>::infinity();
    Tensor rmin = full({n}, inf, f32), rmax = full({n}, -inf, f32);
    Tensor scale = ones({n}, f32), zp = zeros({n}, TensorOptions().dtype(kInt32).device(kCUDA));
    const Tensor x = ones({3, 5});
    Tensor xn = x.clone();
    static_cast<float*>(xn.raw_data())[7] = std::numeric_limits<float>::quiet_NaN();  // channel 1
    const Tensor y =
        ao::fused_moving_avg_obs_fake_quant(xn.to(kCUDA), on, on, rmin, rmax, scale, zp, 0.01, -128,
                                            127, per_channel ? 0 : -1, per_channel, true);
    // Queued, not thrown: the host did not wait. The next wait reports it.
    CHECK_THROWS_AS(synchronize(kCUDA), ValueError);
    // The device stays usable, and a clean input gives no error.
    Tensor rmin2 = full({n}, inf, f32), rmax2 = full({n}, -inf, f32);
    const Tensor y2 =
        ao::fused_moving_avg_obs_fake_quant(x.to(kCUDA), on, on, rmin2, rmax2, scale, zp, 0.01,
                                            -128, 127, per_channel ? 0 : -1, per_channel, true);
    CHECK_NOTHROW(synchronize(kCUDA));
    CHECK(y2.to(kCPU).to_vector<float>()[0] == 1.0f);
    (void)y;
  }
}

TEST_CASE("cuda QAT: a quantized model's first forward gives the CPU's quantizer state bitwise") {
  // The weight quantizers see the same weights and the first input quantizer the same batch, so
  // their state after one forward is the CPU's, bit for bit.
  for (const auto& [recipe_name, recipe] : gpu_recipes())
    for (const std::string name : {"lenet5bn", "vggfm", "resnet20"}) {
      INFO("model " << name << ", " << recipe_name);
      Generator gen(2);
      const Tensor x = randn({8, 1, 28, 28}, gen);
      auto cpu = qat_model(name, kCPU, recipe), gpu = qat_model(name, kCUDA, recipe);
      REQUIRE(quant::quantizers_not_on(*gpu, kCUDA).empty());
      cpu->forward(x);
      gpu->forward(x.to(kCUDA));
      const TensorDict a = cpu->state_dict(), b = gpu->state_dict();
      const std::string input_q = "_input_quantizer.";
      std::string first_input;  // the first layer's input quantizer, "0._input_quantizer."
      for (const auto& it : a) {
        const std::size_t at = it.key.find(input_q);
        if (at != std::string::npos && first_input.empty())
          first_input = it.key.substr(0, at + input_q.size());
        const bool weight_q = it.key.find("_weight_quantizer.") != std::string::npos;
        if (!weight_q && (first_input.empty() || it.key.rfind(first_input, 0) != 0)) continue;
        INFO(it.key);
        // LSQ's initial scale is 2 mean|x| / sqrt(Q_P): a float64 mean summed in another order
        // on the GPU, so within one float32 ulp after rounding.
        const bool lsq_scale = recipe.value("family", "") == "lsq" && it.key.size() > 6 &&
                               it.key.rfind(".scale") == it.key.size() - 6;
        require_bitwise(it.value, b[it.key], lsq_scale ? 1 : 0);
      }
    }
}

TEST_CASE("cuda QAT: the zoo's models take the CPU's torch_ao QAT steps on the GPU") {
  for (const auto& [recipe_name, recipe] : gpu_recipes())
    for (const std::string name : {"lenet5bn", "vggfm", "resnet20"}) {
      INFO("model " << name << ", " << recipe_name);
      TensorDict state[2];
      std::vector<double> losses[2];
      for (int dev = 0; dev < 2; ++dev) {
        const Device d = dev == 0 ? Device(kCPU) : Device(kCUDA);
        auto model = qat_model(name, d, recipe);
        optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
        Generator gen(7);
        for (int s = 0; s < 3; ++s) {
          const Tensor x = randn({16, 1, 28, 28}, gen).to(d);
          const Tensor y = randint(0, 10, {16}, gen).to(d);
          Tensor loss = cross_entropy(model->forward(x), y);
          sgd.zero_grad();
          loss.backward();
          sgd.step();
          losses[dev].push_back(loss.item<double>());
        }
        state[dev] = model->state_dict();
      }
      for (std::size_t i = 0; i < losses[0].size(); ++i) {
        INFO("step " << i << ": cpu loss " << losses[0][i] << ", cuda " << losses[1][i]);
        CHECK(std::fabs(losses[0][i] - losses[1][i]) <= 1e-3 * std::fabs(losses[0][i]));
      }
      for (const auto& it : state[0]) {
        INFO(it.key);
        const std::vector<double> a = it.value.to_vector<double>();
        qgrad_test::check_close_in_norm(a, state[1][it.key].to(kCPU).to_vector<double>());
      }
    }
}

TEST_CASE("cuda QAT step: torch_ao's quantizers make the host wait nowhere") {
  Generator gen(3);
  std::vector<std::pair<Tensor, Tensor>> batches;
  for (int i = 0; i < 5; ++i)
    batches.emplace_back(randn({32, 1, 28, 28}, gen).to(kCUDA),
                         randint(0, 10, {32}, gen).to(kCUDA));
  for (const auto& [recipe_name, recipe] : gpu_recipes())
    for (const std::string name : {"lenet5bn", "vggfm", "resnet20"}) {
      INFO("model " << name << ", " << recipe_name);
      auto model = qat_model(name, kCUDA, recipe);
      optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
      Tensor total = scalar_tensor(0.0, TensorOptions().device(kCUDA));
      auto step = [&](const std::pair<Tensor, Tensor>& b) {
        Tensor loss = cross_entropy(model->forward(b.first), b.second);
        sgd.zero_grad();
        loss.backward();
        sgd.step();
        total = total + loss.detach();
      };
      step(batches[0]);
      step(batches[1]);
      const std::int64_t before = host_waits(kCUDA);
      for (int i = 2; i < 5; ++i) step(batches[i]);
      CHECK(host_waits(kCUDA) == before);
      CHECK(std::isfinite(total.item<double>()));
    }
}

TEST_CASE(
    "cuda FakeQuantize: its flags switch it on the GPU, read by the host only after a change") {
  quant::FakeQuantize fq;  // quint8 per-tensor affine, moving-average observer
  fq.to(kCUDA);
  Generator gen(4);
  const Tensor x = randn({64}, gen).to(kCUDA);
  fq.forward(x);  // the flags' first read after the move
  const std::int64_t before = host_waits(kCUDA);
  const Tensor y = fq.forward(x);
  CHECK(host_waits(kCUDA) == before);
  fq.disable_fake_quant();
  CHECK(fq.forward(x).is_same(x));  // not fake quantized: the input itself
  CHECK(host_waits(kCUDA) == before);
  // A write the module did not make (as load_state_dict does) is read again: one wait.
  Tensor flag = fq.state_dict()["fake_quant_enabled"];
  flag.fill_(1);
  CHECK(!fq.forward(x).is_same(x));
  CHECK(host_waits(kCUDA) == before + 1);
  (void)y;
}

TEST_CASE("cuda AIMET QuantizeDequantize: calibrated and trained on the GPU as on the CPU") {
  // Per-channel encodings (shape [4, 1, 1]) calibrated on the same batches: the range, the output
  // and dx bit for bit; the min / max gradients (sums in another order) to rounding; a step
  // after calibration makes the host wait nowhere.
  Generator gen(5);
  const Tensor x = randn({6, 4, 5, 3}, gen), dy = randn({6, 4, 5, 3}, gen);
  quant::AimetQuantizeDequantize cpu(Shape{4, 1, 1}, 8, false), gpu(Shape{4, 1, 1}, 8, false);
  gpu.to(kCUDA);
  {
    auto a = cpu.compute_encodings();
    auto b = gpu.compute_encodings();
    for (double k : {1.0, 1.5}) {
      cpu.forward(x * k);
      gpu.forward((x * k).to(kCUDA));
    }
  }
  const TensorDict sc = cpu.state_dict(), sg = gpu.state_dict();
  require_bitwise(sc["min"], sg["min"]);
  require_bitwise(sc["max"], sg["max"]);
  const Tensor xc = x.detach().set_requires_grad(true);
  const Tensor xg = x.to(kCUDA).set_requires_grad(true);
  const Tensor yc = cpu.forward(xc);
  gpu.forward(xg);  // the flags' first read after calibration
  const std::int64_t before = host_waits(kCUDA);
  const Tensor yg = gpu.forward(xg);
  yg.backward(dy.to(kCUDA));
  CHECK(host_waits(kCUDA) == before);
  yc.backward(dy);
  require_bitwise(yc.detach(), yg.detach());
  require_bitwise(xc.grad(), xg.grad());
  const std::vector<double> gmin = cpu.min().grad().to_vector<double>();
  const std::vector<double> gmin_gpu = gpu.min().grad().to(kCPU).to_vector<double>();
  REQUIRE(gmin.size() == gmin_gpu.size());
  for (std::size_t i = 0; i < gmin.size(); ++i)
    CHECK(gmin_gpu[i] == Approx(gmin[i]).epsilon(1e-5).margin(1e-6));
}
