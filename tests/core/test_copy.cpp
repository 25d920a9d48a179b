// In-place copy_/fill_ and the strided copy kernel behind contiguous/clone/to: broadcasting and
// dtype conversion in copy_, writes into non-contiguous views, sources that overlap the
// destination, version counters, and large (multi-threaded) copies checked element by element
// against an independent index computation with 1 and 2 OpenMP threads.
#include <catch2/catch.hpp>

#include <omp.h>

#include "tensor_testing.h"

using namespace qgrad;
using qgrad::testing::at;
using qgrad::testing::iota;

TEST_CASE("copy_ broadcasts, converts dtypes and writes through views", "[core][copy]") {
  Tensor dst = zeros({2, 3}, TensorOptions().dtype(kFloat64));
  dst.copy_(from_vector(std::vector<float>{1.5f, 2.5f, 3.5f}));
  CHECK(dst.to_vector<double>() == std::vector<double>{1.5, 2.5, 3.5, 1.5, 2.5, 3.5});
  CHECK(dst.version() == 1);
  dst.copy_(scalar_tensor(7, TensorOptions().dtype(kInt32)));
  CHECK(dst.to_vector<double>() == std::vector<double>(6, 7.0));
  CHECK(dst.version() == 2);

  // Into a transposed view: element (i, j) of the view is element (j, i) of the base.
  Tensor base = zeros({3, 2}, TensorOptions().dtype(kFloat64));
  base.t().copy_(iota({2, 3}));
  CHECK(base.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
  // Into a strided slice, from a non-contiguous source.
  Tensor row = zeros({10}, TensorOptions().dtype(kFloat64));
  row.slice(0, 1, 10, 3).copy_(iota({3, 2}).select(1, 1));  // 1, 3, 5
  CHECK(row.to_vector<double>() == std::vector<double>{0, 1, 0, 0, 3, 0, 0, 5, 0, 0});
  // float -> uint8 clamps.
  Tensor u8 = zeros({3}, TensorOptions().dtype(kUInt8));
  u8.copy_(from_vector(std::vector<double>{-3, 300, 12.9}));
  CHECK(u8.to_vector<std::uint8_t>() == std::vector<std::uint8_t>{0, 255, 12});
  // Empty tensors: nothing to do, no error.
  Tensor e = zeros({0, 3});
  e.copy_(ones({3}));
  e.fill_(2.0);
  CHECK(e.numel() == 0);
}

TEST_CASE("copy_ from a source that overlaps the destination", "[core][copy]") {
  SECTION("a square matrix copied from its own transpose") {
    Tensor x = iota({3, 3});
    x.copy_(x.t());
    CHECK(x.to_vector<double>() == std::vector<double>{0, 3, 6, 1, 4, 7, 2, 5, 8});
  }
  SECTION("shifted slices of one buffer") {
    Tensor x = iota({6});
    x.slice(0, 1, 6).copy_(x.slice(0, 0, 5));
    CHECK(x.to_vector<double>() == std::vector<double>{0, 0, 1, 2, 3, 4});
    Tensor y = iota({6});
    y.slice(0, 0, 5).copy_(y.slice(0, 1, 6));
    CHECK(y.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 5});
  }
  SECTION("broadcast from part of the destination") {
    Tensor x = iota({3, 2});
    x.copy_(x.select(0, 2));  // every row becomes the last row
    CHECK(x.to_vector<double>() == std::vector<double>{4, 5, 4, 5, 4, 5});
  }
  SECTION("disjoint parts of one buffer and self-copy") {
    Tensor x = iota({2, 3});
    x.select(0, 0).copy_(x.select(0, 1));
    CHECK(x.to_vector<double>() == std::vector<double>{3, 4, 5, 3, 4, 5});
    CHECK_FALSE(may_overlap(x.select(0, 0), x.select(0, 1)));
    CHECK(may_overlap(x.slice(1, 0, 2), x.slice(1, 1, 3)));
    CHECK_FALSE(may_overlap(x, iota({2, 3})));
    x.copy_(x);
    CHECK(x.to_vector<double>() == std::vector<double>{3, 4, 5, 3, 4, 5});
  }
}

