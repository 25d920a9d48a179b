// IDX files: round trips of every IDX type (plain and gzip), the big-endian layout, and IOError
// for missing, truncated and corrupt files.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "core/factory.h"
#include "nn/data/gzip.h"
#include "nn/data/idx.h"
#include "support/fixtures.h"
#include "support/scratch_files.h"
#include "support/test_paths.h"

using namespace qgrad;
using namespace qgrad::data;
using qgrad_test::read_bytes;
using qgrad_test::require_equal;
using qgrad_test::TempDir;
using qgrad_test::write_bytes;

namespace {

std::string bytes_of(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(static_cast<char>(b));
  return s;
}

}  // namespace

TEST_CASE("idx: every type round-trips through plain and gzip files") {
  TempDir dir;
  Generator gen(1);
  const std::vector<Tensor> tensors = {
      from_vector<std::uint8_t>({0, 1, 127, 128, 255, 42}, {2, 3}),
      from_vector<std::int8_t>({-128, -1, 0, 1, 127}),
      from_vector<std::int32_t>({-2147483647 - 1, -1, 0, 65536, 2147483647}, {5, 1}),
      randn({3, 4, 2}, gen),
      randn({7}, gen, TensorOptions().dtype(kFloat64)),
      zeros({0, 28, 28}, TensorOptions().dtype(kUInt8)),
  };
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    for (bool gz : {false, true}) {
      const std::string path = dir.file("t" + std::to_string(i) + (gz ? ".gz" : ""));
      write_idx(path, tensors[i], gz);
      REQUIRE(is_gzip(read_bytes(path)) == gz);
      require_equal(read_idx(path), tensors[i], path);
    }
  }
  // Content decides, not the name: gzip data in a file without .gz, plain data named .gz.
  write_idx(dir.file("plain.gz"), tensors[0], false);
  require_equal(read_idx(dir.file("plain.gz")), tensors[0]);
  REQUIRE_THROWS_AS(write_idx(dir.file("x"), zeros({2}, TensorOptions().dtype(kInt64))),
                    DTypeError);
  REQUIRE_THROWS_AS(write_idx(dir.file("x"), scalar_tensor(1.0)), ShapeError);
}

TEST_CASE("idx: data is big-endian and 16-bit values widen to int32") {
  // int32 [2]: 0x01020304, -2
  Tensor a =
      parse_idx(bytes_of({0, 0, 0x0C, 1, 0, 0, 0, 2, 1, 2, 3, 4, 0xFF, 0xFF, 0xFF, 0xFE}), "mem");
  REQUIRE(a.dtype() == kInt32);
  REQUIRE(a.to_vector<std::int32_t>() == std::vector<std::int32_t>{0x01020304, -2});
  // short [3]: 1, -2, 300
  Tensor s = parse_idx(bytes_of({0, 0, 0x0B, 1, 0, 0, 0, 3, 0, 1, 0xFF, 0xFE, 0x01, 0x2C}), "mem");
  REQUIRE(s.dtype() == kInt32);
  REQUIRE(s.to_vector<std::int32_t>() == std::vector<std::int32_t>{1, -2, 300});
  // float [1] = 1.5f = 0x3FC00000
  Tensor f = parse_idx(bytes_of({0, 0, 0x0D, 1, 0, 0, 0, 1, 0x3F, 0xC0, 0, 0}), "mem");
  REQUIRE(f.to_vector<float>() == std::vector<float>{1.5f});
  // ubyte [2, 1, 2] (3-D as MNIST images)
  Tensor u =
      parse_idx(bytes_of({0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 9, 8, 7, 6}), "mem");
  REQUIRE(u.shape() == Shape{2, 1, 2});
  REQUIRE(u.to_vector<std::uint8_t>() == std::vector<std::uint8_t>{9, 8, 7, 6});
}

TEST_CASE("idx: missing, truncated and corrupt files are IOErrors naming the file") {
  TempDir dir;
  const std::string path = dir.file("bad-idx");
  auto expect_error = [&](const std::string& bytes, const std::string& fragment) {
    write_bytes(path, bytes);
    INFO("expecting: " << fragment);
    REQUIRE_THROWS_AS(read_idx(path), IOError);
    REQUIRE_THROWS_WITH(read_idx(path), Catch::Contains(path) && Catch::Contains(fragment));
  };
  const std::string good = bytes_of({0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6});
  REQUIRE(parse_idx(good, "mem").shape() == Shape{2, 3});

  expect_error("", "too short");
  expect_error(bytes_of({1, 0, 8, 1, 0, 0, 0, 1, 5}), "bad magic");
  expect_error(bytes_of({0, 0, 7, 1, 0, 0, 0, 1, 5}), "unknown IDX type code 0x7");
  expect_error(bytes_of({0, 0, 8, 0}), "0 dimensions");
  expect_error(good.substr(0, 10), "ends inside the dimension list");
  expect_error(good.substr(0, good.size() - 1), "(truncated)");
  expect_error(good + "x", "(trailing bytes)");

  const std::string gz = gzip(good);
  expect_error(gz.substr(0, gz.size() / 2), "truncated");
  std::string corrupt = gz;
  for (std::size_t i = 10; i < corrupt.size() - 8; ++i)
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5A);
  expect_error(corrupt, "corrupt");
  expect_error(gz + "garbage", "trailing garbage");
  // Two concatenated gzip members are one stream.
  write_bytes(path, gzip(good.substr(0, 9)) + gzip(good.substr(9)));
  REQUIRE(read_idx(path).shape() == Shape{2, 3});

  REQUIRE_THROWS_AS(read_idx(dir.file("nope")), IOError);
  REQUIRE_THROWS_WITH(read_idx(dir.file("nope")), Catch::Contains("cannot open"));
}

