// core/file_io and core/json_parse: whole-file reads refuse directories, missing files and files
// over the caller's bound with errors naming the op and file; stale write temporaries of killed
// writers are removed, live ones of this process kept; parse_json bounds nesting (100 000
// levels no longer overflow the stack), rejects duplicate keys and out-of-range numbers with
// IOError naming the source; describe_json never recurses.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_parse.h"
#include "support/scratch_files.h"

using namespace qgrad;
using qgrad_test::TempDir;

TEST_CASE("read_file names the op and the file for a directory, a missing file and a size bound") {
  TempDir dir;
  CHECK_THAT(qgrad_test::io_error_of([&] { read_file(dir.path(), "load_x"); }),
             Catch::Contains("load_x") && Catch::Contains("is a directory"));
  CHECK_THAT(qgrad_test::io_error_of([&] { read_file(dir.file("none"), "load_x"); }),
             Catch::Contains("load_x: cannot open") && Catch::Contains("none"));
  qgrad_test::write_bytes(dir.file("f"), "abcdef");
  CHECK(read_file(dir.file("f"), "load_x") == "abcdef");
  CHECK(read_file(dir.file("f"), "load_x", 6) == "abcdef");
  CHECK_THAT(qgrad_test::io_error_of([&] { read_file(dir.file("f"), "load_x", 5); }),
             Catch::Contains("6 bytes") && Catch::Contains("5-byte limit"));
}

TEST_CASE("remove_stale_temporaries removes other processes' temporaries, keeps this one's") {
  TempDir dir;
  const std::string target = dir.file("model.safetensors");
  qgrad_test::write_bytes(target + ".tmp.999999999.1", "torn");
  qgrad_test::write_bytes(target + ".tmp.1.2", "torn");
  const std::string own = target + ".tmp." + std::to_string(::getpid()) + ".7";
  qgrad_test::write_bytes(own, "live");
  qgrad_test::write_bytes(dir.file("other.safetensors.tmp.1.2"), "not ours");
  CHECK(remove_stale_temporaries(target) == 2);
  CHECK_FALSE(std::filesystem::exists(target + ".tmp.1.2"));
  CHECK(std::filesystem::exists(own));
  CHECK(std::filesystem::exists(dir.file("other.safetensors.tmp.1.2")));
  write_file_atomic(target, "done");
  CHECK(read_file(target, "t") == "done");
}

TEST_CASE("parse_json bounds the nesting depth instead of overflowing the stack") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THAT(qgrad_test::io_error_of([&] { parse_json(deep, "config 'x.json'"); }),
             Catch::Contains("config 'x.json'") && Catch::Contains("nesting deeper than 64"));
  const std::string deep_obj = [] {
    std::string s;
    for (int i = 0; i < 100000; ++i) s += "{\"a\":";
    s += "1";
    for (int i = 0; i < 100000; ++i) s += "}";
    return s;
  }();
  CHECK_THAT(qgrad_test::io_error_of([&] { parse_json(deep_obj, "recipe"); }),
             Catch::Contains("nesting"));
  // 64 levels are fine, 65 are not.
  CHECK_NOTHROW(parse_json(std::string(64, '[') + std::string(64, ']'), "x"));
  CHECK_THROWS_AS(parse_json(std::string(65, '[') + std::string(65, ']'), "x"), IOError);
  CHECK_NOTHROW(parse_json("[[1]]", "x", JsonLimits{2}));
  CHECK_THROWS_AS(parse_json("[[[1]]]", "x", JsonLimits{2}), IOError);
}

TEST_CASE("parse_json rejects duplicate keys, huge numbers and bad text with IOError") {
  CHECK_THAT(qgrad_test::io_error_of([] { parse_json(R"({"a": {"b": 1, "b": 2}})", "cfg"); }),
             Catch::Contains("cfg: duplicate key \"b\""));
  CHECK_NOTHROW(parse_json(R"({"a": {"b": 1}, "c": {"b": 2}})", "cfg"));
  CHECK_THAT(qgrad_test::io_error_of([] { parse_json(R"({"lr": 1e400})", "cfg"); }),
             Catch::Contains("cfg: a number is out of range"));
  CHECK_THAT(qgrad_test::io_error_of([] { parse_json("{\"a\": ", "cfg"); }),
             Catch::Contains("cfg: not valid JSON"));
  CHECK_THAT(qgrad_test::io_error_of([] { parse_json("", "cfg"); }),
             Catch::Contains("cfg: not valid JSON"));
  CHECK(parse_json(R"({"a": [1, 2.5, "x"]})", "cfg")["a"][1].get<double>() == 2.5);
}

TEST_CASE("describe_json summarises structures and truncates long scalars") {
  CHECK(describe_json(nlohmann::json::array({1, 2, 3})) == "array of 3 elements");
  CHECK(describe_json(nlohmann::json::object()) == "object of 0 elements");
  CHECK(describe_json(nlohmann::json(7)) == "number 7");
  const std::string s = describe_json(nlohmann::json(std::string(200, 'x')));
  CHECK(s.size() < 90);
  CHECK_THAT(s, Catch::EndsWith("..."));
  // Invalid UTF-8 (a value built in code, not parsed) is replaced, not thrown on.
  CHECK_NOTHROW(describe_json(nlohmann::json(std::string("a\xff"))));
  CHECK(json_scalar_text(nlohmann::json(2.5)) == "2.5");
}
