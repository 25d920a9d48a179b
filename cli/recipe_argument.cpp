// Reading the --recipe argument: a name, a JSON file or inline JSON.
#include "cli/recipe_argument.h"

#include <filesystem>

#include "cli/usage_error.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/json_parse.h"

namespace qgrad::cli {

using json = nlohmann::json;

namespace {

constexpr std::uint64_t kMaxRecipeFileBytes = 16 << 20;

}  // namespace

json read_recipe_argument(const std::string& text, const std::string& command) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  std::string source;
  std::string body;
  if (first != std::string::npos && text[first] == '{') {
    source = command + ": --recipe (inline JSON)";
    body = text;
  } else {
    std::error_code ec;
    if (!std::filesystem::exists(text, ec)) {
      if (text.size() > 5 && text.compare(text.size() - 5, 5, ".json") == 0)
        throw UsageError(command + ": --recipe '" + text + "': no such file");
      return json{{"recipe", text}};  // a name; from_json lists the known ones if it is not
    }
    source = command + ": --recipe file '" + text + "'";
    body = read_file(text, command + ": --recipe", kMaxRecipeFileBytes);  // IOError: exit 1
  }
  try {
    return parse_json(body, source);
  } catch (const IOError& e) {  // the text is the user's mistake, not a damaged file
    throw UsageError(e.what());
  }
}

}  // namespace qgrad::cli
