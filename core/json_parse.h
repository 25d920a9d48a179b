/// @file
/// Parsing untrusted JSON text (configs, recipes, quantizer descriptors, safetensors headers,
/// checkpoints' stored configs) with bounds: a nesting-depth limit (nlohmann's parser, copy and
/// dump recurse once per level, so 100 000 nested brackets would overflow the stack), no
/// duplicate keys (nlohmann would silently keep the last), and every failure, number overflow
/// included, reported as one qgrad::IOError that names what was being read.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace qgrad {

/// Limits on the JSON that qgrad parses.
struct JsonLimits {
  /// Deepest nesting of arrays and objects accepted; qgrad's own files nest at most 4 levels.
  int max_depth = 64;
};

/// Parses `text`. `what` names the source in errors, e.g. "config 'runs/a/config.json'".
/// Throws IOError("<what>: ...") on invalid JSON, a number out of double's range, a duplicate key
/// or nesting deeper than `limits.max_depth`.
nlohmann::json parse_json(std::string_view text, const std::string& what, JsonLimits limits = {});

/// A short description of a JSON value for error messages: its type and, for scalars and short
/// values, its text; never recurses into deep structure (unlike dump()).
std::string describe_json(const nlohmann::json& value);

/// The JSON text of a scalar for error messages, cut at 64 characters; invalid UTF-8 in a string
/// is replaced rather than thrown on (dump() would throw).
std::string json_scalar_text(const nlohmann::json& value);

}  // namespace qgrad
