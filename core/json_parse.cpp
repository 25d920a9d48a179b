// parse_json: nlohmann's SAX-callback parser with a depth bound and duplicate-key rejection;
// describe_json: error-message text for a JSON value that never recurses.
#include "core/json_parse.h"

#include <set>
#include <vector>

#include "core/error.h"

namespace qgrad {

namespace {

// Thrown from inside the parser callback to stop parsing at once (before a deep structure is
// built); converted to IOError with the source's name below.
struct JsonRejected {
  std::string reason;
};

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& what, JsonLimits limits) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  int depth = 0;
  auto callback = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (ev) {
      case E::object_start:
      case E::array_start:
        if (++depth > limits.max_depth)
          throw JsonRejected{"nesting deeper than " + std::to_string(limits.max_depth) + " levels"};
        if (ev == E::object_start) keys.emplace_back();
        break;
      case E::object_end:
        --depth;
        if (!keys.empty()) keys.pop_back();
        break;
      case E::array_end:
        --depth;
        break;
      case E::key:
        if (!keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
          throw JsonRejected{"duplicate key \"" + parsed.get<std::string>() + "\""};
        break;
      case E::value:
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), callback);
  } catch (const JsonRejected& r) {
    throw IOError(what + ": " + r.reason);
  } catch (const nlohmann::json::out_of_range& e) {
    // nlohmann reports a number beyond double's range (1e400) as out_of_range.406.
    throw IOError(what + ": a number is out of range: " + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw IOError(what + ": not valid JSON: " + e.what());
  }
}

std::string describe_json(const nlohmann::json& value) {
  if (value.is_structured()) {
    return std::string(value.type_name()) + " of " + std::to_string(value.size()) +
           (value.size() == 1 ? " element" : " elements");
  }
  return std::string(value.type_name()) + " " + json_scalar_text(value);
}

std::string json_scalar_text(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  constexpr std::size_t kMax = 64;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

}  // namespace qgrad
