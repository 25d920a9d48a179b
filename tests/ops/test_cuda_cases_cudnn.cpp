// The cross-device test's cases for conv2d, the pooling ops and batch_norm (see
// backend_op_case.h), whose CUDA kernels are ops/conv/conv_cuda.cu (cuDNN),
// ops/pool/pool_cuda.cu and ops/batch_norm/batch_norm_cuda.cu. Each case sums several
// configurations of one op with the same output shape (concat has no CUDA kernel), so one
// forward and one backward cover stride, padding, dilation, groups, bias, ceil_mode, the
// average divisors, tied maxima, training and eval batch norm and the running statistics. Also
// here, as CUDA tests of their own: the same cases in float64 against the CPU, and conv2d's
// gradients with deterministic algorithms (core/deterministic.h) bitwise equal from run to run.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/deterministic.h"
#include "ops/backend_op_case.h"

using namespace qgrad;
using qgrad_test::Match;
using qgrad_test::OpCase;

namespace {

const char* const kCudnnFamilyOps[] = {"conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
                                       "batch_norm"};

// Small integers in [-4, 4] as floats: many tied maxima in every pooling window.
Tensor tied_values(const Shape& s, Generator& gen) {
  return (randn(s, gen) * 2.0).to(kInt32).to(kFloat32);
}

void add_cudnn_family_cases(qgrad_test::OpCases& c) {
  {
    // x [2, 4, 9, 8]; both convolutions give [2, 6, 4, 10]. float32 sums of up to 144 products
    // in another order (cuDNN's algorithms): rtol 1e-4, atol 1e-4.
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      const Tensor grouped = conv2d(in[0], in[1], in[2], /*stride=*/{2, 1}, /*padding=*/{1, 2},
                                    /*dilation=*/{2, 1}, /*groups=*/2);
      const Tensor plain = conv2d(in[0], in[3], Tensor(), {2, 1}, {0, 1}, {1}, 1);
      return grouped + plain;
    };
    k.shapes = {{2, 4, 9, 8}, {6, 2, 3, 3}, {6}, {6, 4, 3, 1}};
    k.match = Match::Close;
    k.rtol = 1e-4;
    k.atol = 1e-4;
    c["conv2d"] = k;
  }
  {
    // x [2, 3, 11, 10] and the same shape with ties; every pooling gives [2, 3, 6, 6]. Max is
    // exact forward; gradients sum in another order where windows overlap: rtol 1e-5.
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      auto pools = [](const Tensor& x) {
        return max_pool2d(x, {3}, {2}, {1}, {1}, /*ceil_mode=*/true) +
               max_pool2d(x, {2, 2}, {2}, {1, 1}, /*dilation=*/{2, 1}, false);
      };
      return pools(in[0]) + pools(in[1]) * 3.0;
    };
    k.shapes = {{2, 3, 11, 10}, {2, 3, 11, 10}};
    k.make_input = [](std::size_t i, Generator& gen) {
      return i == 1 ? tied_values({2, 3, 11, 10}, gen) : Tensor();
    };
    k.match = Match::Close;
    k.rtol = 1e-5;
    k.atol = 1e-6;
    c["max_pool2d"] = k;
  }
  {
    OpCase k;  // every pooling gives [2, 3, 6, 6]
    k.fn = [](const std::vector<Tensor>& in) {
      const Tensor& x = in[0];
      return avg_pool2d(x, {3}, {2}, {1}, /*ceil_mode=*/true, /*count_include_pad=*/true) +
             avg_pool2d(x, {3, 2}, {2}, {1, 1}, false, /*count_include_pad=*/false) +
             avg_pool2d(x, {3}, {2}, {1}, true, false, /*divisor_override=*/5);
    };
    k.shapes = {{2, 3, 11, 10}};
    k.match = Match::Close;
    k.rtol = 1e-5;
    k.atol = 1e-6;
    c["avg_pool2d"] = k;
  }
  {
    OpCase k;  // shrinking, overlapping and growing windows, all to [2, 3, 4, 3]
    k.fn = [](const std::vector<Tensor>& in) {
      return adaptive_avg_pool2d(in[0], {4, 3}) + adaptive_avg_pool2d(in[1], {4, 3}) +
             adaptive_avg_pool2d(in[2], {4, 3});
    };
    k.shapes = {{2, 3, 11, 10}, {2, 3, 5, 7}, {2, 3, 3, 2}};
    k.match = Match::Close;
    k.rtol = 1e-5;
    k.atol = 1e-6;
    c["adaptive_avg_pool2d"] = k;
  }
  {
    // Training with and without affine parameters, the running statistics it updates (added
    // in, broadcast over n, h, w), eval mode with those statistics, and a 2-D [N, C] input
    // (broadcast over the first two dims). Sums in another order: rtol 1e-4, atol 1e-5.
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      const Tensor &x = in[0], &w = in[1], &b = in[2], &x2 = in[3];
      const TensorOptions o = TensorOptions().dtype(x.dtype()).device(x.device());
      Tensor rm = zeros({3}, o), rv = ones({3}, o);
      const Tensor train = batch_norm(x, rm, rv, w, b, /*training=*/true, 0.1, 1e-5);
      const Tensor plain = batch_norm(x * 2.0, Tensor(), Tensor(), Tensor(), Tensor(), true);
      const Tensor eval = batch_norm(x, rm, rv, w, b, /*training=*/false, 0.1, 1e-3);
      const Tensor flat = batch_norm(x2, Tensor(), Tensor(), Tensor(), Tensor(), true);
      return train + plain + eval * 0.5 + flat + rm.view({1, 3, 1, 1}) +
             rv.view({1, 3, 1, 1}) * 2.0;
    };
    k.shapes = {{4, 3, 5, 6}, {3}, {3}, {5, 6}};
    k.match = Match::Close;
    k.rtol = 1e-4;
    k.atol = 1e-5;
    c["batch_norm"] = k;
  }
}

