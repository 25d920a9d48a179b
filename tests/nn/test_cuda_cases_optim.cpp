// The cross-device test's cases for the optimiser updates (see backend_op_case.h): two steps
// on a parameter with a fixed gradient; the same functors on both devices, so the same bits.
#include <catch2/catch.hpp>

#include "ops/backend_op_case.h"

using namespace qgrad;
using qgrad_test::OpCase;

namespace {

void add_optim_cases(qgrad_test::OpCases& c) {
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
}

}  // namespace

QGRAD_OP_CASES(add_optim_cases);
