// `qgrad recipes`: listing and printing the named QAT recipes.
#include "cli/recipes_command.h"

#include <algorithm>
#include <ostream>

#include "cli/usage_error.h"
#include "quant/modules/named_recipes.h"
#include "quant/modules/quant_recipe.h"

namespace qgrad::cli {

std::string recipes_usage() {
  return "usage: qgrad recipes [NAME]\n"
         "\n"
         "Without NAME, lists the named QAT recipes. With NAME, prints that recipe's full JSON\n"
         "(every default filled in). A config names one as \"quant\": {\"recipe\": \"NAME\"};\n"
         "keys given next to the name override the recipe's (objects merged key by key), e.g.\n"
         "\"quant\": {\"recipe\": \"lsq_w4a4\", \"calibration\": {\"batches\": 2}}.\n";
}

int recipes_command(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    out << recipes_usage();
    return 0;
  }
  if (args.size() > 1)
    throw UsageError("expected at most one recipe name, got " + std::to_string(args.size()) +
                     " arguments");
  const auto& table = quant::named_recipes();
  if (args.empty()) {
    std::size_t width = 0;
    for (const auto& r : table) width = std::max(width, r.name.size());
    for (const auto& r : table) {
      out << "  " << r.name << std::string(width - r.name.size() + 2, ' ') << r.description << "\n"
          << "  " << std::string(width + 2, ' ') << "(" << r.reference << ")\n";
    }
    out << "\nqgrad recipes NAME prints one as JSON; use it as \"quant\": {\"recipe\": "
           "\"NAME\"}.\n";
    return 0;
  }
  if (!args[0].empty() && args[0][0] == '-') throw UsageError("unknown option '" + args[0] + "'");
  const quant::NamedRecipe* named = nullptr;
  try {
    named = &quant::named_recipe(args[0]);
  } catch (const ValueError& e) {
    std::string message = e.what();
    const std::string prefix = "quant recipe: ";
    if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
    throw UsageError(message);
  }
  out << quant::QuantRecipe::from_json(named->recipe).to_json().dump(2) << "\n";
  return 0;
}

}  // namespace qgrad::cli
