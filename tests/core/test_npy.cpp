// .npy files: save/load round trips for every dtype and for 0-d, empty and non-contiguous
// tensors; files written by NumPy (tests/fixtures/gen_core.py: every dtype, bool, version 2.0
// header) load with the right values and our own output is byte-identical to NumPy's; broken
// files (missing, truncated, bad magic, unsupported dtype, Fortran order, corrupt header) throw
// IOError naming the file; atomic writes leave no temporary file behind.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/test_paths.h"
#include "tensor_testing.h"

using namespace qgrad;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) {
  return qgrad_test::fixture_dir() + "/core/" + name;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

// A fresh directory under the build tree, removed with its contents at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::path(qgrad_test::binary_dir()) / ("core_npy_tmp_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
};

// A v1.0 .npy file with the given header dict and data bytes (header padded as NumPy does).
std::string make_npy(const std::string& dict, const std::string& data, char major = 1) {
  std::string header = dict;
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(major);
  out.push_back('\0');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + data;
}

// Writes `bytes` as `name` and checks that load_npy throws an IOError naming the file and
// `detail`, and that parse_npy on the same bytes throws one too.
void expect_npy_error(const TempDir& dir, const std::string& name, const std::string& bytes,
                      const std::string& detail) {
  INFO(name);
  const std::string path = dir.file(name);
  write_bytes(path, bytes);
  CHECK_THROWS_AS(load_npy(path), IOError);
  CHECK_THROWS_WITH(load_npy(path), Catch::Contains(name) && Catch::Contains(detail));
  CHECK_THROWS_AS(parse_npy(bytes, name), IOError);
}

}  // namespace

TEST_CASE("npy round trip for every dtype and for 0-d, empty and non-contiguous tensors",
          "[core][npy]") {
  TempDir dir;
  const std::vector<double> vals = {0, 1, -1, 7, 100, -100};
  for (DType dt : {kFloat32, kFloat64, kInt8, kUInt8, kInt16, kInt32, kInt64}) {
    INFO(dtype_name(dt));
    std::vector<double> v = vals;
    if (dt == kUInt8)
      for (double& x : v) x = std::abs(x);
    Tensor t = from_vector(v, {2, 3}, TensorOptions().dtype(dt));
    const std::string path = dir.file(std::string("rt_") + dtype_name(dt) + ".npy");
    save_npy(path, t);
    Tensor back = load_npy(path);
    CHECK(back.dtype() == dt);
    CHECK(back.shape() == Shape{2, 3});
    CHECK(back.to_vector<double>() == v);

    Tensor scalar = scalar_tensor(5, TensorOptions().dtype(dt));
    save_npy(path, scalar);
    Tensor sback = load_npy(path);
    CHECK(sback.dim() == 0);
    CHECK(sback.dtype() == dt);
    CHECK(sback.item<double>() == 5.0);

    for (const Shape& sh : {Shape{0}, Shape{0, 3}, Shape{2, 0, 4}}) {
      save_npy(path, empty(sh, TensorOptions().dtype(dt)));
      Tensor eback = load_npy(path);
      CHECK(eback.shape() == sh);
      CHECK(eback.dtype() == dt);
    }
  }
  // Exact float values and int64 beyond double precision survive.
  Tensor f = from_vector(std::vector<float>{0.1f, -3.4e38f, 1e-45f});
  save_npy(dir.file("f.npy"), f);
  CHECK(load_npy(dir.file("f.npy")).to_vector<float>() == f.to_vector<float>());
  Tensor big = from_vector(std::vector<std::int64_t>{(1LL << 62) + 1, -(1LL << 62) - 3});
  save_npy(dir.file("big.npy"), big);
  CHECK(load_npy(dir.file("big.npy")).to_vector<std::int64_t>() == big.to_vector<std::int64_t>());
  // A non-contiguous view is saved in its logical (C) order; a tensor with a graph too.
  Tensor nc = qgrad::testing::iota({3, 4}).t().slice(0, 0, 4, 2);  // [2, 3]
  save_npy(dir.file("nc.npy"), nc);
  Tensor ncb = load_npy(dir.file("nc.npy"));
  CHECK(ncb.shape() == Shape{2, 3});
  CHECK(ncb.to_vector<double>() == std::vector<double>{0, 4, 8, 2, 6, 10});
  Tensor rg = mul(qgrad::testing::leaf({2, 2}), 2.0);
  save_npy(dir.file("rg.npy"), rg);
  CHECK_FALSE(load_npy(dir.file("rg.npy")).requires_grad());
  CHECK(load_npy(dir.file("rg.npy")).to_vector<double>() == rg.to_vector<double>());
}