TEST_CASE("fill_ on views writes only the viewed elements and bumps the version", "[core][copy]") {
  Tensor x = zeros({4, 5}, TensorOptions().dtype(kFloat64));
  x.t().slice(0, 1, 5, 2).fill_(1.0);  // columns 1 and 3
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 5; ++j) CHECK(at(x, {i, j}) == (j == 1 || j == 3 ? 1.0 : 0.0));
  CHECK(x.version() == 1);
  x.zero_();
  CHECK(x.version() == 2);
  CHECK(x.to_vector<double>() == std::vector<double>(20, 0.0));
  // Filling an expanded view is well-defined (every alias gets the same value).
  Tensor base = zeros({3, 1});
  base.expand({3, 4}).fill_(2.0);
  CHECK(base.to_vector<float>() == std::vector<float>{2, 2, 2});
}

TEST_CASE("large strided copies are correct with 1 and 2 threads", "[core][copy]") {
  // 2048 x 2048 = 4M elements: contiguous() of the transpose and copy_ into a transposed view
  // both run on the parallel StridedLoop; results are checked against index arithmetic.
  const std::int64_t n = 2048;
  Tensor x = arange(static_cast<double>(n * n), TensorOptions().dtype(kFloat32)).view({n, n});
  const int prev = omp_get_max_threads();
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    omp_set_num_threads(threads);
    Tensor c = x.t().contiguous();
    REQUIRE(c.is_contiguous());
    const float* p = c.data_ptr<float>();
    bool ok = true;
    for (std::int64_t i = 0; i < n && ok; i += 7)
      for (std::int64_t j = 0; j < n; ++j) ok = ok && p[i * n + j] == static_cast<float>(j * n + i);
    CHECK(ok);

    Tensor dst = empty({n, n});
    dst.t().copy_(x);  // dst = x^T
    const float* q = dst.data_ptr<float>();
    ok = true;
    for (std::int64_t i = 0; i < n && ok; i += 5)
      for (std::int64_t j = 0; j < n; ++j) ok = ok && q[i * n + j] == p[i * n + j];
    CHECK(ok);

    // float32 -> float64 conversion of a strided view.
    Tensor d = x.slice(1, 1, n, 2).to(kFloat64);
    const double* r = d.data_ptr<double>();
    CHECK(d.shape() == Shape{n, n / 2});
    CHECK(r[0] == 1.0);
    CHECK(r[(n - 1) * (n / 2) + (n / 2 - 1)] ==
          static_cast<double>(static_cast<float>((n - 1) * n + n - 1)));
  }
  omp_set_num_threads(prev);
}

TEST_CASE("blocked transposed copies: odd sizes, batches, dtype conversion", "[core][copy]") {
  // Sizes that are not multiples of the tile, a batch dim, and a strided batch (slice).
  for (const Shape& shape :
       {Shape{37, 50}, Shape{3, 33, 65}, Shape{2, 64, 32}, Shape{5, 100, 31}}) {
    INFO(shape_str(shape));
    Tensor x = iota(shape);
    const std::int64_t nd = x.dim();
    Tensor xt = x.transpose(nd - 2, nd - 1);
    Tensor c = xt.contiguous();
    bool ok = true;
    qgrad::testing::for_each_index(xt.shape(),
                                   [&](const Shape& i) { ok = ok && at(c, i) == at(xt, i); });
    CHECK(ok);
    Tensor f = xt.to(kFloat32);  // converting copy through the same path
    CHECK(f.to_vector<double>() == c.to_vector<double>());
    Tensor i64 = xt.to(kInt64);
    CHECK(i64.to_vector<double>() == c.to_vector<double>());
  }
  // Batch dim strided too: every other matrix of a permuted 4-D tensor.
  Tensor y = iota({4, 3, 40, 36}).permute({1, 0, 3, 2}).slice(1, 0, 4, 2);  // [3, 2, 36, 40]
  Tensor yc = y.contiguous();
  bool ok = true;
  qgrad::testing::for_each_index(y.shape(),
                                 [&](const Shape& i) { ok = ok && at(yc, i) == at(y, i); });
  CHECK(ok);
  // copy_ into a transposed destination from a contiguous source.
  Tensor dst = zeros({45, 70}, TensorOptions().dtype(kFloat64));
  dst.t().copy_(iota({70, 45}));
  CHECK(at(dst, {44, 69}) == 69 * 45 + 44);
  CHECK(at(dst, {3, 2}) == 2 * 45 + 3);
}
