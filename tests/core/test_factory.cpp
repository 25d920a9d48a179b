// Factory functions and the Philox generator: constant fills, arange (integral and float steps,
// dtype inference, errors), from_vector / tensor({..}), and the random tensors: known-answer
// Philox blocks, same seed => same values, different seeds differ, values in range, loose
// moment checks on 100k samples, and results independent of the OpenMP thread count.
#include <catch2/catch.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "tensor_testing.h"

using namespace qgrad;

namespace {

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}
double std_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// Runs f with OpenMP limited to `n` threads, restoring the previous setting.
template <typename F>
auto with_threads(int n, F&& f) {
  const int prev = omp_get_max_threads();
  omp_set_num_threads(n);
  auto r = f();
  omp_set_num_threads(prev);
  return r;
}

}  // namespace

TEST_CASE("empty/zeros/ones/full/scalar_tensor and the *_like forms", "[core][factory]") {
  Tensor z = zeros({2, 3});
  CHECK(z.dtype() == kFloat32);
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(ones({4}, TensorOptions().dtype(kInt32)).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>(4, 1));
  CHECK(full({2, 2}, -1.5, TensorOptions().dtype(kFloat64)).to_vector<double>() ==
        std::vector<double>(4, -1.5));
  CHECK(full({3}, 7, TensorOptions().dtype(kUInt8)).to_vector<std::uint8_t>() ==
        std::vector<std::uint8_t>(3, 7));
  Tensor s = scalar_tensor(2.5, TensorOptions().dtype(kFloat64));
  CHECK(s.dim() == 0);
  CHECK(s.item<double>() == 2.5);
  CHECK(empty({0}).numel() == 0);
  CHECK(empty({}).numel() == 1);
  CHECK(empty({3, 0, 2}, TensorOptions().dtype(kInt64)).dtype() == kInt64);

  Tensor r = ones({2}, TensorOptions().dtype(kFloat64).requires_grad());
  CHECK(r.requires_grad());
  CHECK(r.is_leaf());
  CHECK(full({2}, 3.0, TensorOptions().requires_grad()).requires_grad());

  Tensor base = full({2, 3}, 4.0, TensorOptions().dtype(kInt8));
  CHECK(zeros_like(base).dtype() == kInt8);
  CHECK(zeros_like(base).to_vector<double>() == std::vector<double>(6, 0));
  CHECK(ones_like(base).shape() == Shape{2, 3});
  CHECK(full_like(base, 9).to_vector<double>() == std::vector<double>(6, 9));
  CHECK(empty_like(base).shape() == base.shape());
  CHECK_FALSE(zeros_like(r).requires_grad());

  CHECK_THROWS_AS(zeros({2, -1}), ShapeError);
  CHECK_THROWS_WITH(empty({-3}), Catch::Contains("empty") && Catch::Contains("[-3]"));
  CHECK_THROWS_AS(empty({1LL << 40, 1LL << 40}), ValueError);  // byte count overflows
  CHECK_THROWS_AS(ones({2}, TensorOptions().dtype(kInt64).requires_grad()), DTypeError);
}

TEST_CASE("arange: integral and float steps, dtype inference, errors", "[core][factory]") {
  Tensor a = arange(5);
  CHECK(a.dtype() == kInt64);
  CHECK(a.to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(2, 11, 3).to_vector<std::int64_t>() == std::vector<std::int64_t>{2, 5, 8});
  CHECK(arange(5, 0, -2).to_vector<std::int64_t>() == std::vector<std::int64_t>{5, 3, 1});
  CHECK(arange(3, 3).numel() == 0);
  CHECK(arange(0).numel() == 0);

  // Non-integral arguments give float32 (as torch.arange), not a truncated int64 range.
  Tensor f = arange(0, 1, 0.25);
  CHECK(f.dtype() == kFloat32);
  CHECK(f.to_vector<float>() == std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f});
  Tensor g = arange(0.5, 3);
  CHECK(g.dtype() == kFloat32);
  CHECK(g.to_vector<double>() == std::vector<double>{0.5, 1.5, 2.5});
  // Element count is ceil((end - start) / step), values start + i * step.
  Tensor tenth = arange(0, 1, 0.1, TensorOptions().dtype(kFloat64));
  REQUIRE(tenth.numel() == 10);
  CHECK(tenth.to_vector<double>()[3] == 0.0 + 3 * 0.1);
  CHECK(arange(1, 2.05, 0.1, TensorOptions().dtype(kFloat64)).numel() == 11);
  CHECK(arange(-1, -2.5, -0.5).to_vector<float>() == std::vector<float>{-1.0f, -1.5f, -2.0f});
  CHECK(arange(4, TensorOptions().dtype(kFloat64)).to_vector<double>() ==
        std::vector<double>{0, 1, 2, 3});
  CHECK(arange(3, TensorOptions().dtype(kUInt8)).dtype() == kUInt8);
  CHECK(arange(3, TensorOptions().dtype(kFloat64).requires_grad()).requires_grad());

  CHECK_THROWS_AS(arange(0, 5, 0), ValueError);
  CHECK_THROWS_WITH(arange(0, 5, -1), Catch::Contains("arange") && Catch::Contains("sign"));
  CHECK_THROWS_AS(arange(0, INFINITY), ValueError);
  CHECK_THROWS_AS(arange(NAN), ValueError);
  CHECK_THROWS_AS(arange(0, 1e300, 1e-300), ValueError);
}

