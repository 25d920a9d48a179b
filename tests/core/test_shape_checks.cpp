// Overflow-checked shape arithmetic: numel_of, contiguous_strides, shape_size/checked_numel and
// empty() refuse shapes whose products overflow int64, including those hidden behind a leading
// 0 (numel 0, strides still products of the later dims), which used to be undefined behaviour.
#include <catch2/catch.hpp>

#include "core/factory.h"
#include "core/shape.h"

using namespace qgrad;

namespace {
constexpr std::int64_t k2_32 = 1LL << 32;
}

TEST_CASE("shape: numel_of and contiguous_strides throw instead of overflowing", "[core][shape]") {
  CHECK(numel_of({2, 3, 4}) == 24);
  CHECK(numel_of({}) == 1);
  CHECK(contiguous_strides({2, 0, 4}) == Shape{4, 4, 1});
  CHECK(contiguous_strides({0, 1LL << 30, 1LL << 30}) == Shape{1LL << 30 << 30, 1LL << 30, 1});

  CHECK_THROWS_AS(numel_of({k2_32, k2_32}), ShapeError);
  CHECK_THROWS_WITH(numel_of({k2_32, k2_32}), Catch::Contains("numel_of") &&
                                                  Catch::Contains("[4294967296, 4294967296]") &&
                                                  Catch::Contains("overflows int64"));
  // A leading 0 makes numel 0, but the strides are products of the later dims.
  CHECK(numel_of({0, k2_32, k2_32}) == 0);
  CHECK_THROWS_AS(contiguous_strides({0, k2_32, k2_32}), ShapeError);
  CHECK_THROWS_WITH(contiguous_strides({0, k2_32, k2_32}),
                    Catch::Contains("contiguous_strides") && Catch::Contains("overflow"));
}

TEST_CASE("shape: shape_size and checked_numel validate dims, strides and bytes", "[core][shape]") {
  const ShapeSize ok = shape_size({2, 0, 5}, 8);
  CHECK(ok.ok());
  CHECK(ok.numel == 0);
  CHECK(ok.nbytes == 0);
  const ShapeSize f = shape_size({3, 4}, 4);
  CHECK((f.ok() && f.numel == 12 && f.nbytes == 48));
  CHECK(shape_size({}, 8).numel == 1);

  const ShapeSize neg = shape_size({2, -1}, 4);
  CHECK(neg.status == ShapeSize::Status::kNegative);
  CHECK_THAT(neg.problem, Catch::Contains("negative dimension -1"));
  // The product of max(dim, 1) must fit even when a 0 makes the element count 0.
  const ShapeSize hidden = shape_size({0, k2_32, k2_32}, 1);
  CHECK(hidden.status == ShapeSize::Status::kOverflow);
  CHECK_THAT(hidden.problem, Catch::Contains("overflows int64"));
  CHECK(shape_size({0, 1LL << 31, 1LL << 31}, 8).ok());
  // The byte count must fit too.
  CHECK(shape_size({1LL << 61}, 1).ok());
  CHECK(shape_size({1LL << 61}, 8).status == ShapeSize::Status::kOverflow);

  CHECK(checked_numel({5, 6}, 4, "op") == 30);
  CHECK_THROWS_AS(checked_numel({0, k2_32, k2_32}, 4, "my_loader"), ShapeError);
  CHECK_THROWS_WITH(checked_numel({0, k2_32, k2_32}, 4, "my_loader"),
                    Catch::StartsWith("my_loader: shape [0, 4294967296, 4294967296] overflows"));
  CHECK_THROWS_WITH(checked_numel({-3}, 4, "my_loader"),
                    Catch::Contains("my_loader") && Catch::Contains("negative dimension -3"));
}

TEST_CASE("shape: empty() refuses a leading 0 followed by dims whose strides overflow",
          "[core][shape][factory]") {
  // Used to be accepted with wrapped-around strides (undefined behaviour).
  CHECK_THROWS_AS(empty({0, k2_32, k2_32}), ValueError);
  CHECK_THROWS_WITH(empty({0, k2_32, k2_32}, TensorOptions().dtype(kUInt8)),
                    Catch::Contains("empty") && Catch::Contains("too large"));
  CHECK_THROWS_AS(empty({k2_32, 0, k2_32}), ValueError);
  // Still fine: large empty shapes whose strides fit, and the old checks.
  Tensor t = empty({0, 1LL << 20, 1LL << 20});
  CHECK(t.numel() == 0);
  CHECK(t.strides() == Shape{1LL << 40, 1LL << 20, 1});
  CHECK_THROWS_AS(empty({-3}), ShapeError);
  CHECK_THROWS_AS(empty({1LL << 40, 1LL << 40}), ValueError);
  // from_vector checks its shape the same way.
  CHECK_THROWS_AS(from_vector<float>({}, {0, k2_32, k2_32}), ShapeError);
  CHECK_THROWS_WITH(from_vector<float>({1, 2}, {k2_32, k2_32}), Catch::Contains("from_vector"));
}
