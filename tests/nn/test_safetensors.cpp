// safetensors: reading a file written by the Python reference-layout writer (gen_nn.py),
// byte-exact output against the reference implementation's test vectors and that file, round
// trips of every dtype, alignment, IOError for every kind of corruption (deep JSON nesting,
// overflowing shapes hidden behind a 0), and the per-tensor CRC32s qgrad stores and verifies.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/factory.h"
#include "nn/serialize/safetensors.h"
#include "nn_test_helpers.h"
#include "support/test_paths.h"

using namespace qgrad;
using namespace qgrad::serialize;
using qgrad_test::load_nn;
using qgrad_test::nn_fixture;
using qgrad_test::read_bytes;
using qgrad_test::require_equal;
using qgrad_test::TempDir;
using qgrad_test::write_bytes;

namespace {

std::string le64(std::uint64_t n) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return s;
}

// A file from a header text and data bytes (no padding added).
std::string craft(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

}  // namespace

TEST_CASE("safetensors: reads the reference-layout golden file") {
  auto c = load_safetensors(nn_fixture("golden.safetensors"));
  REQUIRE(c.metadata ==
          std::map<std::string, std::string>{{"format", "pt"}, {"note", "qgrad golden"}});
  REQUIRE(c.tensors.size() == 9);
  for (const auto& name :
       {"weight", "bias", "step", "q", "mask", "scalar", "hist", "empty", "layer.0.w"}) {
    std::string npy = std::string("st_") + name;
    for (auto& ch : npy)
      if (ch == '.') ch = '_';
    require_equal(c.tensors[name], load_nn(npy), name);
  }
  REQUIRE(c.tensors["scalar"].dim() == 0);
  REQUIRE(c.tensors["empty"].shape() == Shape{0, 3});
  REQUIRE(c.tensors["hist"].dtype() == kInt16);  // "I16"
  REQUIRE(c.tensors["hist"].to_vector<std::int16_t>() ==
          std::vector<std::int16_t>{-32768, -1, 7, 300, 0, 32767});
  // File order is the reference's: by descending alignment, then name.
  REQUIRE(c.tensors.keys() == std::vector<std::string>{"step", "bias", "empty", "layer.0.w",
                                                       "weight", "scalar", "hist", "q", "mask"});
}

TEST_CASE("safetensors: writing reproduces the golden file byte for byte") {
  const std::string golden = read_bytes(nn_fixture("golden.safetensors"));
  auto c = deserialize_safetensors(golden);
  // Insertion order must not matter: the writer sorts as the reference does.
  TensorDict reversed;
  auto items = c.tensors.items();
  for (auto it = items.rbegin(); it != items.rend(); ++it) reversed.insert(it->key, it->value);
  REQUIRE(serialize_safetensors(reversed, c.metadata, Checksums::kOmit) == golden);
}

TEST_CASE("safetensors: output matches the reference implementation's test vectors") {
  // safetensors/src/tensor.rs test_serialization: "attn.0", F32 [1, 2, 3] = 0..5.
  TensorDict t;
  t.insert("attn.0", from_vector<float>({0, 1, 2, 3, 4, 5}, {1, 2, 3}));
  const std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  REQUIRE(header.size() == 64);
  REQUIRE(serialize_safetensors(t, {}, Checksums::kOmit) ==
          craft(header, floats({0, 1, 2, 3, 4, 5})));
  // test_serialization_forced_alignement: "attn0", [1, 1, 2, 3], 7 spaces of padding.
  TensorDict t2;
  t2.insert("attn0", from_vector<float>({0, 1, 2, 3, 4, 5}, {1, 1, 2, 3}));
  const std::string h2 =
      R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})" + std::string(7, ' ');
  REQUIRE(h2.size() == 72);
  REQUIRE(serialize_safetensors(t2, {}, Checksums::kOmit) == craft(h2, floats({0, 1, 2, 3, 4, 5})));
  // test_empty: no tensors, with and without metadata.
  REQUIRE(serialize_safetensors(TensorDict(), {}, Checksums::kOmit) == craft("{}      ", ""));
  REQUIRE(serialize_safetensors(TensorDict()) == craft("{}      ", ""));  // nothing to checksum
  REQUIRE(serialize_safetensors(TensorDict(), {{"framework", "pt"}}, Checksums::kOmit) ==
          craft(R"({"__metadata__":{"framework":"pt"}})" + std::string(5, ' '), ""));
  // And they read back.
  auto back = deserialize_safetensors(serialize_safetensors(t2));
  REQUIRE(back.tensors["attn0"].shape() == Shape{1, 1, 2, 3});
  REQUIRE(deserialize_safetensors(craft("{}      ", "")).tensors.empty());
}