TEST_CASE("from_vector and tensor({..})", "[core][factory]") {
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.dtype() == kFloat32);
  CHECK(a.shape() == Shape{2, 3});
  CHECK(a.strides() == Shape{3, 1});
  CHECK(a.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(from_vector(std::vector<std::int64_t>{7, 8}).dtype() == kInt64);
  CHECK(from_vector(std::vector<std::int8_t>{-7}).dtype() == kInt8);
  CHECK(from_vector(std::vector<std::uint8_t>{7}).dtype() == kUInt8);
  CHECK(from_vector(std::vector<std::int32_t>{7}).dtype() == kInt32);
  CHECK(from_vector(std::vector<std::int16_t>{-7, 300}).dtype() == kInt16);
  CHECK(from_vector(std::vector<std::int16_t>{-7, 300}).to_vector<std::int16_t>() ==
        std::vector<std::int16_t>{-7, 300});
  Tensor conv16 =
      from_vector(std::vector<double>{1.9, -2.9, 1e6}, {-1}, TensorOptions().dtype(kInt16));
  CHECK(conv16.dtype() == kInt16);
  CHECK(conv16.to_vector<std::int16_t>() == std::vector<std::int16_t>{1, -2, 32767});
  CHECK(ones({3}, TensorOptions().dtype(kInt16)).to_vector<std::int16_t>() ==
        std::vector<std::int16_t>(3, 1));
  CHECK(full({2}, -300, TensorOptions().dtype(kInt16)).to_vector<std::int16_t>() ==
        std::vector<std::int16_t>(2, -300));
  CHECK(arange(-2.0, 3.0, 2.0, TensorOptions().dtype(kInt16)).to_vector<std::int16_t>() ==
        std::vector<std::int16_t>{-2, 0, 2});
  CHECK(zeros_like(conv16).dtype() == kInt16);
  Tensor conv = from_vector(std::vector<double>{1.5, -2.5}, {-1}, TensorOptions().dtype(kInt32));
  CHECK(conv.dtype() == kInt32);
  CHECK(conv.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, -2});
  Tensor rg = from_vector(std::vector<double>{1, 2}, {2, 1},
                          TensorOptions().dtype(kFloat64).requires_grad());
  CHECK(rg.requires_grad());
  CHECK(rg.is_leaf());
  CHECK(from_vector(std::vector<float>{}).shape() == Shape{0});
  CHECK(from_vector(std::vector<float>{}, {0, 4}).shape() == Shape{0, 4});
  CHECK_THROWS_AS(from_vector(std::vector<float>{1, 2, 3}, {2, 2}), ShapeError);
  CHECK_THROWS_WITH(
      from_vector(std::vector<float>{1, 2, 3}, {2, 2}),
      Catch::Contains("from_vector") && Catch::Contains("[2, 2]") && Catch::Contains("3"));
}

