// MNIST/Fashion-MNIST datasets from synthetic IDX files (plain and gz), their validation errors,
// and the real Fashion-MNIST files when installed (skipped with a message otherwise).
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/factory.h"
#include "nn/data/gzip.h"
#include "nn/data/idx.h"
#include "nn/data/mnist.h"
#include "support/scratch_files.h"

using namespace qgrad;
using namespace qgrad::data;
using qgrad_test::TempDir;

namespace {

// Writes a complete synthetic dataset: n_train/n_test images h x w (pixel = (i*7 + p) % 256)
// and labels i % 10, images gzip-compressed and labels plain (both forms must work).
void write_synthetic(const TempDir& dir, std::int64_t n_train, std::int64_t n_test, std::int64_t h,
                     std::int64_t w) {
  const std::vector<std::pair<const char*, std::int64_t>> splits = {{"train", n_train},
                                                                    {"t10k", n_test}};
  for (const auto& [prefix, n] : splits) {
    std::vector<std::uint8_t> px(static_cast<std::size_t>(n * h * w));
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t p = 0; p < h * w; ++p)
        px[static_cast<std::size_t>(i * h * w + p)] = static_cast<std::uint8_t>((i * 7 + p) % 256);
    std::vector<std::uint8_t> lb(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      lb[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i % 10);
    write_idx(dir.file(std::string(prefix) + "-images-idx3-ubyte.gz"), from_vector(px, {n, h, w}),
              true);
    write_idx(dir.file(std::string(prefix) + "-labels-idx1-ubyte"), from_vector(lb), false);
  }
}

}  // namespace

TEST_CASE("mnist: synthetic files load as float images in [0, 1] and int64 labels") {
  TempDir dir;
  write_synthetic(dir, 12, 5, 6, 4);
  REQUIRE(mnist_files_present(dir.file("")));
  MNIST train(dir.file(""), Split::Train);
  FashionMNIST test(Split::Test, dir.file(""));
  REQUIRE(train.size() == 12);
  REQUIRE(test.size() == 5);
  REQUIRE(train.images().shape() == Shape{12, 6, 4});
  REQUIRE(train.targets().dtype() == kInt64);
  Example e = train.get(3);
  REQUIRE(e.data.shape() == Shape{1, 6, 4});
  REQUIRE(e.data.dtype() == kFloat32);
  auto v = e.data.to_vector<float>();
  for (std::size_t p = 0; p < v.size(); ++p)
    REQUIRE(v[p] == static_cast<float>((3 * 7 + p) % 256) / 255.0f);
  REQUIRE(e.target.dim() == 0);
  REQUIRE(e.target.item<std::int64_t>() == 3);
  REQUIRE(test.get(4).target.item<std::int64_t>() == 4);
  REQUIRE_THROWS_AS(train.get(12), IndexError);
  REQUIRE(FashionMNIST::class_names().size() == 10);
  REQUIRE(FashionMNIST::class_names()[9] == "Ankle boot");
}

TEST_CASE("mnist: missing and inconsistent files are clear IOErrors") {
  TempDir dir;
  REQUIRE_FALSE(mnist_files_present(dir.file("")));
  REQUIRE_THROWS_AS(MNIST(dir.file(""), Split::Train), IOError);
  REQUIRE_THROWS_WITH(
      MNIST(dir.file(""), Split::Train),
      Catch::Contains("train-images-idx3-ubyte") && Catch::Contains("dataset-fashion-mnist"));

  write_synthetic(dir, 4, 3, 2, 2);
  // Label count differs from the image count.
  write_idx(dir.file("train-labels-idx1-ubyte"), from_vector<std::uint8_t>({1, 2, 3}));
  REQUIRE_THROWS_WITH(MNIST(dir.file(""), Split::Train),
                      Catch::Contains("4 images") && Catch::Contains("3 labels"));
  // A label outside 0..9.
  write_idx(dir.file("train-labels-idx1-ubyte"), from_vector<std::uint8_t>({1, 2, 11, 3}));
  REQUIRE_THROWS_WITH(MNIST(dir.file(""), Split::Train), Catch::Contains("label 11 at index 2"));
  // Images that are not [N, H, W] uint8.
  write_idx(dir.file("t10k-images-idx3-ubyte.gz"), zeros({3, 4}, TensorOptions().dtype(kUInt8)),
            true);
  REQUIRE_THROWS_WITH(MNIST(dir.file(""), Split::Test), Catch::Contains("[N, H, W]"));
  // A truncated gzip image file.
  write_synthetic(dir, 4, 3, 2, 2);
  const std::string img = dir.file("train-images-idx3-ubyte.gz");
  std::filesystem::resize_file(img, std::filesystem::file_size(img) - 6);
  REQUIRE_THROWS_WITH(MNIST(dir.file(""), Split::Train), Catch::Contains("truncated"));
}

