// The cross-device test's cases for the nn-level op families (see backend_op_case.h): matmul and
// linear (cuBLAS), softmax and log_softmax, the class and squared-error losses, concat and
// stack, pad in every mode, and dropout, whose CUDA mask must equal the CPU's bit for bit for
// the same seed.
#include <catch2/catch.hpp>

#include "ops/backend_op_case.h"

using namespace qgrad;
using qgrad_test::Match;
using qgrad_test::OpCase;

namespace {

// int64 class indices in [0, classes) of `shape`, built on the CPU.
Tensor class_targets(const Shape& shape, std::int64_t classes, Generator& gen) {
  return randint(0, classes, shape, gen);
}

// Per-class weights in [0.5, 1.5), detached so that they are not differentiated.
Tensor class_weights(std::int64_t classes, Generator& gen) {
  return rand({classes}, gen) + 0.5;
}

void add_nn_cases(qgrad_test::OpCases& c) {
  {
    // Batched, with b broadcast over a's first batch dim (copied for cuBLAS) and c broadcast
    // over every batch dim (batch stride 0); the transposed run gives column-major operands.
    // atol 1e-5: sums of O(1) products carry absolute rounding of about 1e-6 in float32 (oneDNN
    // and cuBLAS add in different orders); no TF32 is involved.
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      return matmul(in[0], in[1]) + matmul(in[0], in[2]);
    };
    k.shapes = {{2, 3, 4, 6}, {3, 6, 5}, {6, 5}};
    k.match = Match::Close;
    k.atol = 1e-5;
    c["matmul"] = k;
  }
  {
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
    k.shapes = {{2, 3, 6}, {5, 6}, {5}};
    k.match = Match::Close;
    k.atol = 1e-5;  // as matmul
    c["linear"] = k;
  }
  for (const char* op : {"softmax", "log_softmax"}) {
    const bool log = std::string(op) == "log_softmax";
    OpCase k;  // along a middle dim; the sums are taken in another order
    k.fn = [log](const std::vector<Tensor>& in) {
      return log ? log_softmax(in[0], 1) : softmax(in[0], 1);
    };
    k.shapes = {{3, 7, 4}};
    k.match = Match::Close;
    c[op] = k;
  }
  {
    // Spatial input [N, C, S], a weight, an ignored class and label smoothing; mean and none.
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      const Tensor w = in[2].detach();
      const auto opts = CrossEntropyOptions().weight(w).ignore_index(2).label_smoothing(0.1);
      return cross_entropy(in[0], in[1], opts) +
             sum(cross_entropy(in[0], in[1], CrossEntropyOptions(opts).reduction("none")));
    };
    k.shapes = {{4, 5, 3}, {4, 3}, {5}};
    k.make_input = [](std::size_t i, Generator& gen) {
      if (i == 1) return class_targets({4, 3}, 5, gen);
      if (i == 2) return class_weights(5, gen);
      return Tensor();
    };
    k.match = Match::Close;
    c["cross_entropy"] = k;
  }
  {
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      return nll_loss(in[0], in[1], NllLossOptions().weight(in[2].detach()).ignore_index(1));
    };
    k.shapes = {{6, 4}, {6}, {4}};
    k.make_input = [](std::size_t i, Generator& gen) {
      if (i == 1) return class_targets({6}, 4, gen);
      if (i == 2) return class_weights(4, gen);
      return Tensor();
    };
    k.match = Match::Close;
    c["nll_loss"] = k;
  }
  {
    OpCase k;  // the sum is reduced on the device in another order
    k.fn = [](const std::vector<Tensor>& in) {
      return mse_loss(in[0], in[1]) + sum(mse_loss(in[0], in[1], "none"));
    };
    k.shapes = {{3, 5, 7}, {3, 5, 7}};
    k.match = Match::Close;
    c["mse_loss"] = k;
  }
  {
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) { return concat({in[0], in[1], in[2]}, 1); };
    k.shapes = {{2, 3, 4}, {2, 5, 4}, {2, 1, 4}};
    c["concat"] = k;
  }
  {
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) { return stack({in[0], in[1]}, 1); };
    k.shapes = {{3, 4}, {3, 4}};
    c["stack"] = k;
  }
  {
    // Every mode, a negative (cropping) pad included (the gradients are compared bit for bit in
    // test_cuda_pad_backward.cpp).
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      const Tensor& x = in[0];
      return concat({pad(x, {1, 2, 2, 1}, "reflect").flatten(),
                     pad(x, {2, 1, -1, 3}, "constant", 0.5).flatten(),
                     pad(x, {3, 3, 1, 0}, "replicate").flatten(),
                     pad(x, {2, 4, 1, 1}, "circular").flatten()});
    };
    k.shapes = {{2, 3, 5, 6}};
    c["pad"] = k;
  }
  {
    // The same seed must draw the same mask: the output is compared bit for bit. 315 elements,
    // not a multiple of the 4 draws of a Philox block.
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      Generator gen(42);
      return dropout(in[0], 0.3, /*training=*/true, gen);
    };
    k.shapes = {{5, 7, 9}};
    c["dropout"] = k;
  }
}

}  // namespace

QGRAD_OP_CASES(add_nn_cases);
