// Tests of the reductions: PyTorch golden fixtures (any axes, keepdim, negative dims, views, ties
// in amax/amin and max/min(dim), NaN, integer sums), float64 gradchecks, the kernel's loop
// shapes and thread splits against plain loops, integer and empty-input semantics, and errors.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/autograd/gradcheck.h"
#include "core/factory.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "support/golden.h"
#include "support/require_gradcheck.h"

using namespace qgrad;
using golden::GoldenCase;
using qgrad_test::require_gradcheck;

namespace {

const std::vector<GoldenCase>& reduce_cases() {
  using V = std::vector<Tensor>;
  static const std::vector<GoldenCase> cases = {
      {"sum_all", [](const V& v) { return sum(v[0]); }},
      {"sum_dim1", [](const V& v) { return sum(v[0], {1}); }},
      {"sum_dims02_keepdim",
       [](const V& v) {
         return sum(v[0], {0, 2}, true);
       }},
      {"sum_negdim", [](const V& v) { return sum(v[0], {-1}); }},
      {"sum_dim0_outer", [](const V& v) { return sum(v[0], {0}); }},
      {"sum_transposed", [](const V& v) { return sum(v[0].t(), {0}); }},
      {"sum_sliced",
       [](const V& v) {
         return sum(v[0].slice(1, 0, 6, 2), {0, 2});
       }},
      {"mean_dim1_keepdim", [](const V& v) { return mean(v[0], {1}, true); }},
      {"mean_all", [](const V& v) { return mean(v[0]); }},
      {"mean_dims_neg",
       [](const V& v) {
         return mean(v[0], {-1, 0});
       }},
      {"var_dim1", [](const V& v) { return var(v[0], {1}); }},
      {"var_dims02_keepdim_pop",
       [](const V& v) {
         return var(v[0], {0, 2}, 0, true);
       }},
      {"var_all", [](const V& v) { return var(v[0]); }},
      {"var_transposed", [](const V& v) { return var(v[0].t(), {1}); }},
      {"amax_ties_dim1", [](const V& v) { return amax(v[0], {1}); }},
      {"amin_ties_dims02_keepdim",
       [](const V& v) {
         return amin(v[0], {0, 2}, true);
       }},
      {"amax_ties_all",
       [](const V& v) {
         return amax(v[0], {0, 1});
       }},
      {"amax_nan", [](const V& v) { return amax(v[0], {1}); }},
      {"amin_nan_dims01",
       [](const V& v) {
         return amin(v[0], {0, 1});
       }},
      {"amax_dim0_outer", [](const V& v) { return amax(v[0], {0}); }},
      {"max_dim_ties_values", [](const V& v) { return max(v[0], 1).first; }},
      {"max_dim_ties_indices", [](const V& v) { return max(v[0], 1).second; }},
      {"min_dim_neg_keepdim_values", [](const V& v) { return min(v[0], -1, true).first; }},
      {"min_dim_neg_keepdim_indices", [](const V& v) { return min(v[0], -1, true).second; }},
      {"max_dim0_outer_values", [](const V& v) { return max(v[0], 0).first; }},
      {"max_dim0_outer_indices", [](const V& v) { return max(v[0], 0).second; }},
      {"max_dim_nan_values", [](const V& v) { return max(v[0], 1).first; }},
      {"max_dim_nan_indices", [](const V& v) { return max(v[0], 1).second; }},
      {"argmax_flat_ties", [](const V& v) { return argmax(v[0]); }},
      {"argmin_dim0_ties", [](const V& v) { return argmin(v[0], 0); }},
      {"argmax_transposed", [](const V& v) { return argmax(v[0].t(), 1); }},
      {"argmin_nan", [](const V& v) { return argmin(v[0], 1); }},
      {"int_sum_dim1", [](const V& v) { return sum(v[0], {1}); }},
      {"int8_sum_all", [](const V& v) { return sum(v[0]); }},
      {"int_amax_dim0", [](const V& v) { return amax(v[0], {0}); }},
  };
  return cases;
}
const bool registered = golden::register_cases(reduce_cases());

Tensor leaf(const Shape& shape, Generator& gen) {
  return randn(shape, gen, TensorOptions().dtype(kFloat64)).set_requires_grad(true);
}

// Sets the OpenMP thread count for a scope, so the thread-split paths run on any machine.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

// Plain-loop reference over a row-major 3-d array [A, B, C] reducing the flagged axes:
// sum (double), max/min (NaN wins), argmax (first index of the max or of the first NaN).
struct Reference {
  std::vector<double> sum, max, min;
  std::vector<std::int64_t> argmax;
};
Reference reference(const std::vector<float>& v, const Shape& shape, std::array<bool, 3> red) {
  const std::int64_t A = shape[0], B = shape[1], C = shape[2];
  const std::int64_t KA = red[0] ? 1 : A, KB = red[1] ? 1 : B, KC = red[2] ? 1 : C;
  const std::size_t K = static_cast<std::size_t>(KA * KB * KC);
  Reference r{std::vector<double>(K, 0.0),
              std::vector<double>(K, -std::numeric_limits<double>::infinity()),
              std::vector<double>(K, std::numeric_limits<double>::infinity()),
              std::vector<std::int64_t>(K, -1)};
  std::vector<std::int64_t> counter(K, 0);
  for (std::int64_t a = 0; a < A; ++a)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t c = 0; c < C; ++c) {
        const double x = v[static_cast<std::size_t>((a * B + b) * C + c)];
        const std::size_t k = static_cast<std::size_t>(
            ((red[0] ? 0 : a) * KB + (red[1] ? 0 : b)) * KC + (red[2] ? 0 : c));
        const std::int64_t idx = counter[k]++;  // row-major order within the reduced dims
        r.sum[k] += x;
        const bool was_nan = std::isnan(r.max[k]);
        if (!was_nan && (std::isnan(x) || x > r.max[k])) {
          r.max[k] = x;
          r.argmax[k] = idx;
        }
        if (!std::isnan(r.min[k]) && (std::isnan(x) || x < r.min[k])) r.min[k] = x;
      }
  return r;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double rtol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", expected " << want[i]);
    if (std::isnan(want[i])) {
      REQUIRE(std::isnan(got[i]));
    } else {
      REQUIRE(std::fabs(got[i] - want[i]) <= rtol * std::fabs(want[i]) + 1e-5);
    }
  }
}

}  // namespace

