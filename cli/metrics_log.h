// The metrics of a training run: EpochMetrics (one epoch's results) and MetricsLog, which keeps
// them as JSON lines in <output dir>/metrics.jsonl, one object per epoch, written and flushed as
// each epoch ends so a crashed or interrupted run keeps what it measured. A resumed run keeps
// the lines of the epochs its checkpoint covers and drops later ones (they belong to the lost
// continuation), then appends its own.
//
// Robustness: every append rewrites the file atomically (write_file_atomic: a temporary and a
// rename), so a kill never leaves a half-written line; a final line without its newline that does
// not parse (a torn write by an older qgrad, or a copy cut short) is dropped with a warning
// instead of blocking a resume. A non-finite value (a diverged epoch) is written as null, as JSON
// has no NaN, and read back as NaN.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qgrad::cli {

struct EpochMetrics {
  std::int64_t epoch = 0;  // 1-based
  double train_loss = 0;   // mean over the epoch's training examples
  double train_acc = 0;    // fraction of training examples classified right (train mode)
  double test_loss = 0;
  double test_acc = 0;      // fraction
  double images_per_s = 0;  // training throughput (forward, backward, update)
  double lr = 0;            // learning rate of the epoch's first batch
  double epoch_time_s = 0;  // training time of the epoch (evaluation excluded)
  double eval_time_s = 0;
};

nlohmann::json to_json(const EpochMetrics& m);
// Throws IOError when a field is missing or not a number (null reads as NaN; "epoch" must be an
// integer >= 1).
EpochMetrics epoch_metrics_from_json(const nlohmann::json& j);

class MetricsLog {
 public:
  // Starts the log at `path`: a new run (keep_through_epoch = 0) truncates it; a resumed run
  // keeps the records with epoch <= keep_through_epoch (available through records()). A torn
  // last line is dropped and described in warning().
  MetricsLog(std::string path, std::int64_t keep_through_epoch);

  void append(const EpochMetrics& m);
  const std::vector<EpochMetrics>& records() const { return records_; }
  const std::string& path() const { return path_; }
  // Empty, or what the constructor dropped ("metrics log '...': dropped a torn last line 3").
  const std::string& warning() const { return warning_; }

  // Every record of a metrics file; throws IOError naming the file and line when one is bad. A
  // final line that lacks its newline and does not parse is dropped: `warning` (when given)
  // then says so, else it is left empty.
  static std::vector<EpochMetrics> read(const std::string& path, std::string* warning = nullptr);
  // The same from the text of a metrics file; `source` names it in errors and the warning.
  static std::vector<EpochMetrics> parse(const std::string& text, const std::string& source,
                                         std::string* warning = nullptr);

 private:
  void rewrite() const;

  std::string path_;
  std::vector<EpochMetrics> records_;
  std::string warning_;
};

}  // namespace qgrad::cli
