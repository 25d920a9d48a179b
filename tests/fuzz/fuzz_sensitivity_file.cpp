// libFuzzer target: the text of a `qgrad sensitivity` file (qgrad.sensitivity/1, which `qgrad
// plot` reads) through parse_json and sensitivity_from_json, and back through
// sensitivity_to_json (json_round_trip.h). Any outcome but a sensitivity file or a qgrad::Error
// is a finding.
#include <cstddef>
#include <cstdint>

#include "cli/sensitivity_file.h"
#include "json_round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  qgrad_fuzz::json_round_trip(data, size, qgrad::cli::sensitivity_from_json,
                              qgrad::cli::sensitivity_to_json);
  return 0;
}
