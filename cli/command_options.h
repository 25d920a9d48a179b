// The `--name value` / `--name=value` options of qgrad's subcommands (eval, export): one parser,
// so every command accepts the same spellings and refuses unknown or incomplete options with the
// same UsageError ("<command>: unknown argument '...' (see qgrad <command> --help)").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace qgrad::cli {

// The (name, value) pairs of `args` in order, each name one of `known` (e.g. "--checkpoint").
// Returns nullopt when --help or -h is among them (the caller prints its usage). Throws
// UsageError naming `command` for an unknown argument or a missing value. A command that takes
// operands (`qgrad plot RUN_DIR...`) passes `positionals`, which receives, in order, every
// argument that does not start with '-' (and everything after "--"); without it they are errors.
// `flags` are options without a value (`--quick`), returned as (name, "").
std::optional<std::vector<std::pair<std::string, std::string>>> parse_command_options(
    const std::string& command, const std::vector<std::string>& args,
    const std::vector<std::string>& known, std::vector<std::string>* positionals = nullptr,
    const std::vector<std::string>& flags = {});

// An integer option value in [lo, hi]: stoll's out_of_range and trailing text are UsageErrors
// "<command>: <option> must be an integer in [lo, hi], got '<text>'".
std::int64_t parse_int_option(const std::string& command, const std::string& option,
                              const std::string& text, std::int64_t lo, std::int64_t hi);

// An output folder option: UsageError "<command>: <option> '<path>' is a file, not a folder"
// when something other than a folder is there (an absent path is fine: it is created later),
// and check_writable_location's IOError when the files could not be written there.
void check_output_folder(const std::string& command, const std::string& option,
                         const std::string& path);

// The nearest existing folder above `path` (where `path`, or the folders leading to it, will be
// created) must be a folder this process can write into: IOError "<shown> cannot be written:
// ..." otherwise, so a command fails before its work rather than when it saves the result.
void check_writable_location(const std::string& shown, const std::string& path);

// An output file option, checked before any work: the path must be new or a regular file (never
// a folder, device, FIFO or socket: writing replaces the file by renaming a finished temporary
// over it, which would turn /dev/null into a regular file), and never one of the command's
// inputs (pairs of what the input is, "the checkpoint", and its path). UsageError
// "<command>: <option> '<path>' ..." naming which; and check_writable_location's IOError.
void check_output_file(const std::string& command, const std::string& option,
                       const std::string& path,
                       const std::vector<std::pair<std::string, std::string>>& inputs = {});

}  // namespace qgrad::cli