TEST_CASE("from_vector: {} is 0-d, -1 is inferred, a count that does not fit throws",
          "[core][factory]") {
  // As torch.tensor(values).view(shape): view([]) of one value is 0-d, view(-1) is 1-D.
  Tensor s = from_vector(std::vector<float>{2.5f}, {});
  CHECK(s.dim() == 0);
  CHECK(s.shape() == Shape{});
  CHECK(s.numel() == 1);
  CHECK(s.item<float>() == 2.5f);
  Tensor sd = from_vector(std::vector<double>{-1.0}, {}, TensorOptions().dtype(kInt32));
  CHECK(sd.dim() == 0);
  CHECK(sd.item<std::int32_t>() == -1);
  // The default is 1-D of every value, also for one value.
  CHECK(from_vector(std::vector<float>{7}).shape() == Shape{1});
  CHECK(from_vector(std::vector<float>{1, 2, 3}, {-1}).shape() == Shape{3});
  CHECK(from_vector(std::vector<float>(6, 0.f), {-1, 2}).shape() == Shape{3, 2});
  CHECK(from_vector(std::vector<float>(6, 0.f), {2, -1, 1}).shape() == Shape{2, 3, 1});
  // Errors name the op, the shape and the count, and say what {} means.
  CHECK_THROWS_AS(from_vector(std::vector<float>{1, 2, 3}, {}), ShapeError);
  CHECK_THROWS_WITH(from_vector(std::vector<float>{1, 2, 3}, {}),
                    Catch::Contains("from_vector") && Catch::Contains("[]") &&
                        Catch::Contains("got 3") && Catch::Contains("0-d"));
  CHECK_THROWS_AS(from_vector(std::vector<float>{}, {}), ShapeError);
  CHECK_THROWS_WITH(
      from_vector(std::vector<float>(5, 0.f), {-1, 2}),
      Catch::Contains("from_vector") && Catch::Contains("[-1, 2]") && Catch::Contains("5 values"));
  CHECK_THROWS_AS(from_vector(std::vector<float>(4, 0.f), {-1, -1}), ShapeError);
  CHECK_THROWS_AS(from_vector(std::vector<float>(4, 0.f), {-2, -2}), ShapeError);
  CHECK_THROWS_AS(from_vector(std::vector<float>{}, {0, -1}), ShapeError);
}

TEST_CASE("tensor({..}) is 1-D float32", "[core][factory]") {
  Tensor t = tensor({1, 2.5, -3});
  CHECK(t.dtype() == kFloat32);
  CHECK(t.shape() == Shape{3});
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2.5f, -3});
  CHECK(tensor({1, 2}, TensorOptions().dtype(kInt64)).dtype() == kInt64);
  CHECK(tensor({}).numel() == 0);
}

