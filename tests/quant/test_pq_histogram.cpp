// HistogramCalibrator against pytorch_quantization's own HistogramCalibrator, run by
// tests/fixtures/gen_pq_histogram.py on PyTorch 1.13's CPU (torch_hist path): after every batch
// the edges (float32) and counts must be the reference's bit for bit, and so must every amax
// (entropy, mse, percentile with several percentiles, start bins and strides). The cases are
// listed in pq_histogram/cases.txt: one and several batches, growing ranges, values exactly on
// edges, all-zero batches, skip_zeros, exact CDF ties, and a later batch with NaN (which the
// reference silently drops and qgrad rejects). Also unit checks of the three PyTorch ops
// reproduced in histogram_amax.h.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/npy.h"
#include "quant/nvidia/calibrator.h"
#include "quant/nvidia/histogram_amax.h"
#include "support/fixtures.h"

using namespace qgrad;
using namespace qgrad::nvidia;
using qgrad_test::fixture_path;
using qgrad_test::float_bits;
using qgrad_test::load_fixture;

namespace {

const char* kDir = "pq_histogram";

// Number of positions where the float32 bits differ (sizes must match).
std::size_t bit_mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return std::max(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) bad += float_bits(got[i]) != float_bits(want[i]);
  return bad;
}

}  // namespace

TEST_CASE("pq histogram: edges, counts and amax bit for bit with pytorch_quantization",
          "[quant][nvidia][pq]") {
  std::ifstream manifest(fixture_path(kDir, "cases.txt"));
  REQUIRE(manifest.good());
  std::string line;
  std::string name;
  HistogramCalibrator cal;
  int cases = 0, amaxes = 0;
  while (std::getline(manifest, line)) {
    std::istringstream in(line);
    std::string kind;
    in >> kind;
    if (kind == "case") {
      HistogramCalibratorOptions o;
      int is_unsigned = 0, skip = 0, batches = 0;
      in >> name >> o.num_bins >> o.num_bits >> is_unsigned >> skip >> batches;
      o.is_unsigned = is_unsigned != 0;
      o.skip_zeros = skip != 0;
      cal = HistogramCalibrator(o);
      ++cases;
      for (int b = 0; b < batches; ++b) {
        const std::string sb = std::to_string(b);
        INFO("case " << name << " batch " << b);
        const Tensor x = load_fixture(kDir, name + "_x" + sb);
        bool has_nan = false;
        for (double v : x.to(kFloat64).to_vector<double>()) has_nan = has_nan || std::isnan(v);
        if (has_nan) {
          // The reference drops a later batch's NaN elements without growing; qgrad rejects.
          CHECK_THROWS_AS(cal.collect(x), ValueError);
          continue;
        }
        cal.collect(x);
        const Tensor edges = cal.edges();
        CHECK(edges.dtype() == kFloat32);
        CHECK(cal.counts().dtype() == kInt64);
        const std::vector<float> want_e =
            load_fixture(kDir, name + "_edges" + sb).to_vector<float>();
        const std::vector<std::int64_t> want_c =
            load_fixture(kDir, name + "_counts" + sb).to_vector<std::int64_t>();
        CHECK(edges.numel() == static_cast<std::int64_t>(want_e.size()));
        CHECK(bit_mismatches(edges.to_vector<float>(), want_e) == 0);
        CHECK(cal.counts().to_vector<std::int64_t>() == want_c);
      }
    } else if (kind == "amax") {
      std::string case_name, method;
      int k = 0;
      HistogramAmaxOptions a;
      in >> case_name >> k >> method >> a.start_bin >> a.stride >> a.percentile;
      REQUIRE(case_name == name);
      INFO("case " << name << " amax " << k << ": " << method << " start_bin " << a.start_bin
                   << " stride " << a.stride << " percentile " << a.percentile);
      const float want =
          load_fixture(kDir, name + "_amax" + std::to_string(k)).to(kFloat32).item<float>();
      const float got = cal.compute_amax(method, a).to(kFloat32).item<float>();
      CHECK(float_bits(got) == float_bits(want));
      ++amaxes;
    }
  }
  CHECK(cases >= 10);
  CHECK(amaxes >= 60);
}

TEST_CASE("pq histogram: torch.linspace / arange / histc float32 arithmetic", "[quant][nvidia]") {
  // linspace: exact ends, both halves, tails of every length.
  for (std::int64_t steps : {2, 3, 17, 31, 2049}) {
    const std::vector<float> e = torch_linspace_f32(5.3f, steps);
    REQUIRE(e.size() == static_cast<std::size_t>(steps));
    CHECK(e.front() == 0.0f);
    CHECK(e.back() == 5.3f);
    for (std::size_t i = 1; i < e.size(); ++i) CHECK(e[i] >= e[i - 1]);
  }
  // arange: ceil(end / step) elements.
  CHECK(torch_arange_f32(21.0, 1.0).size() == 21);
  CHECK(torch_arange_f32(20.5, 1.0).size() == 21);
  CHECK(torch_arange_f32(20.5, 1.0).back() == 20.0f);
  // histc: the top edge goes to the last bin; outside and NaN are dropped.
  CHECK(torch_histc_bin(8.0f, 8.0f, 8) == 7);
  CHECK(torch_histc_bin(1.0f, 8.0f, 8) == 1);
  CHECK(torch_histc_bin(8.5f, 8.0f, 8) == -1);
  CHECK(torch_histc_bin(std::nanf(""), 8.0f, 8) == -1);
  REQUIRE_THROWS_AS(torch_linspace_f32(1.0f, 1), ValueError);
  REQUIRE_THROWS_AS(torch_arange_f32(1.0, 0.0), ValueError);
  // edges()/counts() before any data: empty.
  HistogramCalibrator cal;
  CHECK(cal.edges().numel() == 0);
  CHECK(cal.counts().numel() == 0);
}
