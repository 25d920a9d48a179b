// libFuzzer target: the text of a `qgrad train --config` file through the same path the command
// takes (parse_train_config_text: parse_json, then every key validated into a TrainConfig); no
// training. A config that parses must also survive its own round trip: to_json(), written as
// text and parsed again, gives the same resolved config. Any outcome but a config or a
// qgrad::Error (UsageError included) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/train_config.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const qgrad::cli::TrainConfig config =
        qgrad::cli::parse_train_config_text(text, "config file 'fuzz.json'");
    const nlohmann::json resolved = qgrad::cli::to_json(config);
    const qgrad::cli::TrainConfig again =
        qgrad::cli::parse_train_config_text(resolved.dump(), "resolved config");
    if (qgrad::cli::to_json(again) != resolved) __builtin_trap();  // the round trip lost a value
  } catch (const qgrad::Error&) {
  }
  return 0;
}