TEST_CASE("Philox generator: known answers, offsets and reseeding", "[core][factory][random]") {
  // Random123's known-answer vector for philox4x32-10 with counter 0 and key 0.
  Generator g0(0);
  CHECK(g0.block(0) ==
        std::array<std::uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  // Counter = low 64 bits, key = seed (reference values from a direct port of Random123).
  Generator g1(0x123456789abcdef0ULL);
  CHECK(g1.block(0x0fedcba987654321ULL) ==
        std::array<std::uint32_t, 4>{0x867fcb7eu, 0xdcba5f15u, 0x0f06ab31u, 0x4aec478au});

  Generator g(42);
  CHECK(g.seed() == 42);
  CHECK(g.offset() == 0);
  CHECK(g.reserve(5) == 0);
  CHECK(g.offset() == 2);  // 5 words -> 2 blocks of 4
  CHECK(g.reserve(4) == 2);
  CHECK(g.offset() == 3);
  g.manual_seed(7);
  CHECK(g.seed() == 7);
  CHECK(g.offset() == 0);

  Generator a(5), b(5);
  std::vector<std::uint32_t> wa, wb;
  for (int i = 0; i < 8; ++i) {
    wa.push_back(a.next_u32());
    wb.push_back(b.next_u32());
  }
  CHECK(wa == wb);
  CHECK(std::set<std::uint32_t>(wa.begin(), wa.end()).size() == wa.size());
  for (int i = 0; i < 100; ++i) {
    double d = a.next_double();
    CHECK(d >= 0.0);
    CHECK(d < 1.0);
  }
  // The state is (seed, offset): restoring the offset replays the stream.
  Generator r(9);
  (void)rand({10}, r);
  const std::uint64_t off = r.offset();
  Tensor x1 = randn({7}, r);
  r.set_offset(off);
  Tensor x2 = randn({7}, r);
  CHECK(x1.to_vector<float>() == x2.to_vector<float>());

  CHECK(uint_to_unit_float(0xffffffffu) < 1.0f);
  CHECK(uint_to_unit_float(0) == 0.0f);
  CHECK(uint_to_unit_double(0xffffffffu, 0xffffffffu) < 1.0);
}

TEST_CASE("random tensors: same seed same values, different seeds differ",
          "[core][factory][random]") {
  using Make = std::function<Tensor(Generator&)>;
  const std::vector<std::pair<std::string, Make>> makers = {
      {"rand",
       [](Generator& g) {
         return rand({5, 7}, g);
       }},
      {"rand f64", [](Generator& g) { return rand({33}, g, TensorOptions().dtype(kFloat64)); }},
      {"randn",
       [](Generator& g) {
         return randn({5, 7}, g);
       }},
      {"randn f64", [](Generator& g) { return randn({9}, g, TensorOptions().dtype(kFloat64)); }},
      {"uniform", [](Generator& g) { return uniform({31}, -2, 5, g); }},
      {"normal", [](Generator& g) { return normal({31}, 1, 3, g); }},
      {"randint", [](Generator& g) { return randint(-50, 50, {40}, g); }},
      {"bernoulli", [](Generator& g) { return bernoulli({64}, 0.5, g); }},
      {"randperm", [](Generator& g) { return randperm(40, g); }},
  };
  for (const auto& [name, make] : makers) {
    INFO(name);
    Generator a(123), b(123), c(124);
    Tensor ta = make(a), tb = make(b), tc = make(c);
    CHECK(ta.to_vector<double>() == tb.to_vector<double>());
    CHECK(ta.to_vector<double>() != tc.to_vector<double>());
    CHECK(a.offset() == b.offset());
    CHECK(a.offset() > 0);
    // The next draw from the same generator differs from the first.
    CHECK(make(a).to_vector<double>() != ta.to_vector<double>());
  }
}

TEST_CASE("random tensors: values in range and loose moments", "[core][factory][random]") {
  Generator gen(2024);
  const std::int64_t n = 100000;

  std::vector<double> u = rand({n}, gen).to_vector<double>();
  CHECK(*std::min_element(u.begin(), u.end()) >= 0.0);
  CHECK(*std::max_element(u.begin(), u.end()) < 1.0);
  CHECK(mean_of(u) == Approx(0.5).margin(0.01));
  CHECK(std_of(u) == Approx(std::sqrt(1.0 / 12)).margin(0.01));

  std::vector<double> u64 = rand({n}, gen, TensorOptions().dtype(kFloat64)).to_vector<double>();
  CHECK(*std::max_element(u64.begin(), u64.end()) < 1.0);
  CHECK(mean_of(u64) == Approx(0.5).margin(0.01));

  std::vector<double> un = uniform({n}, -3, 5, gen).to_vector<double>();
  CHECK(*std::min_element(un.begin(), un.end()) >= -3.0);
  CHECK(*std::max_element(un.begin(), un.end()) <= 5.0);
  CHECK(mean_of(un) == Approx(1.0).margin(0.05));

  for (DType dt : {kFloat32, kFloat64}) {
    INFO(dtype_name(dt));
    Tensor z = randn({n}, gen, TensorOptions().dtype(dt));
    CHECK(z.dtype() == dt);
    std::vector<double> v = z.to_vector<double>();
    CHECK(mean_of(v) == Approx(0.0).margin(0.02));
    CHECK(std_of(v) == Approx(1.0).margin(0.02));
    const auto within2 =
        std::count_if(v.begin(), v.end(), [](double x) { return std::fabs(x) < 2.0; });
    CHECK(static_cast<double>(within2) / n == Approx(0.9545).margin(0.01));
    CHECK(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }));
  }
  std::vector<double> nv = normal({n}, 3, 0.5, gen).to_vector<double>();
  CHECK(mean_of(nv) == Approx(3.0).margin(0.02));
  CHECK(std_of(nv) == Approx(0.5).margin(0.02));
  CHECK(normal({5}, 2, 0, gen).to_vector<double>() == std::vector<double>(5, 2.0));

  Tensor ri = randint(-3, 4, {10000}, gen);
  CHECK(ri.dtype() == kInt64);
  std::vector<std::int64_t> rv = ri.to_vector<std::int64_t>();
  std::set<std::int64_t> seen(rv.begin(), rv.end());
  CHECK(seen == std::set<std::int64_t>{-3, -2, -1, 0, 1, 2, 3});
  // Wide int64 ranges keep every bit (no detour through double).
  std::vector<std::int64_t> wide = randint(0, 1LL << 62, {1000}, gen).to_vector<std::int64_t>();
  CHECK(std::any_of(wide.begin(), wide.end(), [](std::int64_t v) { return v % 2 == 1; }));
  CHECK(std::all_of(wide.begin(), wide.end(), [](std::int64_t v) { return v >= 0; }));
  std::vector<std::int64_t> full_range =
      randint(std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
              {64}, gen)
          .to_vector<std::int64_t>();
  CHECK(std::any_of(full_range.begin(), full_range.end(), [](std::int64_t v) { return v < 0; }));
  CHECK(randint(0, 256, {100}, gen, TensorOptions().dtype(kUInt8)).dtype() == kUInt8);
  const std::vector<std::int16_t> r16 =
      randint(-32768, 32768, {1000}, gen, TensorOptions().dtype(kInt16)).to_vector<std::int16_t>();
  CHECK(std::any_of(r16.begin(), r16.end(), [](std::int16_t v) { return v < -16384; }));
  CHECK(std::any_of(r16.begin(), r16.end(), [](std::int16_t v) { return v > 16384; }));
  CHECK_THROWS_WITH(randint(0, 40000, {2}, gen, TensorOptions().dtype(kInt16)),
                    Catch::Contains("randint") && Catch::Contains("int16"));
  CHECK(randint(0, 5, {10}, gen, TensorOptions().dtype(kFloat32)).dtype() == kFloat32);

  std::vector<double> bern = bernoulli({n}, 0.3, gen).to_vector<double>();
  CHECK(std::all_of(bern.begin(), bern.end(), [](double v) { return v == 0.0 || v == 1.0; }));
  CHECK(mean_of(bern) == Approx(0.3).margin(0.01));
  CHECK(bernoulli({100}, 0.0, gen).to_vector<double>() == std::vector<double>(100, 0.0));
  CHECK(bernoulli({100}, 1.0, gen).to_vector<double>() == std::vector<double>(100, 1.0));

  Tensor p = randperm(1000, gen);
  CHECK(p.dtype() == kInt64);
  std::vector<std::int64_t> pv = p.to_vector<std::int64_t>();
  std::vector<std::int64_t> sorted = pv;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::int64_t> expected(1000);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(sorted == expected);
  CHECK(pv != expected);
  CHECK(randperm(0, gen).numel() == 0);
  CHECK(randperm(1, gen).to_vector<std::int64_t>() == std::vector<std::int64_t>{0});
}

