// MetricsLog: JSON-lines reading, resume-time truncation and appending.
#include "cli/metrics_log.h"

#include <fstream>

#include "core/error.h"
#include "core/file_io.h"

namespace qgrad::cli {

namespace {

double number_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  QGRAD_CHECK(it != j.end() && it->is_number(), IOError, "metrics record ", j.dump(),
              " has no number '", key, "'");
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
  QGRAD_CHECK(j.is_object(), IOError, "metrics record ", j.dump(), " is not an object");
  EpochMetrics m;
  m.epoch = static_cast<std::int64_t>(number_field(j, "epoch"));
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

std::vector<EpochMetrics> MetricsLog::read(const std::string& path) {
  std::ifstream in(path);
  QGRAD_CHECK(in.good(), IOError, "metrics log: cannot read '", path, "'");
  std::vector<EpochMetrics> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    try {
      out.push_back(epoch_metrics_from_json(nlohmann::json::parse(line)));
    } catch (const std::exception& e) {
      throw IOError("metrics log '" + path + "' line " + std::to_string(n) + ": " + e.what());
    }
  }
  return out;
}

MetricsLog::MetricsLog(std::string path, std::int64_t keep_through_epoch) : path_(std::move(path)) {
  if (keep_through_epoch > 0 && std::ifstream(path_).good()) {
    for (const EpochMetrics& m : read(path_))
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
  std::ofstream out(path_, std::ios::app);
  QGRAD_CHECK(out.good(), IOError, "metrics log: cannot append to '", path_, "'");
  out << to_json(m).dump() << "\n";
  out.flush();
  QGRAD_CHECK(out.good(), IOError, "metrics log: writing '", path_, "' failed");
}

}  // namespace qgrad::cli