TEST_CASE("reductions match PyTorch fixtures", "[reduce][golden]") {
  REQUIRE(registered);
  for (const GoldenCase& c : reduce_cases()) {
    DYNAMIC_SECTION(c.name) {
      golden::run_golden(c);
    }
  }
}

TEST_CASE("reductions pass gradcheck", "[reduce][gradcheck]") {
  Generator gen(41);
  const Shape s = {3, 5, 7};
  SECTION("sum and mean over any axes") {
    require_gradcheck([](const Tensor& x) { return sum(x); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return sum(x, {0, 2}, true); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return sum(x, {-2}); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return mean(x, {1}); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return mean(x, {-1, 0}, true); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return sum(x.transpose(0, 2), {1}); }, leaf(s, gen));
  }
  SECTION("var with corrections") {
    require_gradcheck([](const Tensor& x) { return var(x, {1}); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return var(x, {0, 2}, 0, true); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return var(x, {}, 2); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return var(x.t(), {0}); }, leaf({4, 6}, gen));
  }
  SECTION("amax/amin and max/min over a dim (distinct values)") {
    require_gradcheck([](const Tensor& x) { return amax(x, {1}); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return amin(x, {0, 2}, true); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return amax(x); }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return max(x, 2).first; }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return min(x, -3, true).first; }, leaf(s, gen));
    require_gradcheck([](const Tensor& x) { return max(x.t(), 0).first; }, leaf({5, 4}, gen));
  }
}

