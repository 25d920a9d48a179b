// The check that the file-format fuzz targets share: arbitrary bytes through parse_json and a
// format's reader (from_json); what the reader accepts must write back (to_json) to text that is
// accepted again and writes back the same. A qgrad::Error is an accepted outcome; a rewrite that
// differs traps, and anything else escaping is libFuzzer's finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/json_parse.h"

namespace qgrad_fuzz {

template <typename FromJson, typename ToJson>
void json_round_trip(const std::uint8_t* data, std::size_t size, FromJson from_json,
                     ToJson to_json) {
  try {
    const nlohmann::json j =
        qgrad::parse_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
    const std::string once = to_json(from_json(j)).dump();
    const std::string twice = to_json(from_json(qgrad::parse_json(once, "rewritten"))).dump();
    if (once != twice) __builtin_trap();  // the written file did not read back to itself
  } catch (const qgrad::Error&) {
  }
}

}  // namespace qgrad_fuzz