TEST_CASE("mnist: an image file with no images, or dims that overflow, is refused") {
  TempDir dir;
  write_synthetic(dir, 4, 3, 2, 2);
  // No images (and no labels): training on this used to "succeed" on nothing.
  write_idx(dir.file("train-images-idx3-ubyte.gz"),
            zeros({0, 28, 28}, TensorOptions().dtype(kUInt8)), true);
  write_idx(dir.file("train-labels-idx1-ubyte"), zeros({0}, TensorOptions().dtype(kUInt8)));
  REQUIRE_THROWS_AS(MNIST(dir.file(""), Split::Train), IOError);
  REQUIRE_THROWS_WITH(
      MNIST(dir.file(""), Split::Train),
      Catch::Contains("train-images-idx3-ubyte.gz") && Catch::Contains("holds no images"));
  // [0, 2^32-1, 2^32-1]: 0 images whose strides overflow int64; used to be accepted.
  std::string hidden = {0, 0, 8, 3, 0, 0, 0, 0};
  hidden += std::string(8, '\xff');
  qgrad_test::write_bytes(dir.file("train-images-idx3-ubyte.gz"), gzip(hidden));
  REQUIRE_THROWS_WITH(MNIST(dir.file(""), Split::Train), Catch::Contains("too large"));
}

TEST_CASE("mnist: the installed Fashion-MNIST files (skipped when absent)") {
  const std::string root = FashionMNIST::kDefaultRoot;
  if (!mnist_files_present(root)) {
    WARN("SKIPPED: Fashion-MNIST not found in " << root << " (apt install dataset-fashion-mnist)");
    return;
  }
  FashionMNIST train(Split::Train), test(Split::Test);
  REQUIRE(train.size() == 60000);
  REQUIRE(test.size() == 10000);
  REQUIRE(train.images().shape() == Shape{60000, 28, 28});
  // Balanced classes: 6000 per class in train, 1000 in test.
  for (const auto* ds : {static_cast<const MNIST*>(&train), static_cast<const MNIST*>(&test)}) {
    std::vector<std::int64_t> counts(10, 0);
    for (auto l : ds->targets().to_vector<std::int64_t>()) ++counts[static_cast<std::size_t>(l)];
    const std::int64_t per_class = ds->size() == 60000 ? 6000 : 1000;
    REQUIRE(counts == std::vector<std::int64_t>(10, per_class));
  }
  // The published first labels and first images.
  auto first = train.targets().slice(0, 0, 10).to_vector<std::int64_t>();
  REQUIRE(first == std::vector<std::int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5});
  REQUIRE(test.get(0).target.item<std::int64_t>() == 9);
  auto px = train.images().select(0, 0).to_vector<std::int64_t>();
  std::int64_t s = 0;
  for (auto p : px) s += p;
  REQUIRE(s == 76247);
  Example e = test.get(0);
  REQUIRE(e.data.shape() == Shape{1, 28, 28});
  for (float x : e.data.to_vector<float>()) REQUIRE((x >= 0.0f && x <= 1.0f));
}
