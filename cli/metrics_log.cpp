// MetricsLog: JSON-lines reading (null as NaN, a torn last line dropped), resume-time truncation
// and appending by atomic rewrites.
#include "cli/metrics_log.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_parse.h"

namespace qgrad::cli {

namespace {

// A metrics file holds one short line per epoch; far beyond any real run.
constexpr std::uint64_t kMaxMetricsBytes = 256u << 20;

double number_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  // nlohmann writes NaN and infinities as null: read null back as NaN (a diverged epoch).
  if (it != j.end() && it->is_null()) return std::numeric_limits<double>::quiet_NaN();
  QGRAD_CHECK(it != j.end() && it->is_number(), IOError, "metrics record has no number '", key, "'",
              it == j.end() ? std::string() : ", got " + describe_json(*it));
  return it->get<double>();
}

}  // namespace

nlohmann::json to_json(const EpochMetrics& m) {
  return {{"epoch", m.epoch},
          {"train_loss", m.train_loss},
          {"train_acc", m.train_acc},
          {"test_loss", m.test_loss},
          {"test_acc", m.test_acc},
          {"images_per_s", m.images_per_s},
          {"lr", m.lr},
          {"epoch_time_s", m.epoch_time_s},
          {"eval_time_s", m.eval_time_s}};
}

EpochMetrics epoch_metrics_from_json(const nlohmann::json& j) {
  QGRAD_CHECK(j.is_object(), IOError, "metrics record is not an object, got ", describe_json(j));
  EpochMetrics m;
  auto epoch = j.find("epoch");
  QGRAD_CHECK(epoch != j.end() && epoch->is_number_integer() && epoch->get<std::int64_t>() >= 1,
              IOError, "metrics record has no integer 'epoch' >= 1",
              epoch == j.end() ? std::string() : ", got " + describe_json(*epoch));
  m.epoch = epoch->get<std::int64_t>();
  m.train_loss = number_field(j, "train_loss");
  m.train_acc = number_field(j, "train_acc");
  m.test_loss = number_field(j, "test_loss");
  m.test_acc = number_field(j, "test_acc");
  m.images_per_s = number_field(j, "images_per_s");
  m.lr = number_field(j, "lr");
  m.epoch_time_s = number_field(j, "epoch_time_s");
  m.eval_time_s = number_field(j, "eval_time_s");
  return m;
}

std::vector<EpochMetrics> MetricsLog::read(const std::string& path, std::string* warning) {
  return parse(read_file(path, "metrics log", kMaxMetricsBytes), path, warning);
}

std::vector<EpochMetrics> MetricsLog::parse(const std::string& text, const std::string& path,
                                            std::string* warning) {
  if (warning) warning->clear();
  std::vector<EpochMetrics> out;
  std::size_t pos = 0;
  for (int n = 1; pos < text.size(); ++n) {
    std::size_t end = text.find('\n', pos);
    const bool complete = end != std::string::npos;
    if (!complete) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    const std::string where = "metrics log '" + path + "' line " + std::to_string(n);
    try {
      out.push_back(epoch_metrics_from_json(parse_json(line, where)));
    } catch (const Error& e) {
      if (complete)
        throw IOError(std::string(e.what()).rfind(where, 0) == 0 ? e.what()
                                                                 : where + ": " + e.what());
      // A last line cut short by a killed writer: what it held is lost, the rest is intact.
      if (warning)
        *warning = "metrics log '" + path + "': dropped the torn last line " + std::to_string(n) +
                   " (" + std::to_string(line.size()) + " bytes without a newline)";
    }
  }
  return out;
}

MetricsLog::MetricsLog(std::string path, std::int64_t keep_through_epoch) : path_(std::move(path)) {
  std::error_code ec;
  if (keep_through_epoch > 0 && std::filesystem::exists(path_, ec)) {
    for (const EpochMetrics& m : read(path_, &warning_))
      if (m.epoch <= keep_through_epoch) records_.push_back(m);
  }
  rewrite();
}

void MetricsLog::rewrite() const {
  std::string text;
  for (const EpochMetrics& m : records_) text += to_json(m).dump() + "\n";
  write_file_atomic(path_, text);
}

void MetricsLog::append(const EpochMetrics& m) {
  records_.push_back(m);
  // The whole file again, atomically: a few hundred bytes per epoch, and a kill mid-write leaves
  // the previous version instead of a torn line.
  rewrite();
}

}  // namespace qgrad::cli
