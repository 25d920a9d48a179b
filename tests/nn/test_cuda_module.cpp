// Modules, optimisers and checkpoints across devices (part of test_gpu, Skipped without a GPU):
// Module::to moves every parameter, gradient and buffer to the GPU and back unchanged; an Adam
// run on the GPU saved mid-way resumes on the CPU (and a CPU checkpoint on the GPU) and ends
// where the uninterrupted run does, to the rounding of the GPU's summation order.
#include <catch2/catch.hpp>

#include "core/factory.h"
#include "nn/module.h"
#include "nn/optim/adam.h"
#include "nn/serialize/checkpoint.h"
#include "nn/tiny_module.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "support/scratch_files.h"

using namespace qgrad;
using qgrad_test::TempDir;
using qgrad_test::Tiny;

namespace {

// Adam steps `from` to `to` on the module's device, the data drawn on the CPU from the step's
// seed, so any device sees the same batches.
void train_steps(Tiny& m, optim::Optimizer& opt, int from, int to) {
  for (int s = from; s < to; ++s) {
    Generator g(100 + static_cast<std::uint64_t>(s));
    const Tensor x = randn({4, 3}, g).to(m.w.device());
    opt.zero_grad();
    m.loss(x).backward();
    opt.step();
    m.seen.fill_(static_cast<double>(s + 1));
  }
}

void require_state_close(const TensorDict& a, const TensorDict& b, double rtol) {
  REQUIRE(a.size() == b.size());
  for (const auto& it : a) {
    INFO(it.key);
    const Tensor& other = b[it.key];
    const std::vector<double> x = it.value.to(kCPU).to_vector<double>();
    const std::vector<double> y = other.to(kCPU).to_vector<double>();
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      CHECK(std::fabs(x[i] - y[i]) <= 1e-7 + rtol * std::fabs(x[i]));
  }
}

}  // namespace

TEST_CASE(
    "cuda module: to(cuda) moves parameters, gradients and buffers, to(cpu) brings them back "
    "unchanged") {
  Tiny m(1);
  Generator g(5);
  m.loss(randn({4, 3}, g)).backward();
  const TensorDict before = m.state_dict();
  const std::vector<double> grad_before = m.w.grad().to_vector<double>();
  m.to(kCUDA);
  for (const Tensor& p : m.parameters()) {
    CHECK(p.device() == kCUDA);
    CHECK(p.requires_grad());
  }
  CHECK(m.w.grad().device() == kCUDA);
  CHECK(m.seen.device() == kCUDA);
  CHECK(m.seen.dtype() == kInt64);
  m.to(kCPU);
  for (const auto& it : m.state_dict()) {
    INFO(it.key);
    CHECK(it.value.device() == kCPU);
    CHECK(it.value.to_vector<double>() == before[it.key].to_vector<double>());
  }
  CHECK(m.w.grad().to_vector<double>() == grad_before);
}

TEST_CASE(
    "cuda module: a checkpoint saved on the GPU resumes on the CPU, and the other way round") {
  TempDir dir;
  Tiny ref(1);
  ref.to(kCUDA);
  optim::Adam ref_opt(ref.parameters(), optim::AdamOptions(0.05).amsgrad(true));
  train_steps(ref, ref_opt, 0, 6);

  for (const bool from_gpu : {true, false}) {
    INFO((from_gpu ? "saved on the GPU, resumed on the CPU"
                   : "saved on the CPU, resumed on the GPU"));
    const Device first = from_gpu ? kCUDA : kCPU, second = from_gpu ? kCPU : kCUDA;
    const std::string path = dir.file(from_gpu ? "gpu.safetensors" : "cpu.safetensors");
    Tiny a(1);
    a.to(first);
    optim::Adam a_opt(a.parameters(), optim::AdamOptions(0.05).amsgrad(true));
    train_steps(a, a_opt, 0, 3);
    serialize::save_checkpoint(path, a, &a_opt, nullptr, 0, 3);

    Tiny b(999);
    b.to(second);
    optim::Adam b_opt(b.parameters(), optim::AdamOptions(0.05).amsgrad(true));
    serialize::load_checkpoint(path, b, &b_opt, nullptr);
    for (const Tensor& p : b.parameters()) REQUIRE(p.device() == second);
    REQUIRE(b.seen.item<std::int64_t>() == 3);
    train_steps(b, b_opt, 3, 6);
    require_state_close(b.state_dict(), ref.state_dict(), 1e-5);
    require_state_close(b_opt.state_dict(), ref_opt.state_dict(), 1e-5);
  }
}
