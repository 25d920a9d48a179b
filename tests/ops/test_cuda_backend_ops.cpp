// Every op on every device, in the manner of ggml's test-backend-ops: for each op of the build's
// catalogue whose kernels exist on CUDA, forward and backward on the GPU against the CPU kernels,
// with odd shapes, non-contiguous views and broadcasting. Results must be bitwise equal where the
// element math is shared (the <family>_elem.h functors) and within float32 rtol 1e-5 elsewhere
// (reductions sum in another order, cuDNN/cuBLAS use other algorithms). An op that supports CUDA
// but has no case here fails the test, so the coverage cannot silently lag behind the kernels.
// Part of test_gpu (tests/gpu_main.cpp), which reports Skipped (exit 77) without a GPU.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "qgrad.h"

using namespace qgrad;

namespace {

enum class Match { Bitwise, Close };

struct OpCase {
  // Builds the op's output from its inputs (all on one device).
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  std::vector<Shape> shapes;  // one per input; broadcasting shapes where the op broadcasts
  Match match = Match::Bitwise;
  bool positive = false;       // inputs in (0.5, 2.5) (log, sqrt, pow)
  bool differentiable = true;  // compare input gradients too
  bool mask_input0 = false;    // input 0 is a uint8 mask
};

Tensor unary_case(const char* op, const Tensor& x) {
  const std::string n = op;
  if (n == "neg") return neg(x);
  if (n == "abs") return abs(x);
  if (n == "sign") return sign(x);
  if (n == "exp") return exp(x);
  if (n == "log") return log(x);
  if (n == "sqrt") return sqrt(x);
  if (n == "relu") return relu(x);
  if (n == "relu6") return relu6(x);
  if (n == "leaky_relu") return leaky_relu(x, 0.1);
  if (n == "hardtanh") return hardtanh(x, -0.5, 0.75);
  if (n == "sigmoid") return sigmoid(x);
  if (n == "tanh") return tanh(x);
  if (n == "gelu") return gelu(x, "tanh") + gelu(x);
  if (n == "clamp") return clamp(x, -0.3, 0.4);
  throw ValueError("no unary case for " + n);
}

std::map<std::string, OpCase> cases() {
  std::map<std::string, OpCase> c;
  const std::vector<Shape> bcast{{3, 1, 7}, {5, 1}};
  for (const char* op : {"neg", "abs", "sign", "exp", "log", "sqrt", "relu", "relu6", "leaky_relu",
                         "hardtanh", "sigmoid", "tanh", "gelu", "clamp"}) {
    const std::string n = op;
    OpCase k;
    k.fn = [op](const std::vector<Tensor>& in) { return unary_case(op, in[0]); };
    k.shapes = {{3, 5, 7}};
    k.positive = n == "log" || n == "sqrt";
    k.differentiable = n != "sign";
    c[n] = k;
  }
  auto binary = [&](const char* name, Tensor (*f)(const Tensor&, const Tensor&), bool grad) {
    OpCase k;
    k.fn = [f](const std::vector<Tensor>& in) { return f(in[0], in[1]); };
    k.shapes = bcast;
    k.differentiable = grad;
    c[name] = k;
  };
  binary(
      "add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, true);
  binary(
      "sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, true);
  binary(
      "mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, true);
  binary(
      "div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, true);
  binary(
      "maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, true);
  binary(
      "minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, true);
  for (auto [name, f] :
       std::vector<std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)>>{
           {"eq", [](const Tensor&a, const Tensor&b) { return eq(a, b); }},
           {"ne", [](const Tensor&a, const Tensor&b) { return ne(a, b); }},
           {"lt", [](const Tensor&a, const Tensor&b) { return lt(a, b); }},
           {"le", [](const Tensor&a, const Tensor&b) { return le(a, b); }},
           {"gt", [](const Tensor&a, const Tensor&b) { return gt(a, b); }},
           {"ge", [](const Tensor&a, const Tensor&b) { return ge(a, b); }}})
    binary(name, f, false);
  {
    OpCase k;  // libm pow and CUDA's pow differ in the last bits
    k.fn = [](const std::vector<Tensor>& in) { return pow(in[0], in[1]) + pow(in[0], 2.0); };
    k.shapes = bcast;
    k.positive = true;
    k.match = Match::Close;
    c["pow"] = k;
  }
  auto reduction = [&](const char* name, std::function<Tensor(const Tensor&)> f, bool grad) {
    OpCase k;
    k.fn = [f](const std::vector<Tensor>& in) { return f(in[0]); };
    k.shapes = {{4, 33, 5}};
    k.match = Match::Close;
    k.differentiable = grad;
    c[name] = k;
  };
  reduction(
      "sum",
      [](const Tensor& x) {
        return sum(x, {0, 2}) + sum(x).reshape({1});
      },
      true);
  reduction(
      "mean", [](const Tensor& x) { return mean(x, {1}, true); }, true);
  reduction(
      "var", [](const Tensor& x) { return var(x, {1}); }, true);
  reduction(
      "amax", [](const Tensor& x) { return amax(x, {2}); }, true);
  reduction(
      "amin",
      [](const Tensor& x) {
        return amin(x, {0, 1});
      },
      true);
  reduction(
      "max", [](const Tensor& x) { return max(x, 1).first; }, true);
  reduction(
      "min", [](const Tensor& x) { return min(x, 0).first; }, true);
  reduction(
      "argmax", [](const Tensor& x) { return argmax(x, 1).to(kFloat32); }, false);
  reduction(
      "argmin", [](const Tensor& x) { return argmin(x).to(kFloat32).reshape({1}); }, false);
  {
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); };
    k.shapes = {{3, 1, 7}, {5, 7}, {3, 5, 1}};
    k.mask_input0 = true;
    c["where"] = k;
  }
  for (auto [name, f] :
       std::vector<std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)>>{
           {"logical_and", [](const Tensor&a, const Tensor&b) { return logical_and(a, b); }},
           {"logical_or", [](const Tensor&a, const Tensor&b) { return logical_or(a, b); }},
           {"logical_not", [](const Tensor&a, const Tensor&) { return logical_not(a); }}}) {
    OpCase k;
    k.fn = [f](const std::vector<Tensor>& in) { return f(gt(in[0], 0.0), lt(in[1], 0.2)); };
    k.shapes = bcast;
    k.differentiable = false;
    c[name] = k;
  }
  // The optimisers: two steps on a parameter with a fixed gradient (the same functors on both
  // devices, so the same bits).
  {
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      Tensor p = in[0].detach().clone().set_requires_grad(true);
      p.set_grad(in[1].detach().clone());
      optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4).nesterov(true));
      opt.step();
      opt.step();
      return p.detach();
    };
    k.shapes = {{7, 5}, {7, 5}};
    k.differentiable = false;
    c["sgd_step"] = k;
  }
  {
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      Tensor p = in[0].detach().clone().set_requires_grad(true);
      p.set_grad(in[1].detach().clone());
      optim::Adam opt({p}, optim::AdamOptions(0.01).amsgrad(true).weight_decay(1e-3));
      opt.step();
      opt.step();
      return p.detach();
    };
    k.shapes = {{7, 5}, {7, 5}};
    k.differentiable = false;
    c["adam_step"] = k;
  }
  return c;
}

// Inputs on the CPU, deterministic; uint8 masks for mask inputs.
std::vector<Tensor> make_inputs(const OpCase& k, std::uint64_t seed, bool transposed) {
  Generator gen(seed);
  std::vector<Tensor> in;
  for (std::size_t i = 0; i < k.shapes.size(); ++i) {
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

void compare(const std::string& what, const Tensor& cpu, const Tensor& gpu, Match match) {
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
      CHECK(std::fabs(a[i] - b[i]) <= 1e-6 + 1e-5 * std::fabs(a[i]));
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
  compare(op + " forward", y_cpu, y_gpu, k.match);
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
              k.match == Match::Bitwise ? Match::Close : k.match);
  }
}

}  // namespace

TEST_CASE("backend ops: every op with CUDA kernels matches the CPU, forward and backward") {
  const std::map<std::string, OpCase> all = cases();
  std::size_t ran = 0;
  for (const std::string& op : kernel_registry().ops()) {
    if (!supports(op, kCUDA, kFloat32)) continue;
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
