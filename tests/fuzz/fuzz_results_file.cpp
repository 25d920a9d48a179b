// libFuzzer target: the text of a `qgrad reproduce` results file (qgrad.results/1, which `qgrad
// plot` reads) through parse_json and results_from_json, and back through results_to_json
// (json_round_trip.h). Any outcome but a results file or a qgrad::Error is a finding.
#include <cstddef>
#include <cstdint>

#include "cli/results_file.h"
#include "json_round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  qgrad_fuzz::json_round_trip(data, size, qgrad::cli::results_from_json,
                              qgrad::cli::results_to_json);
  return 0;
}
