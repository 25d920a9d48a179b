// libFuzzer target: the text of a run's metrics.jsonl through MetricsLog::parse, which resume
// reads back (one JSON object a line, null for NaN, a torn last line dropped with a warning). A
// log that parses must survive being written and parsed again with the same records. Any outcome
// but records or a qgrad::Error is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/metrics_log.h"
#include "core/error.h"

namespace {

bool same(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using qgrad::cli::EpochMetrics;
  using qgrad::cli::MetricsLog;
  try {
    std::string warning;
    const std::vector<EpochMetrics> records = MetricsLog::parse(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.jsonl", &warning);
    std::string text;
    for (const EpochMetrics& m : records) text += qgrad::cli::to_json(m).dump() + "\n";
    const std::vector<EpochMetrics> again = MetricsLog::parse(text, "rewritten");
    if (again.size() != records.size()) __builtin_trap();
    for (std::size_t i = 0; i < records.size(); ++i)
      if (again[i].epoch != records[i].epoch || !same(again[i].train_loss, records[i].train_loss) ||
          !same(again[i].test_acc, records[i].test_acc))
        __builtin_trap();
  } catch (const qgrad::Error&) {
  }
  return 0;
}