TEST_CASE("npy files written by NumPy load with the right values", "[core][npy]") {
  Tensor f = load_npy(fixture("f32_2x3.npy"));
  CHECK(f.dtype() == kFloat32);
  CHECK(f.shape() == Shape{2, 3});
  CHECK(f.is_contiguous());
  CHECK(f.to_vector<float>() == std::vector<float>{-1, -0.5f, 0, 0.5f, 1, 1.5f});

  Tensor d = load_npy(fixture("f64_0d.npy"));
  CHECK(d.dtype() == kFloat64);
  CHECK(d.dim() == 0);
  CHECK(d.item<double>() == 3.25);

  CHECK(load_npy(fixture("i8.npy")).to_vector<std::int8_t>() ==
        std::vector<std::int8_t>{-128, -1, 0, 127});
  CHECK(load_npy(fixture("u8.npy")).to_vector<std::uint8_t>() ==
        std::vector<std::uint8_t>{0, 1, 255});
  Tensor i16 = load_npy(fixture("i16_2x2.npy"));
  CHECK(i16.dtype() == kInt16);
  CHECK(i16.shape() == Shape{2, 2});
  CHECK(i16.to_vector<std::int16_t>() == std::vector<std::int16_t>{-32768, -1, 0, 32767});
  CHECK(i16.data_ptr<std::int16_t>()[3] == 32767);
  Tensor i32 = load_npy(fixture("i32_3x1.npy"));
  CHECK(i32.dtype() == kInt32);
  CHECK(i32.shape() == Shape{3, 1});
  CHECK(i32.to_vector<std::int32_t>() == std::vector<std::int32_t>{-7, 0, 2147483647});
  CHECK(load_npy(fixture("i64.npy")).to_vector<std::int64_t>() ==
        std::vector<std::int64_t>{-(1LL << 62), 0, (1LL << 62) + 1});

  Tensor b = load_npy(fixture("bool_2x3.npy"));
  CHECK(b.dtype() == kUInt8);  // bool loads as uint8 0/1
  CHECK(b.shape() == Shape{2, 3});
  CHECK(b.to_vector<std::uint8_t>() == std::vector<std::uint8_t>{1, 0, 1, 0, 0, 1});

  Tensor e = load_npy(fixture("f32_empty_0x3.npy"));
  CHECK(e.shape() == Shape{0, 3});
  CHECK(e.dtype() == kFloat32);

  CHECK(load_npy(fixture("f64_3x2_from_transpose.npy")).to_vector<double>() ==
        std::vector<double>{0, 3, 1, 4, 2, 5});

  Tensor v2 = load_npy(fixture("f32_v2.npy"));
  CHECK(v2.to_vector<float>() == std::vector<float>{1.5f, -2.5f, 4.0f});
}

TEST_CASE("save_npy writes the same bytes as NumPy", "[core][npy]") {
  TempDir dir;
  for (const char* name : {"f32_2x3.npy", "f64_0d.npy", "i8.npy", "u8.npy", "i16_2x2.npy",
                           "i32_3x1.npy", "i64.npy", "f32_empty_0x3.npy"}) {
    INFO(name);
    const std::string out = dir.file(name);
    save_npy(out, load_npy(fixture(name)));
    CHECK(read_bytes(out) == read_bytes(fixture(name)));
  }
}

