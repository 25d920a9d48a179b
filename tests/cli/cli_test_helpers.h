// Helpers for the qgrad CLI tests: a self-deleting temporary directory and a small synthetic
// MNIST-format dataset (IDX files) that a CNN can learn within a few batches, so end-to-end
// runs take a second instead of needing the real Fashion-MNIST.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/generator.h"
#include "nn/data/idx.h"

namespace qgrad_cli_test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "qgrad_cli_XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
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

}  // namespace qgrad_cli_test
