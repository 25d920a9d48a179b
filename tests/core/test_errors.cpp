// Bad arguments to the core Tensor API: each throws the documented exception type with a
// message that names the op and the shapes/values involved (never a crash or a silent result).
#include <catch2/catch.hpp>

#include "tensor_testing.h"

using namespace qgrad;
using Catch::Contains;

TEST_CASE("view and reshape: invalid shapes", "[core][errors]") {
  Tensor x = zeros({2, 3, 4});
  CHECK_THROWS_AS(x.view({5, 5}), ShapeError);
  CHECK_THROWS_WITH(x.view({5, 5}),
                    Contains("view") && Contains("[5, 5]") && Contains("[2, 3, 4]"));
  CHECK_THROWS_WITH(x.view({-1, -1}), Contains("view") && Contains("only one dimension"));
  CHECK_THROWS_WITH(x.view({5, -1}), Contains("view") && Contains("[5, -1]"));
  CHECK_THROWS_WITH(x.view({-2, 12}), Contains("view") && Contains("[-2, 12]"));
  CHECK_THROWS_WITH(x.transpose(0, 2).view({24}),
                    Contains("view") && Contains("[4, 3, 2]") && Contains("strides"));
  CHECK_THROWS_AS(x.reshape({25}), ShapeError);
  CHECK_THROWS_WITH(x.reshape({25}), Contains("reshape") && Contains("[2, 3, 4]"));
  CHECK_THROWS_AS(x.flatten(2, 1), ValueError);
  CHECK_THROWS_WITH(x.flatten(2, 1), Contains("flatten"));
}

TEST_CASE("out-of-range dims name the op and the valid range", "[core][errors]") {
  Tensor x = zeros({2, 3});
  CHECK_THROWS_AS(x.size(2), IndexError);
  CHECK_THROWS_WITH(x.size(-3), Contains("size") && Contains("[-2, 1]"));
  CHECK_THROWS_AS(x.stride(5), IndexError);
  CHECK_THROWS_AS(scalar_tensor(1.0).size(0), IndexError);  // a 0-d tensor has no dims
  CHECK_THROWS_AS(scalar_tensor(1.0).stride(-1), IndexError);
  CHECK_THROWS_WITH(x.permute({0, 2}), Contains("permute") && Contains("dimension 2"));
  CHECK_THROWS_WITH(x.permute({0}), Contains("permute") && Contains("[2, 3]"));
  CHECK_THROWS_WITH(x.permute({1, 1}), Contains("permute") && Contains("repeated"));
  CHECK_THROWS_AS(x.transpose(0, 2), IndexError);
  CHECK_THROWS_WITH(x.transpose(-3, 0), Contains("transpose"));
  CHECK_THROWS_AS(scalar_tensor(1.0).transpose(0, 1), IndexError);
  CHECK_THROWS_WITH(zeros({2, 3, 4}).t(), Contains("t:") && Contains("[2, 3, 4]"));
  CHECK_THROWS_WITH(x.squeeze(2), Contains("squeeze"));
  CHECK_THROWS_AS(scalar_tensor(1.0).squeeze(1), IndexError);
  CHECK_THROWS_WITH(x.unsqueeze(3), Contains("unsqueeze") && Contains("[-3, 2]"));
  CHECK_THROWS_WITH(x.narrow(2, 0, 1), Contains("narrow"));
  CHECK_THROWS_WITH(x.slice(-3, 0, 1), Contains("slice"));
  CHECK_THROWS_WITH(x.select(2, 0), Contains("select"));
  CHECK_THROWS_WITH(x.flatten(0, 2), Contains("flatten"));
}