TEST_CASE("broken or unsupported npy files throw IOError naming the file", "[core][npy]") {
  TempDir dir;
  const std::string good = read_bytes(fixture("f32_2x3.npy"));
  REQUIRE(good.size() == 152);

  const std::string missing = dir.file("does_not_exist.npy");
  CHECK_THROWS_AS(load_npy(missing), IOError);
  CHECK_THROWS_WITH(load_npy(missing), Catch::Contains("does_not_exist.npy"));

  auto expect_io_error = [&](const std::string& name, const std::string& bytes,
                             const std::string& detail) {
    expect_npy_error(dir, name, bytes, detail);
  };
  expect_io_error("truncated_data.npy", good.substr(0, good.size() - 3), "truncated");
  expect_io_error("truncated_header.npy", good.substr(0, 40), "truncated");
  expect_io_error("tiny.npy", good.substr(0, 5), "magic");
  expect_io_error("empty_file.npy", "", "magic");
  expect_io_error("bad_magic.npy", "\x93NUMPX" + good.substr(6), "magic");
  expect_io_error("text.npy", "hello, this is not numpy at all", "magic");
  expect_io_error("trailing.npy", good + "xx", "data bytes");
  std::string v4 = good;
  v4[6] = 4;
  expect_io_error("version4.npy", v4, "version");
  expect_io_error("no_descr.npy", make_npy("{'fortran_order': False, 'shape': (1,), }", "abcd"),
                  "descr");
  expect_io_error("bad_shape.npy",
                  make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (a, 2), }", ""),
                  "shape");
  expect_io_error("negative_shape.npy",
                  make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", ""),
                  "negative");
  // A corrupt header must not trigger a huge allocation.
  expect_io_error(
      "huge_shape.npy",
      make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000, 1000000), }", ""),
      "huge_shape");
  expect_io_error(
      "overflow_shape.npy",
      make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""),
      "too large");
  expect_io_error(
      "complex.npy",
      make_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')),
      "<c8");

  // One-byte types written with '<' instead of '|' load too.
  write_bytes(dir.file("lt_u1.npy"),
              make_npy("{'descr': '<u1', 'fortran_order': False, 'shape': (2,), }", "\x07\x09"));
  CHECK(load_npy(dir.file("lt_u1.npy")).to_vector<std::uint8_t>() ==
        std::vector<std::uint8_t>{7, 9});

  // Files NumPy wrote that we do not support.
  CHECK_THROWS_AS(load_npy(fixture("reject_fortran.npy")), IOError);
  CHECK_THROWS_WITH(load_npy(fixture("reject_fortran.npy")),
                    Catch::Contains("reject_fortran.npy") && Catch::Contains("Fortran"));
  CHECK_THROWS_WITH(load_npy(fixture("reject_f16.npy")),
                    Catch::Contains("reject_f16.npy") && Catch::Contains("<f2"));
  CHECK_THROWS_WITH(load_npy(fixture("reject_big_endian.npy")),
                    Catch::Contains("reject_big_endian.npy") && Catch::Contains(">f4"));
  CHECK_THROWS_WITH(load_npy(fixture("reject_i16_big_endian.npy")),
                    Catch::Contains("reject_i16_big_endian.npy") && Catch::Contains(">i2"));
}

TEST_CASE("atomic writes leave no temporary file behind", "[core][npy]") {
  TempDir dir;
  const std::string path = dir.file("weights.npy");
  save_npy(path, ones({3, 3}));
  CHECK(dir.entries() == std::vector<std::string>{"weights.npy"});
  // Overwriting replaces the content, still without leftovers.
  save_npy(path, zeros({2}, TensorOptions().dtype(kInt64)));
  CHECK(dir.entries() == std::vector<std::string>{"weights.npy"});
  CHECK(load_npy(path).to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 0});

  write_file_atomic(dir.file("plain.txt"), "hello");
  CHECK(read_bytes(dir.file("plain.txt")) == "hello");
  write_file_atomic(dir.file("plain.txt"), "");
  CHECK(read_bytes(dir.file("plain.txt")).empty());
  CHECK(dir.entries() == std::vector<std::string>{"plain.txt", "weights.npy"});

  // Failures throw IOError naming the path and leave nothing behind.
  const std::string bad = dir.file("no_such_dir/x.npy");
  CHECK_THROWS_AS(save_npy(bad, ones({2})), IOError);
  CHECK_THROWS_WITH(save_npy(bad, ones({2})), Catch::Contains("no_such_dir/x.npy"));
  // Renaming onto a directory fails after the temporary file was written: it is removed.
  fs::create_directories(dir.path / "occupied.npy");
  CHECK_THROWS_AS(save_npy(dir.file("occupied.npy"), ones({2})), IOError);
  CHECK(dir.entries() == std::vector<std::string>{"occupied.npy", "plain.txt", "weights.npy"});
  CHECK_THROWS_AS(save_npy(dir.file("u.npy"), Tensor()), ValueError);
}

TEST_CASE("concurrent atomic writes of one path never mix or leave temporaries", "[core][npy]") {
  TempDir dir;
  const std::string path = dir.file("shared.bin");
  std::vector<std::string> contents;
  for (int t = 0; t < 4; ++t) contents.push_back(std::string(100000, static_cast<char>('a' + t)));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 5; ++rep) write_file_atomic(path, contents[t]);
    });
  for (auto& th : threads) th.join();
  const std::string got = read_bytes(path);
  CHECK(std::find(contents.begin(), contents.end(), got) != contents.end());
  CHECK(dir.entries() == std::vector<std::string>{"shared.bin"});
}

