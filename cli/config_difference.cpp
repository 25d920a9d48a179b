// first_difference: a recursive walk over two JSON objects.
#include "cli/config_difference.h"

namespace qgrad::cli {

std::optional<ConfigDifference> first_difference(const nlohmann::json& was,
                                                 const nlohmann::json& now,
                                                 const std::string& path) {
  if (was == now) return std::nullopt;
  if (was.is_object() && now.is_object()) {
    for (auto it = now.begin(); it != now.end(); ++it) {
      const nlohmann::json old = was.value(it.key(), nlohmann::json());
      if (auto d = first_difference(old, it.value(), path + "." + it.key())) return d;
    }
    for (auto it = was.begin(); it != was.end(); ++it)
      if (!now.contains(it.key())) return ConfigDifference{path + "." + it.key(), *it, nullptr};
  }
  return ConfigDifference{path, was, now};
}

}  // namespace qgrad::cli