TEST_CASE("narrow, slice and select: bad ranges", "[core][errors]") {
  Tensor x = zeros({4, 5});
  CHECK_THROWS_AS(x.narrow(1, 3, 3), IndexError);
  CHECK_THROWS_WITH(x.narrow(1, 3, 3), Contains("narrow") && Contains("[4, 5]") &&
                                           Contains("start 3") && Contains("length 3"));
  CHECK_THROWS_AS(x.narrow(0, -5, 1), IndexError);
  CHECK_THROWS_AS(x.narrow(0, 1, -1), IndexError);
  CHECK_THROWS_AS(x.slice(0, 0, 4, 0), ValueError);
  CHECK_THROWS_WITH(x.slice(0, 0, 4, -1), Contains("slice") && Contains("step"));
  CHECK_THROWS_AS(x.select(0, 4), IndexError);
  CHECK_THROWS_WITH(x.select(1, -6), Contains("select") && Contains("-6") && Contains("5"));
  CHECK_THROWS_AS(scalar_tensor(1.0).select(0, 0), ShapeError);
  CHECK_THROWS_AS(scalar_tensor(1.0).narrow(0, 0, 1), ShapeError);
  CHECK_THROWS_AS(scalar_tensor(1.0).slice(0, 0, 1), ShapeError);
}

TEST_CASE("expand to incompatible shapes", "[core][errors]") {
  Tensor x = zeros({3, 1});
  CHECK_THROWS_AS(x.expand({4, 5}), ShapeError);
  CHECK_THROWS_WITH(x.expand({4, 5}),
                    Contains("expand") && Contains("[3, 1]") && Contains("[4, 5]"));
  CHECK_THROWS_WITH(x.expand({5}), Contains("expand") && Contains("fewer dims"));
  CHECK_THROWS_WITH(x.expand({-1, 3, 4}), Contains("expand") && Contains("[-1, 3, 4]"));
  // Negative sizes other than -1 on existing dims are rejected, not turned into shapes.
  CHECK_THROWS_AS(x.expand({3, -5}), ShapeError);
  CHECK_THROWS_WITH(x.expand({3, -2}), Contains("expand") && Contains("-2"));
}

TEST_CASE("copy_ and fill_: bad arguments", "[core][errors]") {
  Tensor dst = zeros({2, 3});
  CHECK_THROWS_AS(dst.copy_(zeros({3, 2})), ShapeError);
  CHECK_THROWS_WITH(dst.copy_(zeros({3, 2})),
                    Contains("copy_") && Contains("[3, 2]") && Contains("[2, 3]"));
  CHECK_THROWS_WITH(dst.copy_(zeros({4, 2, 3})), Contains("copy_") && Contains("[4, 2, 3]"));
  // Writing into a view where several elements share one memory location is ambiguous.
  Tensor e = zeros({3, 1}).expand({3, 4});
  CHECK_THROWS_AS(e.copy_(ones({3, 4})), ValueError);
  CHECK_THROWS_WITH(e.copy_(ones({3, 4})), Contains("copy_") && Contains("clone"));
  Tensor undefined;
  CHECK_THROWS_AS(undefined.fill_(1.0), ValueError);
  CHECK_THROWS_AS(dst.copy_(undefined), ValueError);
  CHECK(dst.version() == 0);  // nothing was written by the failed calls
}

TEST_CASE("undefined tensors are reported, not dereferenced", "[core][errors]") {
  Tensor u;
  CHECK_THROWS_AS(u.view({1}), ValueError);
  CHECK_THROWS_AS(u.reshape({1}), ValueError);
  CHECK_THROWS_AS(u.permute({}), ValueError);
  CHECK_THROWS_AS(u.t(), ValueError);
  CHECK_THROWS_AS(u.squeeze(), ValueError);
  CHECK_THROWS_AS(u.squeeze(0), ValueError);
  CHECK_THROWS_AS(u.unsqueeze(0), ValueError);
  CHECK_THROWS_AS(u.expand({1}), ValueError);
  CHECK_THROWS_AS(u.flatten(), ValueError);
  CHECK_THROWS_AS(u.contiguous(), ValueError);
  CHECK_THROWS_AS(u.clone(), ValueError);
  CHECK_THROWS_AS(u.to(kFloat64), ValueError);
  CHECK_THROWS_AS(u.item(), ValueError);
  CHECK_THROWS_AS(u.to_vector<float>(), ValueError);
  CHECK_THROWS_AS(u.detach(), ValueError);
  CHECK_THROWS_AS(u.set_requires_grad(true), ValueError);
  CHECK_THROWS_WITH(u.clone(), Contains("clone"));
}