TEST_CASE("safetensors: round trip of every dtype, views and autograd tensors") {
  Generator gen(4);
  TensorDict t;
  t.insert("f32", randn({3, 5}, gen));
  t.insert("f64", randn({2, 2}, gen, TensorOptions().dtype(kFloat64)));
  t.insert("i8", from_vector<std::int8_t>({-128, -1, 0, 127}));
  t.insert("u8", from_vector<std::uint8_t>({0, 200, 255}));
  t.insert("i16", from_vector<std::int16_t>({-32768, -1, 0, 32767, 5}));
  t.insert("i16_odd", from_vector<std::int16_t>({3, 4, 5}, {3, 1}));  // odd byte count
  t.insert("i32", from_vector<std::int32_t>({-2147483647 - 1, 7, 2147483647}, {3, 1}));
  t.insert("i64", from_vector<std::int64_t>({-(1LL << 62), 1LL << 40}));
  t.insert("scalar", scalar_tensor(2.5, TensorOptions().dtype(kFloat64)));
  t.insert("empty", zeros({4, 0, 2}));
  Tensor base = randn({4, 6}, gen);
  t.insert("transposed", base.t());                  // non-contiguous view
  t.insert("sliced", base.slice(1, 1, 6, 2));        // strided view
  t.insert("param", ones({2}).set_requires_grad());  // requires grad
  TempDir dir;
  const std::string path = dir.file("all.safetensors");
  save_safetensors(path, t, {{"k", "v"}});
  auto c = load_safetensors(path);
  REQUIRE(c.tensors.size() == t.size());
  for (const auto& it : t) {
    INFO(it.key);
    const Tensor& got = c.tensors[it.key];
    REQUIRE(got.dtype() == it.value.dtype());
    REQUIRE(got.shape() == it.value.shape());
    REQUIRE(got.to_vector<double>() == it.value.to_vector<double>());
    REQUIRE_FALSE(got.requires_grad());
  }
  REQUIRE(c.metadata.at("k") == "v");

  // Every tensor's data starts at a multiple of its element size in the file.
  const std::string bytes = read_bytes(path);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  REQUIRE(n % 8 == 0);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto begin = it.value()["data_offsets"][0].get<std::uint64_t>();
    const auto size = dtype_size(c.tensors[it.key()].dtype());
    INFO(it.key());
    REQUIRE((8 + n + begin) % size == 0);
  }
}

TEST_CASE("safetensors: saving rejects bad names and leaves no temporary files") {
  TempDir dir;
  TensorDict bad;
  bad.insert("__metadata__", zeros({1}));
  REQUIRE_THROWS_AS(save_safetensors(dir.file("x.safetensors"), bad), ValueError);
  TensorDict undef;
  undef.insert("u", Tensor());
  REQUIRE_THROWS_WITH(serialize_safetensors(undef), Catch::Contains("'u'"));
  TensorDict latin1;
  latin1.insert("caf\xe9", zeros({1}));  // not UTF-8: JSON cannot hold it
  REQUIRE_THROWS_AS(serialize_safetensors(latin1), ValueError);
  REQUIRE_THROWS_AS(serialize_safetensors(latin1, {}, Checksums::kOmit), ValueError);
  REQUIRE_FALSE(std::filesystem::exists(dir.file("x.safetensors")));

  TensorDict ok;
  ok.insert("a", ones({2}));
  save_safetensors(dir.file("ok.safetensors"), ok);
  save_safetensors(dir.file("ok.safetensors"), ok);  // overwrite
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.file(""))) {
    (void)e;
    ++files;
  }
  REQUIRE(files == 1);
}