TEST_CASE("idx: dims whose strides overflow are refused even when one of them is 0") {
  // [0, 2^32-1, 2^32-1]: 0 elements, but the strides overflow int64. This file used to load
  // (and MNIST training ran on 0 images).
  const std::string hidden =
      bytes_of({0, 0, 8, 3, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF});
  REQUIRE_THROWS_AS(parse_idx(hidden, "hidden.idx"), IOError);
  REQUIRE_THROWS_WITH(parse_idx(hidden, "hidden.idx"), Catch::Contains("hidden.idx") &&
                                                           Catch::Contains("too large") &&
                                                           Catch::Contains("overflows int64"));
  REQUIRE_THROWS_WITH(parse_idx(gzip(hidden), "hidden.idx.gz"), Catch::Contains("too large"));
  // Large but representable empty shapes still load.
  REQUIRE(parse_idx(bytes_of({0, 0, 8, 3, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0}), "mem").shape() ==
          Shape{0, 65536, 65536});
}

TEST_CASE("idx: gzip data is inflated no further than the header declares") {
  const std::string good = bytes_of({0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6});
  // The reader stops where asked.
  {
    const std::string big = gzip(std::string(4 << 20, 'z'));
    GunzipReader z(big, "big.gz");
    std::string out;
    REQUIRE(z.read(out, 10) == 10);
    REQUIRE(z.total_out() == 10);
    REQUIRE(out == std::string(10, 'z'));
    REQUIRE_FALSE(z.at_end());
    REQUIRE(z.total_out() == 11);
    REQUIRE(z.read(out, std::size_t(1) << 40) == (4u << 20) - 11);
    REQUIRE(z.at_end());
  }
  // A header declaring 6 bytes followed by 1 GiB of zeros in 64 members of 16 MiB each (about
  // 1 MB compressed): refused after the declared payload and a one-byte probe, instead of
  // inflating the gigabyte first.
  const std::string zeros16 = gzip(std::string(16 << 20, '\0'));
  std::string bomb = gzip(good);
  for (int i = 0; i < 64; ++i) bomb += zeros16;
  REQUIRE_THROWS_AS(parse_idx(bomb, "bomb.gz"), IOError);
  REQUIRE_THROWS_WITH(
      parse_idx(bomb, "bomb.gz"),
      Catch::Contains("bomb.gz") && Catch::Contains("decompressed data has more (trailing bytes)"));
  // Trailing bytes inside one member, missing payload, a stream cut inside the header.
  REQUIRE_THROWS_WITH(parse_idx(gzip(good + "x"), "t.gz"), Catch::Contains("(trailing bytes)"));
  REQUIRE_THROWS_WITH(parse_idx(gzip(good.substr(0, 15)), "s.gz"),
                      Catch::Contains("decompressed data has 3") && Catch::Contains("(truncated)"));
  REQUIRE_THROWS_WITH(parse_idx(gzip(good.substr(0, 6)), "h.gz"),
                      Catch::Contains("ends inside the dimension list"));
  REQUIRE_THROWS_WITH(parse_idx(gzip(good.substr(0, 2)), "m.gz"),
                      Catch::Contains("too short for the 4-byte IDX magic"));
  const std::string gz = gzip(good);
  REQUIRE_THROWS_WITH(parse_idx(gz.substr(0, gz.size() - 4), "cut.gz"),
                      Catch::Contains("cut.gz") && Catch::Contains("truncated"));
  // An empty member after the data is not data.
  require_equal(parse_idx(gz + gzip(""), "two.gz"), parse_idx(good, "plain"));
  // gunzip keeps its whole-stream form, with an optional bound.
  REQUIRE(gunzip(gz, "g") == good);
  REQUIRE_THROWS_WITH(gunzip(gz, "g", 17), Catch::Contains("more than 17 bytes"));
  REQUIRE(gunzip(gz, "g", 18) == good);
}

TEST_CASE("idx: read_idx reports a directory as one") {
  TempDir dir;
  REQUIRE_THROWS_AS(read_idx(dir.path()), IOError);
  REQUIRE_THROWS_WITH(read_idx(dir.path()),
                      Catch::Contains("read_idx") && Catch::Contains("is a directory"));
}

TEST_CASE("idx: the fuzz seeds (tests/fuzz/corpus/gen_seeds.py) are valid files") {
  const std::string dir = qgrad_test::source_dir() + "/tests/fuzz/corpus/";
  for (const char* name : {"images_ubyte.idx", "labels_ubyte.idx", "sbyte.idx", "short.idx",
                           "int.idx", "float.idx", "double.idx", "empty.idx"}) {
    INFO(name);
    const Tensor plain = read_idx(dir + "idx/seed_" + name);
    require_equal(read_idx(dir + "idx_gzip/seed_" + name + ".gz"), plain);
    require_equal(read_idx(dir + "idx_gzip/seed_" + name), plain);
  }
  REQUIRE(read_idx(dir + "idx_gzip/seed_two_members.idx.gz").shape() == Shape{2, 3, 3});
  REQUIRE(read_idx(dir + "idx/seed_short.idx").to_vector<std::int32_t>() ==
          std::vector<std::int32_t>{1, -2, 300});
}
