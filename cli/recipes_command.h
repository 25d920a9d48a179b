// `qgrad recipes [NAME]`: the named QAT recipes of quant/modules/named_recipes.h. Without a name
// it lists each recipe's name, one-line description and reference; with one it prints the
// recipe's full JSON, as QuantRecipe normalises it (every default filled in), which can be pasted
// as a config's "quant" value. An unknown name is a usage error listing the known ones.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace qgrad::cli {

// The command line; returns the exit status. Usage errors throw UsageError.
int recipes_command(const std::vector<std::string>& args, std::ostream& out);
std::string recipes_usage();

}  // namespace qgrad::cli
