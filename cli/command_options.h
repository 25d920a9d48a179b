// The `--name value` / `--name=value` options of qgrad's subcommands (eval, export): one parser,
// so every command accepts the same spellings and refuses unknown or incomplete options with the
// same UsageError ("<command>: unknown argument '...' (see qgrad <command> --help)").
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qgrad::cli {

// The (name, value) pairs of `args` in order, each name one of `known` (e.g. "--checkpoint") or
// one of `flags`, options without a value (e.g. "--int8", paired with ""). Returns nullopt when
// --help or -h is among them (the caller prints its usage). Throws UsageError naming `command`
// for an unknown argument, a missing value or a value given to a flag.
std::optional<std::vector<std::pair<std::string, std::string>>> parse_command_options(
    const std::string& command, const std::vector<std::string>& args,
    const std::vector<std::string>& known, const std::vector<std::string>& flags = {});

}  // namespace qgrad::cli
