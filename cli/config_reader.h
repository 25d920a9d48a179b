// ConfigReader: typed, validated access to one JSON object of a config file. Every getter takes
// the key and its default, checks the value's type and range, and on a bad value throws
// UsageError naming the full dotted key path, what was expected and what was found:
//   optimizer.lr must be a positive number, got -1
// Keys that were read are remembered, so finish() can reject every key nobody asked for (typos
// such as "optimizer.lrr" fail loudly instead of being ignored). Nested objects are read with
// object(), which returns a reader for the sub-object with the longer path. Integers are read
// exactly (never truncated or wrapped) against a [min, max] range, and a value appears in a
// message through shown(), which never dump()s a whole array or object.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qgrad::cli {

// A constraint on a number: the predicate and how to say it ("a positive number").
struct NumberRule {
  std::function<bool(double)> ok;
  std::string expected;

  static NumberRule any();
  static NumberRule positive();
  static NumberRule non_negative();
  // lo <= x < hi.
  static NumberRule in_half_open(double lo, double hi);
  // lo <= x <= hi.
  static NumberRule in_closed(double lo, double hi);
};

class ConfigReader {
 public:
  // `path` is the dotted path of `value` ("" for the root). Throws UsageError when `value` is
  // not a JSON object (null counts as an empty object). `root_name` names the root object in
  // messages ("the config"; other JSON files read this way say what they are).
  ConfigReader(nlohmann::json value, std::string path, std::string root_name = "the config");

  const std::string& path() const { return path_; }
  // The full dotted path of `key` inside this object.
  std::string key_path(const std::string& key) const;
  // Whether the key is present (and not null); does not mark it as read.
  bool has(const std::string& key) const;

  double number(const std::string& key, double fallback, const NumberRule& rule);
  // An integer in [min_value, max_value] (JSON integers only; 3.0, "3" and integers beyond
  // int64 are rejected, never truncated).
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t min_value,
                       std::int64_t max_value = std::numeric_limits<std::int64_t>::max());
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, const std::string& fallback);
  // A string from `choices`.
  std::string choice(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& choices);
  // A number, or a list of 1..max_size numbers, each satisfying `rule`.
  std::vector<double> numbers(const std::string& key, const std::vector<double>& fallback,
                              const NumberRule& rule, std::size_t max_size);
  // A list of exactly `size` numbers, each satisfying `rule`.
  std::vector<double> fixed_numbers(const std::string& key, const std::vector<double>& fallback,
                                    const NumberRule& rule, std::size_t size);
  // A list of strictly increasing integers in [min_value, max_value].
  std::vector<std::int64_t> increasing_integers(
      const std::string& key, const std::vector<std::int64_t>& fallback, std::int64_t min_value,
      std::int64_t max_value = std::numeric_limits<std::int64_t>::max());
  // The sub-object under `key` (an empty one when absent or null).
  ConfigReader object(const std::string& key);
  // Marks `key` as read and returns its raw value when present (null counts as absent).
  std::optional<nlohmann::json> raw(const std::string& key);

  // Throws UsageError for a key that is present but was asked for by no getter, naming its path
  // and the keys this object accepts (all keys asked for so far, in order). Parsers therefore ask
  // for every key they know, even ones that do not apply, and reject those explicitly.
  void finish() const;

  // Throws UsageError "<path of key> <message>".
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

  // A value as error messages show it: scalars as JSON text (cut at 64 characters), arrays and
  // objects by type and size (never dump()ed: an untrusted value may be huge).
  static std::string shown(const nlohmann::json& value);

 private:
  const nlohmann::json* find(const std::string& key) const;
  [[noreturn]] void bad_value(const std::string& key, const std::string& expected,
                              const nlohmann::json& got) const;

  nlohmann::json value_;
  std::string path_;
  std::string root_name_;
  void mark(const std::string& key);

  std::vector<std::string> known_;  // keys asked for, in order
  std::set<std::string> known_set_;
};

}  // namespace qgrad::cli
