// Helpers for the qgrad CLI tests: the self-deleting TempDir of support/scratch_files.h, a small
// synthetic MNIST-format dataset (IDX files) that a CNN can learn within a few batches, so
// end-to-end runs take a second instead of needing the real Fashion-MNIST, and bitwise comparisons
// of checkpoints (for the resume tests).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command_dispatch.h"
#include "cli/train_command.h"
#include "cli/train_config.h"
#include "cli/usage_error.h"
#include "core/factory.h"
#include "core/generator.h"
#include "nn/data/idx.h"
#include "nn/serialize/checkpoint.h"
#include "support/scratch_files.h"

namespace qgrad_cli_test {

using qgrad_test::TempDir;

// 100 000 nested arrays: nlohmann's recursive copy and dump() overflowed the stack on it.
inline const std::string kDeepJson = std::string(100000, '[') + std::string(100000, ']');

// The message of the UsageError that parsing a config of `data` as its "data" section throws, or
// "(no UsageError)" (the data-format tests check each key's error).
inline std::string data_config_error(const nlohmann::json& data) {
  try {
    qgrad::cli::parse_train_config(nlohmann::json{{"data", data}});
  } catch (const qgrad::cli::UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Same keys, shapes, dtypes and bytes.
inline void require_same_tensors(const qgrad::TensorDict& a, const qgrad::TensorDict& b,
                                 const std::string& what) {
  using namespace qgrad;
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() > 0);
  for (const auto& it : a) {
    INFO(what << " " << it.key);
    const Tensor* other = b.find(it.key);
    REQUIRE(other != nullptr);
    REQUIRE(it.value.shape() == other->shape());
    REQUIRE(it.value.dtype() == other->dtype());
    const Tensor x = it.value.contiguous(), y = other->contiguous();
    const std::size_t bytes = static_cast<std::size_t>(x.numel()) * dtype_size(x.dtype());
    REQUIRE(std::memcmp(x.raw_data(), y.raw_data(), bytes) == 0);
  }
}

// Two checkpoints of qgrad train hold the same run state: counters, model (quantizer state
// included), optimiser and extra tensors, all bitwise.
inline void require_same_checkpoint(const std::string& a_path, const std::string& b_path) {
  using namespace qgrad;
  const serialize::Checkpoint a = serialize::load_checkpoint(a_path);
  const serialize::Checkpoint b = serialize::load_checkpoint(b_path);
  CHECK(a.epoch == b.epoch);
  CHECK(a.step == b.step);
  require_same_tensors(a.model, b.model, "model");
  require_same_tensors(a.optimizer, b.optimizer, "optimizer");
  // train.time_s differs between runs; everything else in extra (loader position, partial
  // sums, best accuracy) must match.
  TensorDict ea = a.extra, eb = b.extra;
  ea.erase("train.time_s");
  eb.erase("train.time_s");
  require_same_tensors(ea, eb, "extra");
}

// Images of class k: background noise in [0, 64) plus a bright 6x6 square whose position
// depends on k (two rows of five positions); labels 0..9 in turn.
inline void write_split(const std::string& dir, const std::string& prefix, std::int64_t n,
                        std::uint64_t seed) {
  using namespace qgrad;
  Generator gen(seed);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(n) * 28 * 28);
  std::vector<std::uint8_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const int k = static_cast<int>(i % 10);
    labels[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(k);
    std::uint8_t* img = pixels.data() + i * 28 * 28;
    for (int p = 0; p < 28 * 28; ++p) img[p] = static_cast<std::uint8_t>(gen.next_u32() % 64);
    const int r0 = 3 + (k / 5) * 13, c0 = 1 + (k % 5) * 5;
    for (int r = r0; r < r0 + 6; ++r)
      for (int c = c0; c < c0 + 6 && c < 28; ++c)
        img[r * 28 + c] = static_cast<std::uint8_t>(200 + gen.next_u32() % 56);
  }
  data::write_idx(dir + "/" + prefix + "-images-idx3-ubyte",
                  from_vector<std::uint8_t>(pixels, {n, 28, 28}));
  data::write_idx(dir + "/" + prefix + "-labels-idx1-ubyte", from_vector<std::uint8_t>(labels, {n}),
                  /*gzip=*/true);
}

inline void write_synthetic_mnist(const std::string& dir, std::int64_t n_train = 256,
                                  std::int64_t n_test = 100) {
  std::filesystem::create_directories(dir);
  write_split(dir, "train", n_train, 1);
  write_split(dir, "t10k", n_test, 2);
}

// A qgrad command line's exit status and what it wrote to stdout and stderr.
struct CommandRun {
  int status;
  std::string out, err;
};
inline CommandRun run_qgrad(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int status = qgrad::cli::run_command_line(args, out, err);
  return {status, out.str(), err.str()};
}

// A tiny `qgrad train` run of `model` on the synthetic set in tmp/data: batch 32, test batches of
// 64, 2 threads, no progress output, into tmp/<name>; `quant` null trains float. Returns
// tmp/<name>/last.safetensors.
inline std::string train_tiny(const TempDir& tmp, const std::string& name,
                              const nlohmann::json& quant, std::int64_t epochs = 1,
                              const std::string& model = "lenet5bn") {
  nlohmann::json j{{"model", model},
                   {"epochs", epochs},
                   {"batch_size", 32},
                   {"eval_batch_size", 64},
                   {"threads", 2},
                   {"data", {{"dir", tmp.file("data")}}},
                   {"output", {{"progress", "off"}, {"dir", tmp.file(name)}}}};
  if (!quant.is_null()) j["quant"] = quant;
  std::ostringstream out;
  qgrad::cli::run_training(qgrad::cli::parse_train_config(j), out);
  return tmp.file(name + "/last.safetensors");
}

}  // namespace qgrad_cli_test
