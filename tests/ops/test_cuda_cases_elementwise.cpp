// The cross-device test's cases for the element-wise families: unary, binary (with
// broadcasting), reductions, where and the logical ops (see backend_op_case.h).
#include <catch2/catch.hpp>

#include "ops/backend_op_case.h"

using namespace qgrad;
using qgrad_test::Match;
using qgrad_test::OpCase;

namespace {

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

void add_elementwise_cases(qgrad_test::OpCases& c) {
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
    k.fn = [fn = f](const std::vector<Tensor>& in) { return fn(gt(in[0], 0.0), lt(in[1], 0.2)); };
    k.shapes = bcast;
    k.differentiable = false;
    c[name] = k;
  }
}

}  // namespace

QGRAD_OP_CASES(add_elementwise_cases);