TEST_CASE("random factories reject bad arguments", "[core][factory][random]") {
  Generator gen(1);
  CHECK_THROWS_AS(uniform({2}, 3, 1, gen), ValueError);
  CHECK_THROWS_WITH(uniform({2}, 3, 1, gen), Catch::Contains("uniform"));
  CHECK_THROWS_AS(rand({2}, gen, TensorOptions().dtype(kInt32)), DTypeError);
  CHECK_THROWS_AS(normal({2}, 0, -1, gen), ValueError);
  CHECK_THROWS_AS(randn({2}, gen, TensorOptions().dtype(kInt64)), DTypeError);
  CHECK_THROWS_WITH(randint(5, 5, {2}, gen), Catch::Contains("randint"));
  CHECK_THROWS_AS(randint(0, 300, {2}, gen, TensorOptions().dtype(kUInt8)), ValueError);
  CHECK_THROWS_WITH(randint(-1, 10, {2}, gen, TensorOptions().dtype(kUInt8)),
                    Catch::Contains("randint") && Catch::Contains("uint8"));
  CHECK_THROWS_AS(bernoulli({2}, 1.5, gen), ValueError);
  CHECK_THROWS_AS(bernoulli({2}, -0.1, gen), ValueError);
  CHECK_THROWS_AS(randperm(-1, gen), ValueError);
  CHECK_THROWS_AS(rand({-1}, gen), ShapeError);
}

TEST_CASE("random and filled tensors do not depend on the OpenMP thread count",
          "[core][factory][random]") {
  // Large enough that generate() splits the work across threads.
  const Shape shape{3, 40001};
  auto draw = [&] {
    Generator gen(77);
    std::vector<double> all;
    for (Tensor t :
         {rand(shape, gen), randn(shape, gen, TensorOptions().dtype(kFloat64)),
          uniform(shape, -1, 1, gen), normal(shape, 2, 3, gen), randint(0, 1000, shape, gen),
          bernoulli(shape, 0.25, gen), arange(0, 120003 * 0.5, 0.5)}) {
      std::vector<double> v = t.to_vector<double>();
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  std::vector<double> one = with_threads(1, draw);
  std::vector<double> two = with_threads(2, draw);
  std::vector<double> three = with_threads(3, draw);
  REQUIRE(one.size() == two.size());
  CHECK(one == two);
  CHECK(one == three);
}
