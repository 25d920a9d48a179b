// dropout: the mask definition (element i kept iff the i-th draw's 24-bit uniform >= p) checked
// against an independent reference on a tensor big enough to run threaded, determinism per
// seed, keep rate, scaling, p = 0 / p = 1, eval mode, non-contiguous input, the backward pass
// reusing the forward mask, a float64 gradcheck and argument errors. (No PyTorch golden test:
// PyTorch's random stream differs; the expected values follow from the mask definition.)
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/autograd/gradcheck.h"
#include "core/device.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/dropout/dropout.h"

using namespace qgrad;

namespace {

bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.to_vector<double>() == b.to_vector<double>();
}

}  // namespace

TEST_CASE("dropout keeps exactly the elements its mask definition says, scaled", "[dropout]") {
  const double p = 0.3;
  const std::int64_t n = 200003;  // odd, and large enough for the threaded path
  Generator data_gen(1);
  const Tensor x = randn({n}, data_gen);
  Generator gen(42);
  gen.reserve(10);  // a non-zero starting offset
  const std::uint64_t first = gen.offset();
  Tensor y = dropout(x, p, true, gen);
  REQUIRE(gen.offset() == first + (n + 3) / 4);

  Generator ref(42);
  const auto xv = x.to_vector<float>();
  const auto yv = y.to_vector<float>();
  const std::uint32_t threshold = static_cast<std::uint32_t>(std::ceil(p * 16777216.0));
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  std::int64_t wrong = 0, dropped = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto blk = ref.block(first + static_cast<std::uint64_t>(i) / 4);
    const bool keep = (blk[i % 4] >> 8) >= threshold;
    dropped += keep ? 0 : 1;
    if (yv[i] != (keep ? xv[i] * scale : 0.0f)) ++wrong;
  }
  REQUIRE(wrong == 0);
  // Keep rate: 1 - p within 5 standard deviations.
  const double rate = static_cast<double>(dropped) / static_cast<double>(n);
  REQUIRE(std::abs(rate - p) < 5 * std::sqrt(p * (1 - p) / static_cast<double>(n)));
}

TEST_CASE("dropout is deterministic per generator seed", "[dropout]") {
  Generator data_gen(2);
  const Tensor x = randn({37, 11}, data_gen, TensorOptions().dtype(kFloat64));
  Generator a(7), b(7), c(8);
  const Tensor ya = dropout(x, 0.5, true, a);
  REQUIRE(same_values(ya, dropout(x, 0.5, true, b)));
  REQUIRE_FALSE(same_values(ya, dropout(x, 0.5, true, c)));
  // The next call on the same generator draws a fresh mask.
  REQUIRE_FALSE(same_values(ya, dropout(x, 0.5, true, a)));
}

TEST_CASE("dropout: p = 0, p = 1 and eval mode", "[dropout]") {
  Generator gen(3);
  const Tensor x = randn({5, 6}, gen);
  REQUIRE(same_values(dropout(x, 0.0, true, gen), x));

  Tensor xl = x.clone().set_requires_grad(true);
  Tensor y = dropout(xl, 1.0, true, gen);
  for (double v : y.to_vector<double>()) REQUIRE(v == 0.0);
  y.backward(ones({5, 6}));
  for (double v : xl.grad().to_vector<double>()) REQUIRE(v == 0.0);

  const std::uint64_t before = gen.offset();
  Tensor e = dropout(xl, 0.9, false, gen);
  REQUIRE(e.is_same(xl));
  REQUIRE(gen.offset() == before);
}

TEST_CASE("dropout of a non-contiguous view masks by logical position", "[dropout]") {
  Generator data_gen(4);
  const Tensor base = randn({9, 13}, data_gen);
  const Tensor v = base.t();
  REQUIRE_FALSE(v.is_contiguous());
  Generator g1(11), g2(11);
  REQUIRE(same_values(dropout(v, 0.4, true, g1), dropout(v.contiguous(), 0.4, true, g2)));
}

TEST_CASE("dropout backward applies the forward mask to the gradient", "[dropout]") {
  const double p = 0.25;
  Generator gen(5);
  Tensor x = ones({64, 33}, TensorOptions().dtype(kFloat64)).set_requires_grad(true);
  Tensor y = dropout(x, p, true, gen);
  Generator ggen(6);
  const Tensor g = randn({64, 33}, ggen, TensorOptions().dtype(kFloat64));
  y.backward(g);
  const auto yv = y.to_vector<double>(), gv = g.to_vector<double>(),
             gx = x.grad().to_vector<double>();
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < yv.size(); ++i) {
    const double want = yv[i] != 0.0 ? gv[i] / (1 - p) : 0.0;
    if (std::abs(gx[i] - want) > 1e-12) ++wrong;
  }
  REQUIRE(wrong == 0);
}

TEST_CASE("dropout gradcheck in float64", "[dropout][gradcheck]") {
  Generator data_gen(8);
  Tensor x = randn({7, 5}, data_gen, TensorOptions().dtype(kFloat64)).set_requires_grad(true);
  auto r = gradcheck(
      [](const std::vector<Tensor>& in) {
        Generator g(123);  // the same mask on every evaluation
        return dropout(in[0].t(), 0.4, true, g);
      },
      {x});
  INFO(r.message);
  REQUIRE(r.ok);
}

TEST_CASE("dropout errors name the op", "[dropout][errors]") {
  Generator gen(0);
  const Tensor x = zeros({3});
  for (double p : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    REQUIRE_THROWS_AS(dropout(x, p, true, gen), ValueError);
    REQUIRE_THROWS_WITH(dropout(x, p, false, gen),
                        Catch::Contains("dropout") && Catch::Contains("[0, 1]"));
  }
  REQUIRE_THROWS_AS(dropout(arange(3), 0.5, true, gen), DTypeError);
  REQUIRE_THROWS_WITH(dropout(arange(3), 0.5, true, gen), Catch::Contains("dropout"));
}