QGRAD_OP_CASES(add_cudnn_family_cases);

std::vector<double> values(const Tensor& t) {
  return t.to(kCPU).to_vector<double>();
}

void check_close(const std::string& what, const Tensor& cpu, const Tensor& gpu, double tol) {
  INFO(what);
  REQUIRE(cpu.shape() == gpu.shape());
  const std::vector<double> a = values(cpu), b = values(gpu);
  // One assertion per tensor (some hold 280,000 values) naming the worst element.
  std::size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double excess = std::fabs(a[i] - b[i]) / (1 + std::fabs(a[i]));
    if (std::isnan(excess)) excess = INFINITY;
    bad += excess > tol;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  INFO("worst element " << worst << " of " << a.size() << ": cpu " << (a.empty() ? 0.0 : a[worst])
                        << ", cuda " << (b.empty() ? 0.0 : b[worst]));
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("cuda conv2d, pooling and batch_norm: float64 matches the CPU, forward and backward") {
  const qgrad_test::OpCases all = qgrad_test::all_op_cases();
  for (const char* op : kCudnnFamilyOps) {
    if (!supports(op, kCUDA, kFloat64)) continue;  // conv2d without cuDNN
    INFO("op " << op);
    const OpCase k = all.at(op);  // a copy: no reference into a call on a temporary key
    Generator gen(4321);
    std::vector<Tensor> cpu_in, gpu_in;
    for (std::size_t i = 0; i < k.shapes.size(); ++i) {
      Tensor x = k.make_input ? k.make_input(i, gen) : Tensor();
      if (!x.defined()) x = randn(k.shapes[i], gen);
      x = x.to(kFloat64);
      cpu_in.push_back(x.detach().set_requires_grad(true));
      gpu_in.push_back(x.detach().to(kCUDA).set_requires_grad(true));
    }
    const Tensor y_cpu = k.fn(cpu_in), y_gpu = k.fn(gpu_in);
    REQUIRE(y_gpu.dtype() == kFloat64);
    check_close("forward", y_cpu, y_gpu, 1e-10);
    const Tensor gy = randn(y_cpu.shape(), gen, TensorOptions().dtype(kFloat64));
    y_cpu.backward(gy);
    y_gpu.backward(gy.to(kCUDA));
    for (std::size_t i = 0; i < cpu_in.size(); ++i)
      check_close("gradient of input " + std::to_string(i), cpu_in[i].grad(), gpu_in[i].grad(),
                  1e-10);
  }
}

TEST_CASE("cuda conv2d: deterministic algorithms give the same gradients on every run") {
  if (!supports("conv2d", kCUDA, kFloat32)) return;  // no cuDNN in this build
  struct Restore {
    ~Restore() { set_deterministic_algorithms(false); }
  } restore;
  set_deterministic_algorithms(true);
  Generator gen(7);
  const Tensor x0 = randn({8, 16, 14, 14}, gen), w0 = randn({32, 8, 3, 3}, gen) * 0.1;
  const Tensor b0 = randn({32}, gen), gy = randn({8, 32, 7, 7}, gen);
  auto run = [&](Device d) {
    Tensor x = x0.detach().to(d).set_requires_grad(true);
    Tensor w = w0.detach().to(d).set_requires_grad(true);
    Tensor b = b0.detach().to(d).set_requires_grad(true);
    const Tensor y = conv2d(x, w, b, {2}, {1}, {1}, /*groups=*/2);
    y.backward(gy.to(d));
    return std::vector<Tensor>{y, x.grad(), w.grad(), b.grad()};
  };
  const std::vector<Tensor> first = run(kCUDA), second = run(kCUDA), cpu = run(kCPU);
  const char* names[] = {"output", "input gradient", "weight gradient", "bias gradient"};
  for (std::size_t i = 0; i < first.size(); ++i) {
    INFO(names[i]);
    CHECK(values(first[i]) == values(second[i]));  // bitwise, run to run
    check_close(names[i], cpu[i], first[i], 1e-4);
  }
}

TEST_CASE("cuda batch_norm: channels split over many blocks match the CPU, bitwise run to run") {
  // Shapes that cut each channel into several chunks (ops/batch_norm/batch_norm_cuda.cu: at
  // least 4096 values a chunk), with a last chunk shorter than the others and chunk edges in the
  // middle of a row; a 2-D [N, C] input; and more channels than a grid's 65535 rows.
  const std::vector<Shape> shapes = {
      {8, 3, 64, 64}, {9, 2, 61, 67}, {3, 16, 40, 41}, {20001, 3}, {1, 70001, 2, 2}};
  for (const Shape& s : shapes) {
    INFO("shape " << shape_str(s));
    Generator gen(99);
    const std::int64_t ch = s[1];
    const Tensor x0 = randn(s, gen, TensorOptions().dtype(kFloat64)) * 3.0 + 1.0;
    const Tensor w0 = randn({ch}, gen, TensorOptions().dtype(kFloat64));
    const Tensor b0 = randn({ch}, gen, TensorOptions().dtype(kFloat64));
    const Tensor gy = randn(s, gen, TensorOptions().dtype(kFloat64));
    auto run = [&](Device d, DType dt) {
      const TensorOptions o = TensorOptions().dtype(dt).device(d);
      Tensor x = x0.detach().to(dt).to(d).detach().set_requires_grad(true);
      Tensor w = w0.detach().to(dt).to(d).detach().set_requires_grad(true);
      Tensor b = b0.detach().to(dt).to(d).detach().set_requires_grad(true);
      Tensor rm = zeros({ch}, o), rv = ones({ch}, o);
      const Tensor y = batch_norm(x, rm, rv, w, b, /*training=*/true, 0.1, 1e-5);
      y.backward(gy.to(dt).to(d));
      return std::vector<Tensor>{y, rm, rv, x.grad(), w.grad(), b.grad()};
    };
    const char* names[] = {"output",         "running_mean",    "running_var",
                           "input gradient", "weight gradient", "bias gradient"};
    const std::vector<Tensor> cpu = run(kCPU, kFloat64), gpu = run(kCUDA, kFloat64);
    for (std::size_t i = 0; i < cpu.size(); ++i) check_close(names[i], cpu[i], gpu[i], 1e-10);
    const std::vector<Tensor> first = run(kCUDA, kFloat32), second = run(kCUDA, kFloat32);
    for (std::size_t i = 0; i < first.size(); ++i) {
      INFO(names[i] << ", float32");
      CHECK(values(first[i]) == values(second[i]));
    }
  }
}
