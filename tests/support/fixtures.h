// Shared test helpers for golden fixtures and tensor comparison: paths and loading of the .npy
// files that tests/fixtures/gen_*.py write under tests/fixtures, tolerance comparison of
// tensors (with explicit rules for infinities, NaN and scale-relative absolute tolerance, since
// the op families need different ones), exact and bitwise float comparison.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/json_parse.h"
#include "core/npy.h"
#include "core/tensor.h"
#include "support/test_paths.h"

namespace qgrad_test {

// tests/fixtures/<dir>/<file>.
inline std::string fixture_path(const std::string& dir, const std::string& file) {
  return qgrad_test::fixture_dir() + "/" + dir + "/" + file;
}

// tests/fixtures/<dir>/<name>.npy, loaded.
inline qgrad::Tensor load_fixture(const std::string& dir, const std::string& name) {
  return qgrad::load_npy(fixture_path(dir, name + ".npy"));
}

// tests/fixtures/<dir>/<file>, parsed as JSON (the cases.json the generators write).
inline nlohmann::json read_fixture_json(const std::string& dir, const std::string& file) {
  std::ifstream in(fixture_path(dir, file));
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return qgrad::parse_json(ss.str(), file);
}

// Whether tests/fixtures/<dir>/<name>.npy exists (optional fixtures).
inline bool has_fixture(const std::string& dir, const std::string& name) {
  return std::ifstream(fixture_path(dir, name + ".npy")).good();
}

// Which pairs beyond |got - want| <= atol' + rtol |want| count as matching, and what atol' is.
struct MatchRules {
  bool equal = false;       // got == want (so equal infinities match)
  bool both_nan = false;    // NaN where NaN is expected
  bool scale_atol = false;  // atol' = atol * max(1, max |want|) (sums grow with their length)
};
inline constexpr MatchRules kPlain{false, false, false};
inline constexpr MatchRules kEqualMatches{true, false, false};
inline constexpr MatchRules kSpecialsMatch{true, true, false};
inline constexpr MatchRules kScaledAtol{false, false, true};

// Every got[i] matches want[i] under `rules`; reports the count and the first mismatch.
inline void require_close_values(const std::vector<double>& got, const std::vector<double>& want,
                                 double rtol, double atol, const std::string& what = "",
                                 MatchRules rules = kPlain) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  double scale = 1.0;
  if (rules.scale_atol)
    for (double v : want) scale = std::max(scale, std::abs(v));
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    const bool ok = std::abs(g - w) <= atol * scale + rtol * std::abs(w) ||
                    (rules.equal && g == w) || (rules.both_nan && std::isnan(g) && std::isnan(w));
    if (!ok && bad++ == 0) first = i;
  }
  INFO(bad << " of " << got.size() << " elements differ; first at flat index " << first << ": got "
           << (got.empty() ? 0.0 : got[first]) << " want " << (want.empty() ? 0.0 : want[first]));
  REQUIRE(bad == 0);
}

// Same shape and every element matching under `rules`.
inline void require_close(const qgrad::Tensor& got, const qgrad::Tensor& want, double rtol,
                          double atol, const std::string& what = "", MatchRules rules = kPlain) {
  INFO(what << ": got shape " << qgrad::shape_str(got.shape()) << ", want "
            << qgrad::shape_str(want.shape()));
  REQUIRE(got.defined());
  REQUIRE(got.shape() == want.shape());
  require_close_values(got.to_vector<double>(), want.to_vector<double>(), rtol, atol, what, rules);
}

// Same shape, dtype and values.
inline void require_equal(const qgrad::Tensor& a, const qgrad::Tensor& b,
                          const std::string& what = "") {
  INFO(what);
  REQUIRE(a.shape() == b.shape());
  REQUIRE(a.dtype() == b.dtype());
  REQUIRE(a.to_vector<double>() == b.to_vector<double>());
}

inline std::uint32_t float_bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Bitwise equality (so -0.0 != +0.0), reporting the count and the first mismatch.
inline void require_bitwise(const std::vector<float>& got, const std::vector<float>& want,
                            const std::string& what = "") {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, first = got.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (float_bits(got[i]) != float_bits(want[i]) && bad++ == 0) first = i;
  INFO(what << ": " << bad << " of " << got.size() << " differ; first at " << first << ": got "
            << (first < got.size() ? got[first] : 0.f) << " want "
            << (first < got.size() ? want[first] : 0.f));
  REQUIRE(bad == 0);
}

// Bitwise equality of two tensors of any dtype, compared as float64 (which holds every float32
// and every integer of the masks and zero points exactly), element count checked.
inline void require_bitwise_f64(const qgrad::Tensor& got, const qgrad::Tensor& want) {
  const std::vector<double> u = got.to_vector<double>(), v = want.to_vector<double>();
  REQUIRE(u.size() == v.size());
  CHECK(std::memcmp(u.data(), v.data(), u.size() * sizeof(double)) == 0);
}

// Bitwise equality of two float32 tensors of the same shape.
inline void require_bitwise(const qgrad::Tensor& got, const qgrad::Tensor& want,
                            const std::string& what = "") {
  REQUIRE(got.shape() == want.shape());
  require_bitwise(got.to_vector<float>(), want.to_vector<float>(), what);
}

// Bitwise equal, or both NaN (any payload).
inline bool same_bits_or_nan(float a, float b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

// CHECKs (non-fatal) same_bits_or_nan element by element.
inline void check_bits_or_nan(const std::vector<float>& got, const std::vector<float>& expect) {
  REQUIRE(got.size() == expect.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("index " << i << " got " << got[i] << " expected " << expect[i]);
    CHECK(same_bits_or_nan(got[i], expect[i]));
  }
}

}  // namespace qgrad_test
