// Whole training steps on the GPU against the CPU (part of test_gpu): each model of the zoo,
// trained for a few SGD steps from the same seed on the same batches, ends with the CPU's weights
// and losses, and the steps go through every layer's CUDA kernels, forward and backward. cuDNN and
// cuBLAS sum in other orders than oneDNN, and training amplifies a rounding difference (about
// 1e5-fold in four steps of these models: float32 weights of 0.02 end up 1e-4 apart, run to run,
// as cuDNN's algorithms need not be deterministic). So the tight check is in float64, where that
// drift is near 1e-11; in float32 each tensor must match in norm, within 1%, which still fails
// for a missing or wrong update.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/factory.h"
#include "nn/models/zoo.h"
#include "nn/optim/sgd.h"
#include "ops/loss/loss.h"
#include "support/close_in_norm.h"

using namespace qgrad;

namespace {

struct Run {
  std::vector<double> losses;
  TensorDict state;
};

Run train(const std::string& model_name, Device device, DType dtype, int steps) {
  auto model = nn::make_model(model_name, 0);
  model->to(dtype);
  model->to(device);
  model->train();
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9).weight_decay(5e-4));
  Run r;
  Generator gen(7);
  for (int s = 0; s < steps; ++s) {
    const Tensor x = randn({16, 1, 28, 28}, gen).to(dtype).to(device);
    const Tensor y = randint(0, 10, {16}, gen).to(device);
    Tensor loss = cross_entropy(model->forward(x), y);
    sgd.zero_grad();
    loss.backward();
    sgd.step();
    r.losses.push_back(loss.item<double>());
  }
  r.state = model->state_dict();
  return r;
}

// The CPU's and the GPU's runs of one model: losses within `loss_rtol`, and every tensor of the
// state passing `close(cpu values, gpu values)`.
template <typename Close>
void compare(const Run& cpu, const Run& gpu, double loss_rtol, const Close& close) {
  for (std::size_t i = 0; i < cpu.losses.size(); ++i) {
    INFO("step " << i << ": cpu loss " << cpu.losses[i] << ", cuda " << gpu.losses[i]);
    CHECK(std::fabs(cpu.losses[i] - gpu.losses[i]) <= loss_rtol * std::fabs(cpu.losses[i]));
  }
  for (const auto& it : cpu.state) {
    INFO(it.key);
    const Tensor& g = gpu.state[it.key];
    REQUIRE(g.device() == kCUDA);
    close(it.value.to_vector<double>(), g.to(kCPU).to_vector<double>());
  }
}

}  // namespace

TEST_CASE("cuda training: in float64 the zoo's models take the CPU's SGD steps on the GPU") {
  for (const char* name : {"lenet5bn", "vggfm", "resnet20"}) {
    INFO("model " << name);
    const Run cpu = train(name, kCPU, kFloat64, 4), gpu = train(name, kCUDA, kFloat64, 4);
    compare(cpu, gpu, 1e-9, [](const std::vector<double>& a, const std::vector<double>& b) {
      std::size_t bad = 0, worst = 0;
      double worst_excess = -INFINITY;
      for (std::size_t i = 0; i < a.size(); ++i) {
        // How far past the tolerance (NaN: infinitely far).
        double excess = std::fabs(a[i] - b[i]) - (1e-8 + 1e-6 * std::fabs(a[i]));
        if (std::isnan(excess)) excess = INFINITY;
        bad += excess > 0;
        if (excess > worst_excess) worst_excess = excess, worst = i;
      }
      INFO("worst of " << a.size() << ": element " << worst << ", cpu "
                       << (a.empty() ? 0.0 : a[worst]) << ", cuda "
                       << (b.empty() ? 0.0 : b[worst]));
      CHECK(bad == 0);
    });
  }
}

TEST_CASE("cuda training: in float32 the zoo's models end near the CPU's weights") {
  for (const char* name : {"lenet5bn", "vggfm", "resnet20"}) {
    INFO("model " << name);
    const Run cpu = train(name, kCPU, kFloat32, 4), gpu = train(name, kCUDA, kFloat32, 4);
    compare(cpu, gpu, 1e-4, qgrad_test::check_close_in_norm);
  }
}
