// NpyDataset from .npy files written by save_npy (the real format): uint8 and float32 images,
// NCHW, NHWC and 3-d layouts, integer label dtypes, and every validation error naming the file.
#include <catch2/catch.hpp>

#include <functional>

#include "core/error.h"
#include "core/factory.h"
#include "core/npy.h"
#include "nn/data/npy_dataset.h"
#include "support/scratch_files.h"

using namespace qgrad;
using namespace qgrad::data;
using qgrad_test::TempDir;

namespace {

// n images [n, c, h, w] with pixel value (i * 31 + p) % 256 (p the NCHW offset in the image).
std::vector<std::uint8_t> pixels(std::int64_t n, std::int64_t chw) {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(n * chw));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t p = 0; p < chw; ++p)
      px[static_cast<std::size_t>(i * chw + p)] = static_cast<std::uint8_t>((i * 31 + p) % 256);
  return px;
}

Tensor labels_of(std::int64_t n, DType dtype) {
  std::vector<std::int64_t> l(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) l[static_cast<std::size_t>(i)] = i % 3;
  return from_vector(l).to(dtype);
}

}  // namespace

TEST_CASE("npy dataset: uint8 NCHW images are scaled to [0, 1], labels become int64") {
  TempDir dir;
  save_npy(dir.file("x.npy"), from_vector(pixels(5, 3 * 4 * 2), {5, 3, 4, 2}));
  save_npy(dir.file("y.npy"), labels_of(5, kUInt8));
  NpyDataset d(dir.file("x.npy"), dir.file("y.npy"));
  REQUIRE(d.size() == 5);
  REQUIRE(d.images().shape() == Shape{5, 3, 4, 2});
  Example e = d.get(4);
  REQUIRE(e.data.shape() == Shape{3, 4, 2});
  REQUIRE(e.data.dtype() == kFloat32);
  REQUIRE(e.target.dim() == 0);
  REQUIRE(e.target.dtype() == kInt64);
  REQUIRE(e.target.item<std::int64_t>() == 1);
  const auto v = e.data.to_vector<float>();
  for (std::size_t p = 0; p < v.size(); ++p)
    REQUIRE(v[p] == static_cast<float>((4 * 31 + p) % 256) / 255.0f);
  REQUIRE_THROWS_AS(d.get(5), IndexError);
  REQUIRE(npy_image_shape(dir.file("x.npy"), ImageLayout::NCHW) == Shape{3, 4, 2});
}

TEST_CASE("npy dataset: NHWC is transposed to NCHW, 3-d is one channel, float32 kept as is") {
  TempDir dir;
  // NHWC: the same images as NCHW [2, 3, 4, 5] permuted.
  Tensor nchw = from_vector(pixels(2, 3 * 4 * 5), {2, 3, 4, 5});
  save_npy(dir.file("nhwc.npy"), nchw.permute({0, 2, 3, 1}).contiguous());
  save_npy(dir.file("y.npy"), labels_of(2, kInt32));
  NpyDataset d(dir.file("nhwc.npy"), dir.file("y.npy"), ImageLayout::NHWC);
  REQUIRE(d.get(1).data.shape() == Shape{3, 4, 5});
  REQUIRE(d.images().to_vector<std::uint8_t>() == nchw.to_vector<std::uint8_t>());
  REQUIRE(npy_image_shape(dir.file("nhwc.npy"), ImageLayout::NHWC) == Shape{3, 4, 5});

  save_npy(dir.file("hw.npy"), from_vector(pixels(2, 6 * 7), {2, 6, 7}));
  REQUIRE(NpyDataset(dir.file("hw.npy"), dir.file("y.npy")).get(0).data.shape() == Shape{1, 6, 7});

  std::vector<float> f{-1.5f, 0.25f, 2.0f, 3.0f};
  save_npy(dir.file("f.npy"), from_vector(f, {2, 1, 2, 1}));
  for (DType dt : {kInt8, kInt16, kInt64}) {
    save_npy(dir.file("y.npy"), labels_of(2, dt));
    NpyDataset fd(dir.file("f.npy"), dir.file("y.npy"), ImageLayout::NCHW, 3);
    REQUIRE(fd.get(1).data.to_vector<float>() == std::vector<float>{2.0f, 3.0f});
    REQUIRE(fd.get(1).target.item<std::int64_t>() == 1);
  }
}

TEST_CASE("npy dataset: bad dtypes, ranks, counts and labels are errors naming the file") {
  TempDir dir;
  const std::string x = dir.file("x.npy"), y = dir.file("y.npy");
  save_npy(x, from_vector(pixels(3, 4), {3, 1, 2, 2}));
  save_npy(y, labels_of(3, kInt64));
  CHECK_THAT(qgrad_test::io_error_of([&] { NpyDataset(dir.file("none.npy"), y); }),
             Catch::Contains(dir.file("none.npy")));

  save_npy(dir.file("f64.npy"), from_vector(pixels(3, 4), {3, 1, 2, 2}).to(kFloat64));
  CHECK_THAT(qgrad_test::io_error_of([&] { NpyDataset(dir.file("f64.npy"), y); }),
             Catch::Contains(dir.file("f64.npy")) && Catch::Contains("float64") &&
                 Catch::Contains("uint8 or float32"));
  save_npy(dir.file("2d.npy"), from_vector(pixels(3, 4), {3, 4}));
  CHECK_THAT(qgrad_test::io_error_of([&] { NpyDataset(dir.file("2d.npy"), y); }),
             Catch::Contains(dir.file("2d.npy")) && Catch::Contains("[N, H, W, C]"));
  save_npy(dir.file("empty.npy"), empty({0, 1, 2, 2}, TensorOptions().dtype(kUInt8)));
  save_npy(dir.file("y0.npy"), empty({0}, TensorOptions().dtype(kInt64)));
  CHECK_THAT(
      qgrad_test::io_error_of([&] { NpyDataset(dir.file("empty.npy"), dir.file("y0.npy")); }),
      Catch::Contains(dir.file("empty.npy")) && Catch::Contains("no images"));

  save_npy(dir.file("yf.npy"), labels_of(3, kFloat32));
  CHECK_THAT(qgrad_test::io_error_of([&] { NpyDataset(x, dir.file("yf.npy")); }),
             Catch::Contains(dir.file("yf.npy")) && Catch::Contains("integer dtype"));
  save_npy(dir.file("y2d.npy"), labels_of(3, kInt64).reshape({3, 1}));
  CHECK_THAT(qgrad_test::io_error_of([&] { NpyDataset(x, dir.file("y2d.npy")); }),
             Catch::Contains(dir.file("y2d.npy")) && Catch::Contains("labels [N]"));
  save_npy(dir.file("y4.npy"), labels_of(4, kInt64));
  CHECK_THAT(qgrad_test::io_error_of([&] { NpyDataset(x, dir.file("y4.npy")); }),
             Catch::Contains(x) && Catch::Contains(dir.file("y4.npy")) &&
                 Catch::Contains("3 images") && Catch::Contains("4 labels"));

  save_npy(dir.file("yneg.npy"), from_vector(std::vector<std::int32_t>{0, -2, 1}));
  CHECK_THAT(qgrad_test::io_error_of([&] { NpyDataset(x, dir.file("yneg.npy")); }),
             Catch::Contains(dir.file("yneg.npy")) && Catch::Contains("label -2 at index 1"));
  CHECK_THAT(
      qgrad_test::io_error_of([&] { NpyDataset(x, y, ImageLayout::NCHW, 2); }),
      Catch::Contains(y) && Catch::Contains("label 2 at index 2") && Catch::Contains("0..1"));
}