TEST_CASE("reduction kernels match plain loops for every loop shape and thread split",
          "[reduce][parallel]") {
  Generator gen(7);
  struct Layout {
    Shape shape;
    std::array<bool, 3> red;
  };
  // Inner and outer loop shapes, many and few outputs (thread split by output or by range).
  const std::vector<Layout> layouts = {
      {{1, 300, 257}, {false, true, false}},  // sum over rows: outer, split range
      {{1, 300, 257}, {false, false, true}},  // inner, many outputs
      {{1, 300, 257}, {true, true, true}},    // full, split range
      {{1, 3, 40000}, {false, false, true}},  // inner, 3 long outputs
      {{1, 40000, 3}, {false, true, false}},  // outer with 3 outputs per row
      {{64, 70, 33}, {true, false, true}},    // blocked: reduced dims around a kept one
      {{64, 3, 500}, {true, false, true}},    // blocked, 3 outputs: split range
      {{64, 70, 33}, {false, true, false}},   // outer, many outputs
      {{20, 3000, 2}, {true, true, false}},   // outer, 2 outputs
  };
  for (int threads : {1, 2, 3}) {
    ThreadCount tc(threads);
    for (const Layout& l : layouts) {
      INFO(threads << " threads, shape " << shape_str(l.shape) << ", reduced " << l.red[0]
                   << l.red[1] << l.red[2]);
      // Few distinct values: ties everywhere, so argmax must report first indices.
      Tensor x = sub(randint(0, 50, l.shape, gen, TensorOptions().dtype(kFloat32)), 25.0);
      const std::vector<float> xv = x.to_vector<float>();
      const Reference ref = reference(xv, l.shape, l.red);
      Shape dims;
      for (std::int64_t d = 0; d < 3; ++d)
        if (l.red[d]) dims.push_back(d);
      check_close(sum(x, dims).to_vector<float>(), ref.sum, 1e-6);
      check_close(amax(x, dims).to_vector<float>(), ref.max, 0);
      check_close(amin(x, dims).to_vector<float>(), ref.min, 0);
      if (dims.size() == 1) {
        CHECK(argmax(x, dims[0]).to_vector<std::int64_t>() == ref.argmax);
        CHECK(max(x, dims[0]).second.to_vector<std::int64_t>() == ref.argmax);
      }
      // The same through a transposed view (other strides, same values per output).
      Tensor xt = x.transpose(0, 2).contiguous().transpose(0, 2);
      check_close(sum(xt, dims).to_vector<float>(), ref.sum, 1e-6);
      if (dims.size() == 1) CHECK(argmax(xt, dims[0]).to_vector<std::int64_t>() == ref.argmax);
    }
  }
}

TEST_CASE("large reductions: NaN, first index across thread chunks, variance", "[reduce]") {
  ThreadCount tc(2);
  const std::int64_t n = 100000;
  Tensor x = zeros({n});
  float* p = x.data_ptr<float>();
  p[10] = 5.0f;
  p[n - 10] = 5.0f;  // a tie in the second thread's half
  CHECK(argmax(x).item<std::int64_t>() == 10);
  p[n - 5] = std::numeric_limits<float>::quiet_NaN();
  p[n - 3] = std::numeric_limits<float>::quiet_NaN();
  CHECK(argmax(x).item<std::int64_t>() == n - 5);
  CHECK(argmin(x).item<std::int64_t>() == n - 5);
  CHECK(std::isnan(amax(x).item<double>()));
  CHECK(std::isnan(amin(x).item<double>()));
  CHECK(std::isnan(max(x, 0).first.item<double>()));

  // Variance of data with a large mean: two passes in double keep it exact enough.
  Generator gen(2);
  Tensor y = add(randn({4, 50000}, gen), 1000.0);
  const std::vector<float> yv = y.to_vector<float>();
  std::vector<double> want(4);
  for (std::size_t r = 0; r < 4; ++r) {
    double m = 0, ss = 0;
    for (std::size_t i = 0; i < 50000; ++i) m += yv[r * 50000 + i];
    m /= 50000;
    for (std::size_t i = 0; i < 50000; ++i) ss += (yv[r * 50000 + i] - m) * (yv[r * 50000 + i] - m);
    want[r] = ss / 49999;
  }
  check_close(var(y, {1}).to_vector<float>(), want, 1e-5);
  check_close(var(y.t(), {0}).to_vector<float>(), want, 1e-5);
}

TEST_CASE("integer reductions", "[reduce][int]") {
  const std::int64_t big = std::int64_t{1} << 62;
  Tensor x = from_vector<std::int64_t>({big, 3, big, -big, 1});
  // Exact beyond 2^53 (read through data_ptr: item<int64_t>() goes through a double).
  CHECK(sum(x).data_ptr<std::int64_t>()[0] == big + 4);
  Tensor i32 = full({3, 4}, 2147483647, TensorOptions().dtype(kInt32));
  Tensor s = sum(i32, {1});
  CHECK(s.dtype() == kInt64);
  CHECK(s.to_vector<std::int64_t>() == std::vector<std::int64_t>(3, 4 * 2147483647LL));
  Tensor u8 = full({300}, 255, TensorOptions().dtype(kUInt8));
  CHECK(sum(u8).item<std::int64_t>() == 300 * 255);
  Tensor v = from_vector<std::int32_t>({3, -7, 3, 9, 9}, {5});
  CHECK(amax(v).dtype() == kInt32);
  CHECK(amax(v).item<std::int64_t>() == 9);
  CHECK(amin(v).item<std::int64_t>() == -7);
  CHECK(argmax(v).item<std::int64_t>() == 3);
  CHECK(max(v, 0).second.item<std::int64_t>() == 3);
}

