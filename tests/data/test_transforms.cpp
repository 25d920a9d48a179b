// Transforms: Normalize arithmetic, RandomCrop geometry and offset coverage, RandomHorizontalFlip
// probability, determinism under a seeded Generator, and argument errors.
#include <catch2/catch.hpp>

#include <set>

#include "core/factory.h"
#include "nn/data/transforms.h"

using namespace qgrad;
using namespace qgrad::data;

namespace {

// [C, H, W] float image with value c*100 + h*10 + w.
Tensor coded_image(std::int64_t C, std::int64_t H, std::int64_t W) {
  std::vector<float> v;
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t w = 0; w < W; ++w) v.push_back(static_cast<float>(c * 100 + h * 10 + w));
  return from_vector<float>(v, {C, H, W});
}

}  // namespace

TEST_CASE("transforms: Normalize subtracts the mean and divides by the std per channel") {
  Generator gen(0);
  Tensor x = from_vector<float>({1, 2, 3, 4, 10, 20, 30, 40}, {2, 2, 2});
  Tensor y = Normalize({1.0, 10.0}, {2.0, 5.0})(x, gen);
  REQUIRE(y.shape() == Shape{2, 2, 2});
  REQUIRE(y.to_vector<float>() == std::vector<float>{0, 0.5, 1, 1.5, 0, 2, 4, 6});
  // One value for all channels; [H, W] images; float64.
  Tensor z = Normalize({0.5}, {0.25})(from_vector<double>({0.5, 1.0}, {1, 2}), gen);
  REQUIRE(z.shape() == Shape{1, 2});
  REQUIRE(z.to_vector<double>() == std::vector<double>{0, 2});
  // Fashion-MNIST's usual constants.
  Tensor m = Normalize({0.2860}, {0.3530})(full({1, 2, 2}, 0.2860), gen);
  for (float v : m.to_vector<float>()) REQUIRE(v == Approx(0.0f).margin(1e-7));
  REQUIRE_THROWS_AS(Normalize({0.1, 0.2}, {1.0}), ValueError);
  REQUIRE_THROWS_AS(Normalize({0.1}, {0.0}), ValueError);
  REQUIRE_THROWS_WITH(Normalize({0.1, 0.2, 0.3}, {1, 1, 1})(x, gen), Catch::Contains("2 channels"));
  REQUIRE_THROWS_AS(Normalize({0.1}, {1.0})(zeros({2}, TensorOptions().dtype(kInt64)), gen),
                    DTypeError);
}

TEST_CASE("transforms: RandomCrop picks a window of the zero-padded image") {
  const Tensor x = coded_image(2, 5, 6);
  std::set<std::pair<std::int64_t, std::int64_t>> offsets;
  for (std::uint64_t seed = 0; seed < 400; ++seed) {
    Generator gen(seed);
    Tensor y = RandomCrop(4, 2)(x, gen);
    REQUIRE(y.shape() == Shape{2, 4, 4});
    auto v = y.to_vector<float>();
    // Recover the window position from a pixel that lies inside the image, then check every
    // pixel: inside -> the source value, outside -> 0.
    bool found = false;
    std::int64_t top = 0, left = 0;
    for (std::int64_t t = 0; t <= 5 + 4 - 4 && !found; ++t)
      for (std::int64_t l = 0; l <= 6 + 4 - 4 && !found; ++l) {
        bool ok = true;
        for (std::int64_t c = 0; c < 2 && ok; ++c)
          for (std::int64_t r = 0; r < 4 && ok; ++r)
            for (std::int64_t q = 0; q < 4 && ok; ++q) {
              const std::int64_t sr = t + r - 2, sc = l + q - 2;
              const float want = (sr < 0 || sr >= 5 || sc < 0 || sc >= 6)
                                     ? 0.0f
                                     : static_cast<float>(c * 100 + sr * 10 + sc);
              ok = v[static_cast<std::size_t>((c * 4 + r) * 4 + q)] == want;
            }
        if (ok) {
          found = true;
          top = t;
          left = l;
        }
      }
    REQUIRE(found);
    offsets.insert({top, left});
  }
  // Every one of the (5 + 4 - 4 + 1) x (6 + 4 - 4 + 1) = 6 x 7 positions occurs.
  REQUIRE(offsets.size() == 42);
  // Same seed, same crop.
  Generator g1(9), g2(9);
  REQUIRE(RandomCrop(4, 2)(x, g1).to_vector<float>() == RandomCrop(4, 2)(x, g2).to_vector<float>());
  // No padding and full size: identity.
  Generator g(3);
  REQUIRE(RandomCrop(5, 6, 0)(x, g).to_vector<float>() == x.to_vector<float>());
  REQUIRE_THROWS_AS(RandomCrop(10, 0)(x, g), ShapeError);
  REQUIRE_THROWS_AS(RandomCrop(0), ValueError);
}

TEST_CASE("transforms: RandomHorizontalFlip mirrors the last dim with probability p") {
  const Tensor x = coded_image(1, 2, 3);
  Generator g(0);
  REQUIRE(RandomHorizontalFlip(1.0)(x, g).to_vector<float>() ==
          std::vector<float>{2, 1, 0, 12, 11, 10});
  REQUIRE(RandomHorizontalFlip(0.0)(x, g).to_vector<float>() == x.to_vector<float>());
  int flips = 0;
  for (std::uint64_t seed = 0; seed < 2000; ++seed) {
    Generator gs(seed);
    flips += RandomHorizontalFlip(0.3)(x, gs).to_vector<float>()[0] == 2.0f;
  }
  REQUIRE(flips > 2000 * 0.3 - 100);
  REQUIRE(flips < 2000 * 0.3 + 100);
  REQUIRE_THROWS_AS(RandomHorizontalFlip(1.5), ValueError);
  REQUIRE(RandomHorizontalFlip(0.5).repr() == "RandomHorizontalFlip(p=0.5)");
}