TEST_CASE("safetensors: corrupt files are IOErrors that name the file and the problem") {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  auto expect_error = [&](const std::string& bytes, const std::string& fragment) {
    write_bytes(path, bytes);
    INFO("expecting: " << fragment);
    REQUIRE_THROWS_AS(load_safetensors(path), IOError);
    REQUIRE_THROWS_WITH(load_safetensors(path), Catch::Contains(path) && Catch::Contains(fragment));
  };
  const std::string good_header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";
  const std::string good = craft(good_header, floats({1, 2}) + std::string("xyz"));
  REQUIRE(deserialize_safetensors(good).tensors.size() == 2);

  expect_error("", "too small");
  expect_error("\x05\x00\x00", "too small");
  expect_error(good.substr(0, good.size() - 1), "truncated?");                 // truncated data
  expect_error(good + "zz", "data section holds 13 bytes");                    // trailing bytes
  expect_error(good.substr(0, 20), "exceeds the 12 bytes");                    // truncated header
  expect_error(le64(200'000'000) + "{}", "exceeds the 100000000-byte limit");  // huge header
  expect_error(le64(1000) + "{}      ", "exceeds the 8 bytes");                // past the end
  expect_error(craft("{\"a\": [1, 2", ""), "not valid JSON");                  // bad JSON
  expect_error(craft("[1, 2]", ""), "does not start with '{'");
  expect_error(craft(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", floats({1})),
               "run past the end");  // offsets out of range
  expect_error(craft(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", floats({1, 2})),
               "leave a gap");
  expect_error(
      craft(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          floats({1, 2})),
      "overlap");
  expect_error(craft(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", floats({1, 2})),
               "needs 12 bytes");
  expect_error(craft(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", floats({1, 2})),
               "end before begin");
  expect_error(craft(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", floats({1})),
               "F16 is not supported");
  expect_error(craft(R"({"a":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}})", floats({1})),
               "U16 is not supported");
  expect_error(craft(R"({"a":{"dtype":"I16","shape":[3],"data_offsets":[0,4]}})", floats({1})),
               "needs 6 bytes");
  expect_error(craft(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,4]}})", floats({1})),
               "unknown dtype");
  expect_error(craft(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", floats({1, 2})),
               "non-negative integers");
  expect_error(craft(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", floats({1, 2})),
               "data_offsets");
  expect_error(craft(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", floats({1, 2})), "dtype");
  expect_error(
      craft(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
            floats({1, 2})),
      "overflow");
  expect_error(
      craft(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          floats({1, 2})),
      "duplicate key \"a\"");
  expect_error(craft(R"({"__metadata__":{"x":1}})", ""), "not a string");
  expect_error(craft(R"({"a":7})", ""), "not an object");

  REQUIRE_THROWS_AS(load_safetensors(dir.file("missing.safetensors")), IOError);
  REQUIRE_THROWS_WITH(load_safetensors(dir.file("missing.safetensors")),
                      Catch::Contains("cannot open"));
  // A directory is reported as one (it used to read as a 0-byte file).
  REQUIRE_THROWS_WITH(load_safetensors(dir.path()),
                      Catch::Contains("load_safetensors") && Catch::Contains("is a directory"));
}

TEST_CASE("safetensors: qgrad file for the Python checker") {
  // Written to the build tree; verify with
  //   /usr/bin/python3 tests/fixtures/gen_nn.py --check build/nn_python_check.safetensors
  TensorDict t;
  std::vector<float> w(12);
  for (int i = 0; i < 12; ++i) w[static_cast<std::size_t>(i)] = static_cast<float>(i) / 4;
  t.insert("model.fc.weight", from_vector<float>(w, {3, 4}));
  t.insert("model.fc.bias", from_vector<float>({-1.5f, 0.0f, 2.25f}));
  t.insert("model.bn.num_batches_tracked", scalar_tensor(42, TensorOptions().dtype(kInt64)));
  t.insert("extra.f64", from_vector<double>({M_PI, -M_E}));
  t.insert("extra.i8", from_vector<std::int8_t>({-128, 0, 127}));
  t.insert("extra.u8", from_vector<std::uint8_t>({1, 2, 3, 255}, {2, 2}));
  t.insert("extra.i32", from_vector<std::int32_t>({-2147483647 - 1, 2147483647}));
  t.insert("extra.i16", from_vector<std::int16_t>({-32768, -1, 32767}));
  const std::string path = qgrad_test::binary_dir() + "/nn_python_check.safetensors";
  save_safetensors(path, t, {{"epoch", "3"}, {"note", "written by qgrad"}});
  auto back = load_safetensors(path);
  REQUIRE(back.tensors.size() == 8);
  REQUIRE(back.tensors["extra.i16"].dtype() == kInt16);
  require_equal(back.tensors["model.fc.weight"], t["model.fc.weight"]);
}

TEST_CASE("safetensors: hostile headers are IOErrors, not crashes or overflow") {
  // A deeply nested shape used to crash: the error message dump()ed the value recursively.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string nested =
      craft(R"({"a":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,0]}})", "");
  REQUIRE_THROWS_AS(deserialize_safetensors(nested, "deep.safetensors"), IOError);
  REQUIRE_THROWS_WITH(deserialize_safetensors(nested, "deep.safetensors"),
                      Catch::Contains("deep.safetensors") && Catch::Contains("nesting deeper"));
  // Within the depth bound, the message describes the value instead of printing it.
  REQUIRE_THROWS_WITH(
      deserialize_safetensors(
          craft(R"({"a":{"dtype":"F32","shape":[[[1]]],"data_offsets":[0,4]}})", floats({1})),
          "shallow"),
      Catch::Contains("non-negative integers, got array of 1 element"));
  // [0, 2^32, 2^32, 2^32]: 0 bytes, but the strides overflow int64; used to be accepted.
  REQUIRE_THROWS_WITH(
      deserialize_safetensors(
          craft(R"({"a":{"dtype":"U8","shape":[0,4294967296,4294967296,4294967296],)"
                R"("data_offsets":[0,0]}})",
                ""),
          "hidden"),
      Catch::Contains("hidden") && Catch::Contains("tensor 'a'") &&
          Catch::Contains("overflows int64"));
  // A number beyond double's range is an IOError too.
  REQUIRE_THROWS_AS(
      deserialize_safetensors(
          craft(R"({"a":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}})", floats({1})),
          "big"),
      IOError);
}

TEST_CASE("safetensors: per-tensor CRC32s are stored, verified and kept out of the metadata") {
  TensorDict t;
  t.insert("weight", from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  t.insert("bias", from_vector<float>({-1, 0.5f}));
  t.insert("count", scalar_tensor(7, TensorOptions().dtype(kInt64)));
  const std::string bytes = serialize_safetensors(t, {{"note", "hi"}});

  // The header is still plain safetensors: __metadata__ a str -> str map, the checksums one
  // string holding a JSON object of 8-hex-digit CRC32s.
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  const auto& meta = header.at("__metadata__");
  REQUIRE(meta.size() == 2);
  for (auto it = meta.begin(); it != meta.end(); ++it) REQUIRE(it.value().is_string());
  const auto crcs = nlohmann::json::parse(meta.at("qgrad.crc32").get<std::string>());
  REQUIRE(crcs.size() == 4);  // the 3 tensors and "__metadata__"
  // zlib's crc32 of the float32 bytes of {-1, 0.5} (check: python3 -c "import struct, zlib;
  // print('%08x' % zlib.crc32(struct.pack('<2f', -1, 0.5)))").
  REQUIRE(crcs.at("bias") == "5f637949");

  auto back = deserialize_safetensors(bytes, "mem");
  REQUIRE(back.metadata == std::map<std::string, std::string>{{"note", "hi"}});
  require_equal(back.tensors["weight"], t["weight"]);

  // Every single-bit flip in the data section is caught, naming the file and the tensor.
  const std::size_t data_start = 8 + static_cast<std::size_t>(n);
  int caught = 0;
  for (std::size_t i = data_start; i < bytes.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      try {
        deserialize_safetensors(bad, "flipped.safetensors");
      } catch (const IOError& e) {
        const std::string msg = e.what();
        caught += msg.find("flipped.safetensors") != std::string::npos &&
                  msg.find("fails its CRC32 check") != std::string::npos;
      }
    }
  REQUIRE(caught == static_cast<int>(8 * (bytes.size() - data_start)));
  std::string bad = bytes;
  bad[data_start + 8 + 3] ^= 0x10;  // in "bias" (after the 8-byte int64 "count")
  REQUIRE_THROWS_WITH(deserialize_safetensors(bad, "f"),
                      Catch::Contains("tensor 'bias'") && Catch::Contains("CRC32"));

  // Files without checksums (Python's safetensors, older qgrad) still load.
  auto plain = deserialize_safetensors(serialize_safetensors(t, {}, Checksums::kOmit), "plain");
  REQUIRE(plain.tensors.size() == 3);
  REQUIRE(plain.metadata.empty());
  REQUIRE(load_safetensors(nn_fixture("golden.safetensors")).tensors.size() == 9);

  // The key is reserved, and a malformed or incomplete checksum map is refused.
  REQUIRE_THROWS_AS(serialize_safetensors(t, {{"qgrad.crc32", "{}"}}), ValueError);
  const std::string h = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  auto with_crcs = [&](const std::string& value) {
    nlohmann::json j = nlohmann::json::parse(h);
    j["__metadata__"] = {{"qgrad.crc32", value}};
    return craft(j.dump(), floats({1}));
  };
  // The metadata entry: the CRC32 of no entries (only the checksums themselves) is 0.
  const std::string ok = with_crcs(R"({"__metadata__":"00000000","a":"aca16a6a"})");
  REQUIRE_NOTHROW(deserialize_safetensors(ok));
  auto expect = [&](const std::string& value, const std::string& fragment) {
    INFO(value);
    REQUIRE_THROWS_AS(deserialize_safetensors(with_crcs(value), "m"), IOError);
    REQUIRE_THROWS_WITH(deserialize_safetensors(with_crcs(value), "m"),
                        Catch::Contains("'m'") && Catch::Contains(fragment));
  };
  expect(R"({"a":"aca16a6a"})", "no checksum for the metadata");
  expect(R"({"__metadata__":"00000000"})", "no checksum for tensor 'a'");
  expect(R"({"__metadata__":"00000000","a":"aca16a6a","b":"00000000"})",
         "tensor 'b', which the file does not hold");
  expect(R"({"__metadata__":"00000000","a":"ACA16A6A"})", "8 lowercase hex digits");
  expect(R"({"__metadata__":"00000000","a":12})", "8 lowercase hex digits");
  expect(R"({"__metadata__":"00000001","a":"aca16a6a"})", "the metadata fails its CRC32 check");
  expect(R"(["a"])", "must be a JSON object");
  expect(R"({"a":{"b":1}})", "nesting deeper");
  expect(R"(not json)", "not valid JSON");
  expect(R"({"__metadata__":"00000000","a":"00000000"})", "tensor 'a': data fails its CRC32");
}

TEST_CASE("safetensors: no single-bit flip anywhere in a qgrad file changes what loads") {
  // Every flip of the header (length, JSON, metadata, checksums) and of the data either is an
  // IOError or loads exactly the saved tensors and metadata: the checksums cover the tensor
  // bytes and the metadata, names are checked through the checksum map, and sizes, dtypes and
  // offsets must agree. A flip that renames the checksum key itself turns verification off but
  // changes nothing else, so the original entries must then still all be there.
  TensorDict t;
  t.insert("w", from_vector<float>({1.5f, -2, 3, 0.25f}, {2, 2}));
  t.insert("b", from_vector<std::int16_t>({7, -1}));
  const std::map<std::string, std::string> meta = {{"epoch", "3"}, {"cfg", "{\"lr\":0.1}"}};
  const std::string bytes = serialize_safetensors(t, meta);
  const auto saved = deserialize_safetensors(bytes, "mem");
  REQUIRE(saved.metadata == meta);
  int loaded = 0, refused = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      SafetensorsContents c;
      try {
        c = deserialize_safetensors(bad, "flip");
      } catch (const IOError&) {
        ++refused;
        continue;
      }
      ++loaded;
      INFO("byte " << i << " bit " << bit);
      REQUIRE(c.tensors.keys() == saved.tensors.keys());
      for (const auto& it : saved.tensors) {
        const Tensor& got = c.tensors[it.key];
        REQUIRE(got.dtype() == it.value.dtype());
        REQUIRE(got.shape() == it.value.shape());
        REQUIRE(got.to_vector<double>() == it.value.to_vector<double>());
      }
      for (const auto& [k, v] : meta) REQUIRE(c.metadata.at(k) == v);
    }
  // Only flips the format ignores load: spaces in the padding, a renamed checksum key.
  REQUIRE(refused > 7 * static_cast<int>(bytes.size()));
  REQUIRE(loaded + refused == 8 * static_cast<int>(bytes.size()));
}

TEST_CASE("safetensors: the fuzz seeds (tests/fuzz/corpus/gen_seeds.py) are valid files") {
  // The seeds are written by Python (zlib.crc32), so this also checks the checksum format
  // against a second implementation.
  const std::string dir = qgrad_test::source_dir() + "/tests/fuzz/corpus/";
  auto two = load_safetensors(dir + "safetensors/seed_two.safetensors");
  REQUIRE(two.tensors.keys() == std::vector<std::string>{"a", "b"});
  REQUIRE(two.metadata.empty());
  auto every = load_safetensors(dir + "safetensors/seed_every_dtype.safetensors");
  REQUIRE(every.tensors.size() == 7);
  REQUIRE(every.metadata == std::map<std::string, std::string>{{"note", "x"}});
  REQUIRE(load_safetensors(dir + "safetensors/seed_no_crc.safetensors").tensors.size() == 2);
  REQUIRE(load_safetensors(dir + "safetensors/seed_empty.safetensors").tensors.empty());
  for (const char* name : {"seed_model_optim.safetensors", "seed_model_only.safetensors"}) {
    INFO(name);
    REQUIRE(load_safetensors(dir + "checkpoint/" + name).metadata.at("qgrad.format") ==
            "checkpoint");
  }
}