TEST_CASE("reductions over empty and 0-d inputs", "[reduce]") {
  Tensor e = zeros({0, 3});
  CHECK(sum(e, {0}).to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK(sum(e).item<double>() == 0.0);
  CHECK(std::isnan(mean(e).item<double>()));
  CHECK(amax(zeros({3, 0}), {0}).shape() == Shape{0});
  CHECK(std::isnan(var(ones({1})).item<double>()));                  // 0 / 0
  CHECK(std::isinf(var(tensor({1.0, 3.0}), {}, 3).item<double>()));  // divisor max(0, N - 3)
  Tensor s = scalar_tensor(4.0).set_requires_grad(true);
  Tensor t = sum(s);
  CHECK(t.dim() == 0);
  CHECK(t.item<double>() == 4.0);
  auto mx = max(s, 0);
  CHECK(mx.first.item<double>() == 4.0);
  CHECK(mx.second.item<std::int64_t>() == 0);
  CHECK(argmax(s).item<std::int64_t>() == 0);
  mean(s).backward();
  CHECK(s.grad().item<double>() == 1.0);
}

TEST_CASE("reductions reject bad arguments with errors naming the op", "[reduce][errors]") {
  Tensor x = ones({2, 3, 4});
  REQUIRE_THROWS_AS(sum(x, {3}), IndexError);
  REQUIRE_THROWS_WITH(sum(x, {3}), Catch::Contains("sum") && Catch::Contains("3"));
  REQUIRE_THROWS_AS(mean(x, {-4}), IndexError);
  REQUIRE_THROWS_WITH(mean(x, {-4}), Catch::Contains("mean"));
  REQUIRE_THROWS_AS(var(x, {5}), IndexError);
  REQUIRE_THROWS_AS(amax(x, {3}), IndexError);
  REQUIRE_THROWS_WITH(amax(x, {3}), Catch::Contains("amax"));
  REQUIRE_THROWS_AS(max(x, 3), IndexError);
  REQUIRE_THROWS_WITH(max(x, 3), Catch::Contains("max"));
  REQUIRE_THROWS_AS(argmin(x, -4), IndexError);
  REQUIRE_THROWS_WITH(argmin(x, -4), Catch::Contains("argmin"));

  REQUIRE_THROWS_AS(sum(x, {1, -2}), ValueError);  // -2 is dim 1 again
  REQUIRE_THROWS_WITH(sum(x, {1, -2}), Catch::Contains("sum") && Catch::Contains("more than once"));
  REQUIRE_THROWS_AS(amin(x, {0, 0}), ValueError);
  REQUIRE_THROWS_WITH(var(x, {2, 2}), Catch::Contains("var"));

  REQUIRE_THROWS_AS(amax(zeros({3, 0}), {1}), ValueError);
  REQUIRE_THROWS_WITH(amax(zeros({3, 0}), {1}),
                      Catch::Contains("amax") && Catch::Contains("[3, 0]"));
  REQUIRE_THROWS_AS(amin(zeros({0})), ValueError);
  REQUIRE_THROWS_AS(max(zeros({3, 0}), 1), ValueError);
  REQUIRE_THROWS_AS(argmax(zeros({0, 2})), ValueError);
  REQUIRE_THROWS_WITH(argmax(zeros({0, 2})), Catch::Contains("argmax"));

  Tensor i = ones({3}, TensorOptions().dtype(kInt32));
  REQUIRE_THROWS_AS(mean(i), DTypeError);
  REQUIRE_THROWS_WITH(mean(i), Catch::Contains("mean") && Catch::Contains("int32"));
  REQUIRE_THROWS_AS(var(i), DTypeError);
  REQUIRE_THROWS_WITH(var(i), Catch::Contains("var"));
  REQUIRE_THROWS_AS(var(x, {0}, -1), ValueError);
  REQUIRE_THROWS_AS(sum(Tensor()), ValueError);
}
