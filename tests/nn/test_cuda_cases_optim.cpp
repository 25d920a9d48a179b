// The cross-device test's cases for the optimiser updates (see backend_op_case.h): two steps
// on a parameter with a fixed gradient; the same functors on both devices, so the same bits.
#include <catch2/catch.hpp>

#include <limits>

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
  // Clipping by the norms of order 2, 1, 3 and infinity, the norm itself returned too (it is
  // summed in another order on the GPU, so close, not bitwise), in both the double and the
  // tensor form.
  {
    OpCase k;
    k.fn = [](const std::vector<Tensor>& in) {
      std::vector<Tensor> out;
      for (double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
        Tensor a = in[0].detach().clone().set_requires_grad(true);
        Tensor b = in[1].detach().clone().set_requires_grad(true);
        a.set_grad(in[0].detach() * 3.0);
        b.set_grad(in[1].detach().clone());
        const double norm = nn::utils::clip_grad_norm_({a, b}, 0.5, p);
        out.push_back(a.grad().reshape({-1}).to(kCPU));
        out.push_back(b.grad().reshape({-1}).to(kCPU));
        out.push_back(full({1}, norm));
        // The tensor form, whose norm and coefficient never leave the device.
        a.set_grad(in[0].detach() * 3.0);
        b.set_grad(in[1].detach().clone());
        const Tensor t = nn::utils::clip_grad_norm_tensor_({a, b}, 0.5, p);
        out.push_back(a.grad().reshape({-1}).to(kCPU));
        out.push_back(t.reshape({1}).to(kCPU));
      }
      // Gathered on the CPU: the case must not depend on concat's own CUDA kernel.
      return concat(out, 0).to(in[0].device());
    };
    k.shapes = {{300, 7}, {1000}};
    k.match = qgrad_test::Match::Close;
    k.differentiable = false;
    c["clip_grad_norm_"] = k;
  }
}

}  // namespace

QGRAD_OP_CASES(add_optim_cases);
