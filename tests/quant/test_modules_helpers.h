// Shared helpers of the quantizer-module tests (tests/quant/test_modules*.cpp): fixture loading
// from tests/fixtures/quant_modules, bitwise and tolerant comparisons, state-dict equality, a
// checkpoint round trip through a temporary safetensors file.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/npy.h"
#include "core/tensor.h"
#include "nn/module.h"
#include "nn/serialize/checkpoint.h"
#include "quant/modules/lazy_buffer.h"
#include "support/scratch_files.h"
#include "support/test_paths.h"

namespace qgrad_qm_test {

inline qgrad::Tensor load_fixture(const std::string& name) {
  return qgrad::load_npy(qgrad_test::fixture_dir() + "/quant_modules/" + name + ".npy");
}

inline std::uint64_t bits_of(double v, bool f32) {
  if (f32) {
    const float f = static_cast<float>(v);
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  std::uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

// Same number of elements and identical values bit for bit (compared as the float32 bits when
// either side is float32, as doubles otherwise; NaN == NaN of the same bits).
inline void require_bitwise(const qgrad::Tensor& got, const qgrad::Tensor& want,
                            const std::string& what) {
  INFO(what);
  REQUIRE(got.numel() == want.numel());
  const bool f32 = got.dtype() == qgrad::kFloat32 || want.dtype() == qgrad::kFloat32;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO(what << " element " << i << ": got " << g[i] << " want " << w[i]);
    REQUIRE(bits_of(g[i], f32) == bits_of(w[i], f32));
  }
}

// Every |got - want| <= atol + rtol * |want|.
inline void require_close(const qgrad::Tensor& got, const qgrad::Tensor& want, double rtol,
                          double atol, const std::string& what) {
  INFO(what);
  REQUIRE(got.numel() == want.numel());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO(what << " element " << i << ": got " << g[i] << " want " << w[i]);
    REQUIRE(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]));
  }
}

// Same keys in the same order, same shapes, dtypes and bit-identical values (NaN included).
inline void require_same_state(const qgrad::TensorDict& a, const qgrad::TensorDict& b) {
  REQUIRE(a.keys() == b.keys());
  for (const auto& it : a) {
    const qgrad::Tensor& other = b.at(it.key);
    INFO("state entry " << it.key);
    REQUIRE(it.value.shape() == other.shape());
    REQUIRE(it.value.dtype() == other.dtype());
    require_bitwise(it.value, other, it.key);
  }
}

using qgrad_test::TempDir;

// Saves `from` in a checkpoint file, loads it into `into` (resizing lazily sized buffers) and
// checks both state dicts are identical.
inline void checkpoint_round_trip(const qgrad::nn::Module& from, qgrad::nn::Module& into) {
  TempDir dir;
  const std::string path = dir.file("quant.safetensors");
  qgrad::serialize::save_checkpoint(path, from, nullptr, nullptr, 1, 2);
  const qgrad::serialize::Checkpoint ck = qgrad::serialize::load_checkpoint(path);
  qgrad::quant::load_quant_state_dict(into, ck.model);
  require_same_state(into.state_dict(), from.state_dict());
}

}  // namespace qgrad_qm_test
