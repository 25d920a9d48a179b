// CIFAR-10/100 datasets from synthetic files in the real binary format: loading, both label
// kinds, the archive sub-folder, and every validation error naming the file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>

#include "core/error.h"
#include "nn/data/cifar.h"
#include "support/cifar_files.h"
#include "support/scratch_files.h"

using namespace qgrad;
using namespace qgrad::data;
using qgrad_test::TempDir;

TEST_CASE("cifar: CIFAR-10 files load as float [3, 32, 32] images in [0, 1] and int64 labels") {
  TempDir dir;
  qgrad_test::write_synthetic_cifar10(dir.file(""), 4, 3);
  REQUIRE(cifar_files_present(dir.file(""), CIFARVariant::CIFAR10));
  REQUIRE_FALSE(cifar_files_present(dir.file(""), CIFARVariant::CIFAR100));
  CIFAR train(dir.file(""), Split::Train);
  CIFAR test(dir.file(""), Split::Test);
  REQUIRE(train.size() == 20);  // five batches of 4, in order
  REQUIRE(test.size() == 3);
  REQUIRE(train.num_classes() == 10);
  REQUIRE(train.images().shape() == Shape{20, 3, 32, 32});
  REQUIRE(train.targets().dtype() == kInt64);
  const auto labels = train.targets().to_vector<std::int64_t>();
  for (std::size_t i = 0; i < 20; ++i) REQUIRE(labels[i] == static_cast<std::int64_t>(i % 10));
  const std::string bytes = qgrad_test::cifar10_records(20);
  Example e = train.get(13);
  REQUIRE(e.data.shape() == Shape{3, 32, 32});
  REQUIRE(e.data.dtype() == kFloat32);
  REQUIRE(e.target.dim() == 0);
  REQUIRE(e.target.item<std::int64_t>() == 3);
  const auto v = e.data.to_vector<float>();
  for (std::size_t p = 0; p < 3072; ++p)
    REQUIRE(v[p] ==
            static_cast<float>(static_cast<unsigned char>(bytes[13 * 3073 + 1 + p])) / 255.0f);
  REQUIRE_THROWS_AS(train.get(20), IndexError);
}

TEST_CASE("cifar: CIFAR-100 reads fine labels by default and coarse ones on request") {
  TempDir dir;
  qgrad_test::write_synthetic_cifar100(dir.file("cifar-100-binary"), 7, 2);
  // The folder holding the extracted archive works too.
  CIFAR fine(dir.file(""), Split::Train, CIFARVariant::CIFAR100);
  CIFAR coarse(dir.file(""), Split::Train, CIFARVariant::CIFAR100, CIFARLabel::Coarse);
  REQUIRE(fine.num_classes() == 100);
  REQUIRE(coarse.num_classes() == 20);
  REQUIRE(fine.size() == 7);
  REQUIRE(fine.get(6).target.item<std::int64_t>() == 6);
  REQUIRE(coarse.get(6).target.item<std::int64_t>() == 1);
  CIFAR test(dir.file("cifar-100-binary"), Split::Test, CIFARVariant::CIFAR100);
  REQUIRE(test.size() == 2);
  REQUIRE(test.get(0).target.item<std::int64_t>() == 1000000 % 100);
}

TEST_CASE("cifar: missing files name the files, the archive and the folder") {
  TempDir dir;
  const std::string msg = qgrad_test::io_error_of([&] { CIFAR(dir.file(""), Split::Train); });
  CHECK_THAT(msg, Catch::Contains("data_batch_1.bin") && Catch::Contains("data_batch_5.bin") &&
                      Catch::Contains("cifar-10-binary.tar.gz") &&
                      Catch::Contains("cifar-10-batches-bin") && Catch::Contains(dir.file("")));
  // One batch missing is enough to fail.
  qgrad_test::write_synthetic_cifar10(dir.file(""), 2, 2);
  std::filesystem::remove(dir.file("data_batch_4.bin"));
  CHECK_THAT(qgrad_test::io_error_of([&] { CIFAR(dir.file(""), Split::Train); }),
             Catch::Contains("data_batch_4.bin"));
  CHECK(CIFAR(dir.file(""), Split::Test).size() == 2);
  CHECK_THAT(
      qgrad_test::io_error_of([&] { CIFAR(dir.file(""), Split::Test, CIFARVariant::CIFAR100); }),
      Catch::Contains("test.bin") && Catch::Contains("cifar-100-binary.tar.gz"));
}

TEST_CASE("cifar: sizes that are not whole records and out-of-range labels are errors") {
  TempDir dir;
  qgrad_test::write_synthetic_cifar10(dir.file(""), 2, 2);
  const std::string test = dir.file("test_batch.bin");
  qgrad_test::write_bytes(test, qgrad_test::cifar10_records(2).substr(0, 3073 + 100));
  CHECK_THAT(qgrad_test::io_error_of([&] { CIFAR(dir.file(""), Split::Test); }),
             Catch::Contains(test) && Catch::Contains("3173 bytes") &&
                 Catch::Contains("3073-byte records"));
  qgrad_test::write_bytes(test, "");
  CHECK_THAT(qgrad_test::io_error_of([&] { CIFAR(dir.file(""), Split::Test); }),
             Catch::Contains(test) && Catch::Contains("empty"));
  std::string bad = qgrad_test::cifar10_records(3);
  bad[2 * 3073] = 10;
  qgrad_test::write_bytes(test, bad);
  CHECK_THAT(
      qgrad_test::io_error_of([&] { CIFAR(dir.file(""), Split::Test); }),
      Catch::Contains(test) && Catch::Contains("label 10 of record 2") && Catch::Contains("0..9"));

  // CIFAR-100: the fine label is checked against 100, the coarse one against 20; the CIFAR-10
  // record size is not a CIFAR-100 one.
  std::string c100 = qgrad_test::cifar100_records(2);
  c100[3074 + 1] = 100;
  CHECK_THAT(qgrad_test::io_error_of(
                 [&] { parse_cifar(c100, CIFARVariant::CIFAR100, CIFARLabel::Fine, "t.bin"); }),
             Catch::Contains("fine label 100 of record 1") && Catch::Contains("0..99"));
  CHECK_NOTHROW(parse_cifar(c100, CIFARVariant::CIFAR100, CIFARLabel::Coarse, "t.bin"));
  c100[0] = 20;
  CHECK_THAT(qgrad_test::io_error_of(
                 [&] { parse_cifar(c100, CIFARVariant::CIFAR100, CIFARLabel::Coarse, "t.bin"); }),
             Catch::Contains("coarse label 20 of record 0") && Catch::Contains("0..19"));
  CHECK_THAT(qgrad_test::io_error_of([&] {
               parse_cifar(qgrad_test::cifar10_records(2), CIFARVariant::CIFAR100, CIFARLabel::Fine,
                           "t.bin");
             }),
             Catch::Contains("3074-byte records"));
}
