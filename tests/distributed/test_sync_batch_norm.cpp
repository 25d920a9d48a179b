// SyncBatchNorm, sync_batch_norm and convert_sync_batchnorm in the world of one process: the
// module is BatchNorm2d bit for bit there; the function (which synchronises even on one rank)
// matches batch_norm within float rounding and passes finite differences; conversion keeps the
// state; bad input names the layer. (Two ranks: tests/distributed/mpi, tag [sync-bn].)
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "distributed/batch_norm_testing.h"
#include "distributed/convert_sync_batchnorm.h"
#include "distributed/single_process_group.h"
#include "distributed/sync_batch_norm.h"
#include "distributed/sync_batch_norm_op.h"
#include "nn/models/zoo.h"
#include "nn/modules/batchnorm.h"
#include "nn/modules/conv.h"
#include "nn/modules/sequential.h"
#include "ops/batch_norm/batch_norm.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "quant/modules/fold_conv_bn.h"
#include "quant/modules/quant_conv_bn2d.h"
#include "quant/modules/quantize_model.h"
#include "support/fixtures.h"
#include "support/require_gradcheck.h"

using namespace qgrad;
using namespace qgrad::distributed;

using qgrad_test::randomise_affine;
using qgrad_test::scaled_error;

namespace {

std::shared_ptr<ProcessGroup> single() {
  return std::make_shared<SingleProcessGroup>();
}

// Random data with a different mean and spread per channel (dim 1).
Tensor channel_data(const Shape& shape, std::uint64_t seed, DType dtype = kFloat32,
                    double offset = 0) {
  Generator g(seed);
  Shape per_channel(shape.size(), 1);
  per_channel[1] = shape[1];
  const Tensor scale = rand(per_channel, g, TensorOptions().dtype(dtype)) * 3.0 + 0.5;
  const Tensor shift = randn(per_channel, g, TensorOptions().dtype(dtype)) * 2.0 + offset;
  return randn(shape, g, TensorOptions().dtype(dtype)) * scale + shift;
}

}  // namespace

TEST_CASE(
    "SyncBatchNorm: one rank is BatchNorm2d bit for bit (train, momentum or cumulative, "
    "eval)",
    "[sync-bn]") {
  for (const std::optional<double> momentum :
       std::vector<std::optional<double>>{0.1, std::nullopt}) {
    INFO("momentum " << (momentum ? std::to_string(*momentum) : "None"));
    const nn::BatchNormOptions o = nn::BatchNormOptions(3).momentum(momentum);
    nn::BatchNorm2d bn(o);
    SyncBatchNorm sync(o, single());
    randomise_affine(bn, 5);
    randomise_affine(sync, 5);
    for (std::uint64_t step = 0; step < 3; ++step) {
      INFO("step " << step);
      Tensor x1 = channel_data({6, 3, 5, 4}, 10 + step).set_requires_grad();
      Tensor x2 = x1.detach().clone().set_requires_grad();
      const Tensor r = channel_data({6, 3, 5, 4}, 20 + step);
      bn.zero_grad();
      sync.zero_grad();
      const Tensor y1 = bn.forward(x1), y2 = sync.forward(x2);
      qgrad_test::require_bitwise(y2, y1, "output");
      sum(y1 * r).backward();
      sum(y2 * r).backward();
      qgrad_test::require_bitwise(x2.grad(), x1.grad(), "input gradient");
      qgrad_test::require_bitwise(sync.weight().grad(), bn.weight().grad(), "weight gradient");
      qgrad_test::require_bitwise(sync.bias().grad(), bn.bias().grad(), "bias gradient");
      qgrad_test::require_bitwise(sync.running_mean(), bn.running_mean(), "running_mean");
      qgrad_test::require_bitwise(sync.running_var(), bn.running_var(), "running_var");
      CHECK(sync.num_batches_tracked().item<std::int64_t>() == static_cast<std::int64_t>(step + 1));
    }
    bn.eval();
    sync.eval();
    const Tensor x = channel_data({2, 3, 4, 4}, 30);
    qgrad_test::require_bitwise(sync.forward(x), bn.forward(x), "eval output");
  }
}