TEST_CASE(
    "npy headers are parsed strictly: no scalar shape, no read past the end, bounded "
    "lengths",
    "[core][npy]") {
  TempDir dir;
  auto expect_io_error = [&](const std::string& name, const std::string& bytes,
                             const std::string& detail) {
    expect_npy_error(dir, name, bytes, detail);
  };
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, ";
  // Used to load as a 0-d tensor.
  expect_io_error("shape_int.npy", make_npy(f4 + "'shape': 7, }", "abcd"),
                  "expected a tuple such as (2, 3) for 'shape'");
  // In Python (3) is the integer 3.
  expect_io_error("shape_paren_int.npy", make_npy(f4 + "'shape': (3), }", std::string(12, 'x')),
                  "not a tuple");
  // Used to throw std::out_of_range from substr (the value is missing, the header ends).
  std::string cut = make_npy(f4 + "'shape':", "");
  cut.resize(10 + f4.size() + 8);  // header length still says 118: shrink it to the text
  cut[8] = static_cast<char>(f4.size() + 8);
  cut[9] = 0;
  REQUIRE(cut.substr(10) == f4 + "'shape':");
  expect_io_error("shape_no_value.npy", cut, "malformed header");
  expect_io_error("shape_no_value_padded.npy", make_npy(f4 + "'shape':", ""), "'shape'");
  expect_io_error("shape_unclosed.npy", make_npy(f4 + "'shape': (2, 3", ""), "in 'shape'");
  expect_io_error("descr_unterminated.npy", make_npy("{'descr': '<f4", ""), "unterminated string");
  expect_io_error("fortran_missing.npy",
                  make_npy("{'descr': '<f4', 'fortran_order': , 'shape': (1,), }", "abcd"),
                  "True or False");
  expect_io_error("no_brace.npy", make_npy("'descr': '<f4'", ""), "'{'");
  expect_io_error("empty_header.npy", make_npy("", ""), "'{'");
  expect_io_error("duplicate_key.npy", make_npy(f4 + "'shape': (1,), 'shape': (1,), }", "abcd"),
                  "duplicate key 'shape'");
  expect_io_error("unknown_key.npy", make_npy(f4 + "'shape': (1,), 'extra': 1, }", "abcd"),
                  "unexpected key 'extra'");
  expect_io_error("after_brace.npy", make_npy(f4 + "'shape': (1,), } x", "abcd"),
                  "after the closing");
  expect_io_error("dim_too_large.npy", make_npy(f4 + "'shape': (99999999999999999999,), }", ""),
                  "too large for int64");
  std::string dims65 = "(";
  for (int i = 0; i < 65; ++i) dims65 += "1, ";
  expect_io_error("dims65.npy", make_npy(f4 + "'shape': " + dims65 + "), }", "abcd"),
                  "more than 64 dimensions");
  // A leading 0 used to hide later dims whose strides overflow int64.
  expect_io_error("hidden_overflow.npy",
                  make_npy(f4 + "'shape': (0, 4294967296, 4294967296, 4294967296), }", ""),
                  "too large");
  // Version 2/3 header lengths are 32-bit: bounded before any use.
  std::string v2 = "\x93NUMPY\x02";
  v2 += std::string("\x00\xf0\xff\xff\xff", 5);
  expect_io_error("v2_huge_header.npy", v2 + "{}", "-byte limit");
  std::string v3 = "\x93NUMPY\x03";
  v3 += std::string("\x00\x00\x01\x00\x00", 5);  // 256 bytes declared, 2 present
  expect_io_error("v3_truncated_header.npy", v3 + "{}", "truncated");
  expect_io_error("v2_no_length.npy", std::string("\x93NUMPY\x02\x00\x01\x00", 10), "truncated");

  // Still accepted: Python 2 long suffixes, no trailing comma, double quotes, no spaces.
  write_bytes(dir.file("py2.npy"), make_npy("{'descr': '<u1', 'fortran_order': False, 'shape': "
                                            "(2L, 1L), }",
                                            "\x05\x06"));
  CHECK(load_npy(dir.file("py2.npy")).shape() == Shape{2, 1});
  write_bytes(dir.file("compact.npy"),
              make_npy("{\"shape\":(3,),\"fortran_order\":False,\"descr\":\"|u1\"}", "abc"));
  CHECK(load_npy(dir.file("compact.npy")).to_vector<std::uint8_t>() ==
        std::vector<std::uint8_t>{'a', 'b', 'c'});
}
