// Whole training steps on the GPU against the CPU (part of test_gpu): each model of the zoo,
// trained for a few SGD steps from the same seed on the same batches, ends with weights and
// losses close to the CPU's (cuDNN and cuBLAS sum in other orders than oneDNN, so close, not
// equal); and the steps go through every layer's CUDA kernels, forward and backward.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/factory.h"
#include "nn/models/zoo.h"
#include "nn/optim/sgd.h"
#include "ops/loss/loss.h"

using namespace qgrad;

namespace {

struct Run {
  std::vector<double> losses;
  TensorDict state;
};

Run train(const std::string& model_name, Device device, int steps) {
  auto model = nn::make_model(model_name, 0);
  model->to(device);
  model->train();
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.05).momentum(0.9).weight_decay(5e-4));
  Run r;
  Generator gen(7);
  for (int s = 0; s < steps; ++s) {
    const Tensor x = randn({16, 1, 28, 28}, gen).to(device);
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

}  // namespace

TEST_CASE("cuda training: the zoo's models take the same SGD steps on the GPU as on the CPU") {
  for (const char* name : {"lenet5bn", "vggfm", "resnet20"}) {
    INFO("model " << name);
    const Run cpu = train(name, kCPU, 4), gpu = train(name, kCUDA, 4);
    for (std::size_t i = 0; i < cpu.losses.size(); ++i) {
      INFO("step " << i << ": cpu loss " << cpu.losses[i] << ", cuda " << gpu.losses[i]);
      CHECK(std::fabs(cpu.losses[i] - gpu.losses[i]) <= 1e-4 * std::fabs(cpu.losses[i]));
    }
    for (const auto& it : cpu.state) {
      INFO(it.key);
      const Tensor& g = gpu.state[it.key];
      REQUIRE(g.device() == kCUDA);
      const std::vector<double> a = it.value.to_vector<double>(),
                                b = g.to(kCPU).to_vector<double>();
      std::size_t bad = 0;
      for (std::size_t i = 0; i < a.size(); ++i)
        bad += !(std::fabs(a[i] - b[i]) <= 1e-4 + 1e-3 * std::fabs(a[i]));
      CHECK(bad == 0);
    }
  }
}