TEST_CASE("sync_batch_norm on one rank matches batch_norm within float rounding", "[sync-bn]") {
  struct Case {
    Shape shape;
    DType dtype;
    double offset, tolerance;
  };
  // Tolerances relative to the largest value of each result (measured: 0 in float64, at most
  // 6e-7 in float32). float32 agrees to a few ulps, not bitwise: the statistics are summed in
  // another order. With a channel mean of 1000, one float32 ulp of the mean is 6e-5: the two
  // may round it to neighbouring floats, which moves every output by up to that over the
  // channel's spread, and the weight gradient sums 90 such outputs times dy (measured 2.4e-4 in
  // the Clang sanitizer build, whose batch_norm kernel rounds differently from GCC's).
  const std::vector<Case> cases{
      {{8, 4}, kFloat32, 0, 2e-6},        {{4, 3, 7}, kFloat32, 0, 2e-6},
      {{3, 2, 5, 6}, kFloat32, 0, 2e-6},  {{3, 2, 5, 6}, kFloat32, 1000, 1e-3},
      {{3, 2, 5, 6}, kFloat64, 0, 1e-12}, {{5, 3, 2, 2, 3}, kFloat64, 100, 1e-12}};
  for (const Case& c : cases) {
    INFO("shape " << shape_str(c.shape) << " " << dtype_name(c.dtype) << " offset " << c.offset);
    const std::int64_t ch = c.shape[1];
    const TensorOptions opts = TensorOptions().dtype(c.dtype);
    const Tensor x0 = channel_data(c.shape, 40, c.dtype, c.offset);
    Generator g(41);
    const Tensor w0 = rand({ch}, g, opts) + 0.5, b0 = randn({ch}, g, opts);
    const Tensor r = channel_data(c.shape, 42, c.dtype);
    Tensor x1 = x0.clone().set_requires_grad(), w1 = w0.clone().set_requires_grad(),
           b1 = b0.clone().set_requires_grad();
    Tensor x2 = x0.clone().set_requires_grad(), w2 = w0.clone().set_requires_grad(),
           b2 = b0.clone().set_requires_grad();
    Tensor rm1 = zeros({ch}, opts), rv1 = ones({ch}, opts);
    Tensor rm2 = zeros({ch}, opts), rv2 = ones({ch}, opts);
    const Tensor y1 = batch_norm(x1, rm1, rv1, w1, b1, true, 0.3, 1e-5);
    const Tensor y2 = sync_batch_norm(x2, rm2, rv2, w2, b2, 0.3, 1e-5, single());
    sum(y1 * r).backward();
    sum(y2 * r).backward();
    CHECK(scaled_error(y2, y1) <= c.tolerance);
    CHECK(scaled_error(rm2, rm1) <= c.tolerance);
    CHECK(scaled_error(rv2, rv1) <= c.tolerance);
    CHECK(scaled_error(x2.grad(), x1.grad()) <= c.tolerance);
    CHECK(scaled_error(w2.grad(), w1.grad()) <= c.tolerance);
    CHECK(scaled_error(b2.grad(), b1.grad()) <= c.tolerance);
    CHECK(y2.dtype() == c.dtype);
    CHECK(y2.shape() == c.shape);
  }
}

TEST_CASE("sync_batch_norm: gradients match finite differences (float64, one rank)", "[sync-bn]") {
  const TensorOptions f64 = TensorOptions().dtype(kFloat64);
  Generator g(50);
  const Tensor x = channel_data({3, 2, 3, 2}, 51, kFloat64).set_requires_grad();
  const Tensor w = (rand({2}, g, f64) + 0.5).set_requires_grad();
  const Tensor b = randn({2}, g, f64).set_requires_grad();
  auto group = single();
  qgrad_test::require_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return sync_batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], 0.1, 1e-5, group);
      },
      {x, w, b});
  // Without weight and bias.
  qgrad_test::require_gradcheck(
      [&](const Tensor& in) {
        return sync_batch_norm(in, Tensor(), Tensor(), Tensor(), Tensor(), 0.1, 1e-5, group);
      },
      channel_data({4, 3}, 52, kFloat64).set_requires_grad());
}

