// Every op on every device, in the manner of ggml's test-backend-ops: for each op of the build's
// catalogue whose kernels exist on CUDA, forward and backward on the GPU against the CPU kernels,
// with odd shapes, non-contiguous views and broadcasting. Results must be bitwise equal where the
// element math is shared (the <family>_elem.h functors) and within float32 rtol 1e-5 elsewhere
// (reductions sum in another order, cuDNN/cuBLAS use other algorithms). An op that supports CUDA
// but has no case here fails the test, so the coverage cannot silently lag behind the kernels.
// Part of test_gpu (tests/gpu_main.cpp), which reports Skipped (exit 77) without a GPU.
#include <catch2/catch.hpp>

#include "ops/backend_op_case.h"

using namespace qgrad;

namespace qgrad_test {

namespace {
std::vector<void (*)(OpCases&)>& case_adders() {
  static std::vector<void (*)(OpCases&)> adders;  // filled by static registrars before main
  return adders;
}
}  // namespace

OpCaseRegistrar::OpCaseRegistrar(void (*add)(OpCases&)) {
  case_adders().push_back(add);
}

OpCases all_op_cases() {
  OpCases c;
  for (auto add : case_adders()) add(c);
  return c;
}

bool op_on_cuda(const std::string& op) {
  // Any dtype counts: the logical ops take uint8 masks, not float32.
  for (DType dt : {kFloat32, kFloat64, kUInt8, kInt64})
    if (supports(op, kCUDA, dt)) return true;
  return false;
}

std::vector<std::string> cuda_ops_without_case() {
  const OpCases all = all_op_cases();
  std::vector<std::string> missing;
  for (const std::string& op : kernel_registry().ops())
    if (op_on_cuda(op) && all.count(op) == 0) missing.push_back(op);
  return missing;
}

}  // namespace qgrad_test

using qgrad_test::Match;
using qgrad_test::OpCase;

namespace {

// Inputs on the CPU, deterministic; uint8 masks for mask inputs.
std::vector<Tensor> make_inputs(const OpCase& k, std::uint64_t seed, bool transposed) {
  Generator gen(seed);
  std::vector<Tensor> in;
  for (std::size_t i = 0; i < k.shapes.size(); ++i) {
    if (k.make_input) {
      Tensor given = k.make_input(i, gen);
      if (given.defined()) {
        in.push_back(given);
        continue;
      }
    }
    Shape s = k.shapes[i];
    // A non-contiguous view: built transposed, then transposed back to the wanted shape.
    const bool t = transposed && s.size() >= 2;
    if (t) std::swap(s[s.size() - 1], s[s.size() - 2]);
    Tensor x = k.positive ? rand(s, gen) * 2.0 + 0.5 : randn(s, gen);
    if (t) x = x.transpose(-1, -2);
    if (k.mask_input0 && i == 0) x = gt(x, 0.0);
    in.push_back(x);
  }
  return in;
}

void compare(const std::string& what, const Tensor& cpu, const Tensor& gpu, Match match,
             const OpCase& k) {
  INFO(what);
  REQUIRE(gpu.device().is_cuda());
  REQUIRE(cpu.shape() == gpu.shape());
  REQUIRE(cpu.dtype() == gpu.dtype());
  const std::vector<double> a = cpu.to_vector<double>(), b = gpu.to(kCPU).to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": cpu " << a[i] << ", cuda " << b[i]);
    if (std::isnan(a[i])) {
      CHECK(std::isnan(b[i]));
    } else if (match == Match::Bitwise) {
      CHECK(a[i] == b[i]);
    } else {
      CHECK(std::fabs(a[i] - b[i]) <= k.atol + k.rtol * std::fabs(a[i]));
    }
  }
}

void run_case(const std::string& op, const OpCase& k, bool transposed) {
  const std::vector<Tensor> base = make_inputs(k, 1234, transposed);
  std::vector<Tensor> cpu_in, gpu_in;
  for (const Tensor& b : base) {
    const bool grad = k.differentiable && is_floating(b.dtype());
    cpu_in.push_back(b.detach().set_requires_grad(grad));
    gpu_in.push_back(b.detach().to(kCUDA).set_requires_grad(grad));
  }
  const Tensor y_cpu = k.fn(cpu_in), y_gpu = k.fn(gpu_in);
  compare(op + " forward", y_cpu, y_gpu, k.match, k);
  if (!k.differentiable || !y_cpu.requires_grad()) return;
  Generator gen(99);
  const Tensor w = randn(y_cpu.shape(), gen, TensorOptions().dtype(y_cpu.dtype()));
  y_cpu.backward(w);
  y_gpu.backward(w.to(kCUDA));
  for (std::size_t i = 0; i < cpu_in.size(); ++i) {
    if (!cpu_in[i].requires_grad()) continue;
    REQUIRE(cpu_in[i].grad().defined() == gpu_in[i].grad().defined());
    if (cpu_in[i].grad().defined())
      compare(op + " gradient of input " + std::to_string(i), cpu_in[i].grad(), gpu_in[i].grad(),
              k.match == Match::Bitwise ? Match::Close : k.match, k);
  }
}

}  // namespace

TEST_CASE("backend ops: every op with CUDA kernels matches the CPU, forward and backward") {
  const qgrad_test::OpCases all = qgrad_test::all_op_cases();
  std::size_t ran = 0;
  for (const std::string& op : kernel_registry().ops()) {
    if (!qgrad_test::op_on_cuda(op)) continue;
    INFO("op " << op);
    auto it = all.find(op);
    // An op with CUDA kernels and no case here is a coverage gap: fail rather than skip it.
    REQUIRE(it != all.end());
    run_case(op, it->second, /*transposed=*/false);
    run_case(op, it->second, /*transposed=*/true);
    ++ran;
  }
  INFO("ops compared: " << ran);
  CHECK(ran > 0);
}
