// Writers of CIFAR-10 / CIFAR-100 binary files for tests (no real CIFAR data is available on the
// build machines): records in the real format, 1 label byte (CIFAR-10) or coarse + fine label
// bytes (CIFAR-100) and 3072 image bytes in CHW order. The images are learnable: class k has a
// bright 8x8 square at a position depending on k in channel k % 3, on noise.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "support/scratch_files.h"

namespace qgrad_test {

// Image bytes of record i with label k: deterministic noise in [0, 64) plus the class's square.
inline void cifar_image(std::int64_t i, int k, unsigned char* img) {
  std::uint32_t s = static_cast<std::uint32_t>(i) * 2654435761u + 12345u;
  for (int p = 0; p < 3072; ++p) {
    s = s * 1664525u + 1013904223u;
    img[p] = static_cast<unsigned char>((s >> 24) % 64);
  }
  const int r0 = 2 + (k / 5 % 2) * 16, c0 = 1 + (k % 5) * 6, ch = k % 3;
  for (int r = r0; r < r0 + 8; ++r)
    for (int c = c0; c < c0 + 8 && c < 32; ++c) img[ch * 1024 + r * 32 + c] = 230;
}

// The bytes of n CIFAR-10 records with labels (first + i) % 10.
inline std::string cifar10_records(std::int64_t n, std::int64_t first = 0) {
  std::string out(static_cast<std::size_t>(n) * 3073, '\0');
  for (std::int64_t i = 0; i < n; ++i) {
    auto* rec = reinterpret_cast<unsigned char*>(&out[static_cast<std::size_t>(i) * 3073]);
    const int k = static_cast<int>((first + i) % 10);
    rec[0] = static_cast<unsigned char>(k);
    cifar_image(first + i, k, rec + 1);
  }
  return out;
}

// The bytes of n CIFAR-100 records: fine label (first + i) % 100, coarse label fine / 5.
inline std::string cifar100_records(std::int64_t n, std::int64_t first = 0) {
  std::string out(static_cast<std::size_t>(n) * 3074, '\0');
  for (std::int64_t i = 0; i < n; ++i) {
    auto* rec = reinterpret_cast<unsigned char*>(&out[static_cast<std::size_t>(i) * 3074]);
    const int fine = static_cast<int>((first + i) % 100);
    rec[0] = static_cast<unsigned char>(fine / 5);
    rec[1] = static_cast<unsigned char>(fine);
    cifar_image(first + i, fine % 10, rec + 2);
  }
  return out;
}

// A CIFAR-10 folder: data_batch_1..5.bin of per_batch records each, test_batch.bin of n_test.
inline void write_synthetic_cifar10(const std::string& dir, std::int64_t per_batch,
                                    std::int64_t n_test) {
  std::filesystem::create_directories(dir);
  for (int b = 1; b <= 5; ++b)
    write_bytes(dir + "/data_batch_" + std::to_string(b) + ".bin",
                cifar10_records(per_batch, (b - 1) * per_batch));
  write_bytes(dir + "/test_batch.bin", cifar10_records(n_test, 1000000));
}

// A CIFAR-100 folder: train.bin and test.bin.
inline void write_synthetic_cifar100(const std::string& dir, std::int64_t n_train,
                                     std::int64_t n_test) {
  std::filesystem::create_directories(dir);
  write_bytes(dir + "/train.bin", cifar100_records(n_train));
  write_bytes(dir + "/test.bin", cifar100_records(n_test, 1000000));
}

}  // namespace qgrad_test