TEST_CASE("convert_sync_batchnorm keeps lenet5bn's state, mode and outputs", "[sync-bn]") {
  auto model = nn::make_model("lenet5bn", 7);
  auto reference = nn::make_model("lenet5bn", 7);
  auto& seq = dynamic_cast<nn::Sequential&>(*model);
  // A frozen BN weight and one layer in eval mode: both carried over.
  auto& ref_seq = dynamic_cast<nn::Sequential&>(*reference);
  for (nn::Sequential* s : {&seq, &ref_seq}) {
    Tensor frozen = dynamic_cast<nn::BatchNorm2d&>(*(*s)[5]).weight();
    frozen.set_requires_grad(false);
    (*s)[5]->eval();
  }
  // Some running statistics, so the buffers are not the initial 0 / 1.
  (void)model->forward(channel_data({4, 1, 28, 28}, 60));
  (void)reference->forward(channel_data({4, 1, 28, 28}, 60));
  const TensorDict before = model->state_dict();

  CHECK(convert_sync_batchnorm(*model, single()) == 2);
  const TensorDict after = model->state_dict();
  REQUIRE(after.size() == before.size());
  for (const auto& it : before) {
    INFO(it.key);
    const Tensor* now = after.find(it.key);
    REQUIRE(now != nullptr);
    CHECK(now->dtype() == it.value.dtype());
    qgrad_test::require_bitwise_f64(*now, it.value);
  }
  auto sync1 = std::dynamic_pointer_cast<SyncBatchNorm>(seq[1]);
  auto sync5 = std::dynamic_pointer_cast<SyncBatchNorm>(seq[5]);
  REQUIRE(sync1 != nullptr);
  REQUIRE(sync5 != nullptr);
  CHECK(sync1->is_training());
  CHECK_FALSE(sync5->is_training());
  CHECK(sync1->weight().requires_grad());
  CHECK_FALSE(sync5->weight().requires_grad());
  CHECK(sync5->process_group()->backend() == "single");
  CHECK(convert_sync_batchnorm(*model, single()) == 0);  // nothing left to convert

  // One rank: the converted model computes what the original does, bit for bit.
  const Tensor x = channel_data({4, 1, 28, 28}, 61);
  const Tensor y = model->forward(x), y_ref = reference->forward(x);
  qgrad_test::require_bitwise(y, y_ref, "training output");
  sum(y).backward();
  sum(y_ref).backward();
  const auto grads = model->named_parameters(), grads_ref = reference->named_parameters();
  for (const auto& it : grads_ref) {
    INFO(it.key);
    const Tensor* p = grads.find(it.key);
    REQUIRE(p != nullptr);
    REQUIRE(p->grad().defined() == it.value.grad().defined());
    if (p->grad().defined()) qgrad_test::require_bitwise(p->grad(), it.value.grad(), it.key);
  }
}

TEST_CASE("convert_sync_batchnorm reaches BatchNorm2d inside BasicBlocks and shortcuts",
          "[sync-bn]") {
  auto model = nn::make_model("resnet20", 3);
  std::int64_t bns = 0;
  model->apply([&](const std::string&, const nn::Module& m) {
    bns += dynamic_cast<const nn::BatchNorm2d*>(&m) != nullptr;
  });
  REQUIRE(bns == 21);
  CHECK(convert_sync_batchnorm(*model, single()) == 21);
  std::int64_t left = 0;
  model->apply([&](const std::string&, const nn::Module& m) {
    left += dynamic_cast<const nn::BatchNorm2d*>(&m) != nullptr &&
            dynamic_cast<const SyncBatchNorm*>(&m) == nullptr;
  });
  CHECK(left == 0);
  // BasicBlock routes its forward through the new children: a training step updates them.
  (void)model->forward(channel_data({2, 1, 28, 28}, 70));
  auto bn1 = std::dynamic_pointer_cast<SyncBatchNorm>(
      model->named_modules().at("layer1.0.bn1"));  // resnet20's first block
  REQUIRE(bn1 != nullptr);
  CHECK(bn1->num_batches_tracked().item<std::int64_t>() == 1);
}

TEST_CASE("SyncBatchNorm is a BatchNorm2d to folding and fused conv-BN QAT", "[sync-bn]") {
  Generator g(80);
  nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3), g);
  const nn::BatchNormOptions o(3);
  auto bn = std::make_shared<nn::BatchNorm2d>(o);
  auto sync = std::make_shared<SyncBatchNorm>(o, single());
  randomise_affine(*bn, 81);
  randomise_affine(*sync, 81);
  {
    NoGradGuard no_grad;
    Tensor(bn->running_var()).fill_(2.0);
    Tensor(sync->running_var()).fill_(2.0);
  }
  const Tensor x = channel_data({2, 2, 6, 6}, 82);
  qgrad_test::require_bitwise(quant::fold_conv_bn(conv, *sync)->forward(x),
                              quant::fold_conv_bn(conv, *bn)->forward(x), "folded conv");

  // fuse_bn keeps the SyncBatchNorm as the fused layer's "bn" and calls its forward.
  auto model = nn::make_model("lenet5bn", 9);
  REQUIRE(convert_sync_batchnorm(*model, single()) == 2);
  quant::quantize_model(*model, nlohmann::json{{"family", "torch_ao"}, {"fuse_bn", true}});
  auto fused =
      std::dynamic_pointer_cast<quant::QuantConvBn2d>(dynamic_cast<nn::Sequential&>(*model)[0]);
  REQUIRE(fused != nullptr);
  REQUIRE(std::dynamic_pointer_cast<SyncBatchNorm>(fused->bn()) != nullptr);
  (void)model->forward(channel_data({2, 1, 28, 28}, 83));
  CHECK(fused->bn()->num_batches_tracked().item<std::int64_t>() == 1);
}

TEST_CASE("SyncBatchNorm: repr, [N, C] input, bad input named", "[sync-bn]") {
  SyncBatchNorm sync(nn::BatchNormOptions(4).momentum(std::nullopt), single());
  CHECK(sync.repr() ==
        "BatchNorm2d(4, eps=1e-05, momentum=None, affine=True, track_running_stats=True, "
        "process_group=single, world_size=1)");
  const std::vector<std::string> keys = sync.state_dict().keys();
  CHECK(keys == std::vector<std::string>{"weight", "bias", "running_mean", "running_var",
                                         "num_batches_tracked"});
  CHECK(sync.forward(channel_data({5, 4}, 90)).shape() == Shape{5, 4});

  CHECK_THROWS_WITH(SyncBatchNorm(nn::BatchNormOptions(4), nullptr),
                    Catch::Contains("SyncBatchNorm: process_group is null"));
  CHECK_THROWS_WITH(SyncBatchNorm(nn::BatchNormOptions(0), single()),
                    Catch::Contains("SyncBatchNorm: num_features must be positive"));
  CHECK_THROWS_WITH(SyncBatchNorm(nn::BatchNormOptions(2).momentum(1.5), single()),
                    Catch::Contains("SyncBatchNorm: momentum"));
  CHECK_THROWS_AS(sync.forward(zeros({4})), ShapeError);
  CHECK_THROWS_WITH(sync.forward(zeros({4})),
                    Catch::Contains("SyncBatchNorm: expected at least 2D"));
  CHECK_THROWS_WITH(sync.forward(zeros({2, 3, 4, 4})),
                    Catch::Contains("SyncBatchNorm: expected 4 channels"));
  CHECK_THROWS_WITH(sync.forward(Tensor()), Catch::Contains("SyncBatchNorm: input is undefined"));

  nn::Sequential seq;
  CHECK_THROWS_WITH(convert_sync_batchnorm(seq, nullptr),
                    Catch::Contains("convert_sync_batchnorm: the process group is null"));
  nn::BatchNorm2d root(3);
  CHECK_THROWS_WITH(convert_sync_batchnorm(root, single()),
                    Catch::Contains("the model itself is a BatchNorm2d"));
  CHECK(convert_sync_batchnorm(sync, single()) == 0);

  const Tensor x = channel_data({2, 3, 4}, 91);
  CHECK_THROWS_WITH(sync_batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), 0.1, 1e-5, nullptr),
                    Catch::Contains("sync_batch_norm: the process group is null"));
  CHECK_THROWS_AS(
      sync_batch_norm(x.to(kInt32), Tensor(), Tensor(), Tensor(), Tensor(), 0.1, 1e-5, single()),
      DTypeError);
  CHECK_THROWS_WITH(
      sync_batch_norm(x, Tensor(), Tensor(), ones({4}), Tensor(), 0.1, 1e-5, single()),
      Catch::Contains("sync_batch_norm: weight must have shape [3]"));
  CHECK_THROWS_WITH(
      sync_batch_norm(x, zeros({3}), Tensor(), Tensor(), Tensor(), 0.1, 1e-5, single()),
      Catch::Contains("both be given"));
  CHECK_THROWS_WITH(
      sync_batch_norm(zeros({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), 0.1, 1e-5, single()),
      Catch::Contains("expected more than 1 value per channel over all ranks"));
}
