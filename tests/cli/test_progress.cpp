// The progress bar (redraw throttling, plain lines, formatting), the metrics log (JSON lines,
// resume truncation) and the summary table.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "cli/metrics_log.h"
#include "cli/progress_bar.h"
#include "cli/summary_table.h"
#include "cli/usage_error.h"
#include "cli_test_helpers.h"
#include "core/error.h"

using namespace qgrad;
using namespace qgrad::cli;

namespace {

std::size_t count(const std::string& s, char c) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), c));
}

}  // namespace

TEST_CASE("progress: durations", "[cli]") {
  CHECK(format_duration(0) == "0:00");
  CHECK(format_duration(65.4) == "1:05");
  CHECK(format_duration(3725) == "1:02:05");
  CHECK(format_duration(-1) == "?");
  CHECK(format_duration(NAN) == "?");
}

TEST_CASE("progress: mode resolution", "[cli]") {
  CHECK(resolve_progress_mode("auto", true) == ProgressMode::Bar);
  CHECK(resolve_progress_mode("auto", false) == ProgressMode::Lines);
  CHECK(resolve_progress_mode("bar", false) == ProgressMode::Bar);
  CHECK(resolve_progress_mode("lines", true) == ProgressMode::Lines);
  CHECK(resolve_progress_mode("off", true) == ProgressMode::Off);
  CHECK_THROWS_AS(resolve_progress_mode("fancy", true), UsageError);
}

TEST_CASE("progress: the bar redraws in place at most ~10 times a second", "[cli]") {
  double now = 100.0;
  std::ostringstream os;
  ProgressBar bar(os, ProgressMode::Bar, 10.0, [&] { return now; });
  bar.begin_epoch(2, 3, 10);
  now = 101.0;
  bar.update(1, 128, 2.5);  // first draw
  CHECK(count(os.str(), '\r') == 1);
  CHECK_THAT(os.str(), Catch::Contains("epoch 2/3 [") && Catch::Contains("1/10") &&
                           Catch::Contains("128 img/s") && Catch::Contains("loss 2.5000") &&
                           Catch::Contains("ETA 0:09"));
  now = 101.05;
  bar.update(2, 256, 2.0);  // too soon: skipped
  CHECK(count(os.str(), '\r') == 1);
  now = 101.2;
  bar.update(3, 384, 1.5);
  CHECK(count(os.str(), '\r') == 2);
  now = 101.21;
  bar.update(10, 1280, 1.0);  // the last batch is always drawn
  CHECK(count(os.str(), '\r') == 3);
  CHECK_THAT(os.str(), Catch::Contains("[========================] 10/10"));
  CHECK(os.str().find('\n') == std::string::npos);
  bar.end_epoch();  // clears the line
  CHECK(os.str().back() == '\r');
}

TEST_CASE("progress: plain lines at the configured interval when not a terminal", "[cli]") {
  double now = 0;
  std::ostringstream os;
  ProgressBar bar(os, ProgressMode::Lines, 5.0, [&] { return now; });
  bar.begin_epoch(1, 1, 100, /*first_batch=*/20);  // resumed mid-epoch
  for (int b = 21; b <= 100; ++b) {
    now += 0.5;
    bar.update(b, (b - 20) * 10, 1.0);
  }
  bar.end_epoch();
  // 40 s of batches at a 5 s interval, the final batch excluded: 7 lines.
  const std::string s = os.str();
  CHECK(count(s, '\n') == 7);
  CHECK(count(s, '\r') == 0);
  CHECK_THAT(s, Catch::Contains("epoch 1/1 batch 30/100  20 img/s"));
  // ETA from the batches done in this process: 10 batches in 5 s, 70 to go.
  CHECK_THAT(s, Catch::Contains("ETA 0:35"));
}

TEST_CASE("progress: off prints nothing", "[cli]") {
  std::ostringstream os;
  ProgressBar bar(os, ProgressMode::Off, 0.0);
  bar.begin_epoch(1, 1, 3);
  for (int b = 1; b <= 3; ++b) bar.update(b, b, 1.0);
  bar.end_epoch();
  CHECK(os.str().empty());
}

namespace {

EpochMetrics metrics(std::int64_t epoch, double acc) {
  EpochMetrics m;
  m.epoch = epoch;
  m.train_loss = 1.0 / static_cast<double>(epoch);
  m.train_acc = acc - 0.01;
  m.test_loss = 0.5;
  m.test_acc = acc;
  m.images_per_s = 1234.5;
  m.lr = 0.05;
  m.epoch_time_s = 10;
  m.eval_time_s = 1;
  return m;
}

}  // namespace

TEST_CASE("metrics log: JSON lines truncated to the checkpoint's epochs on resume", "[cli]") {
  qgrad_cli_test::TempDir tmp;
  const std::string path = tmp.file("metrics.jsonl");
  {
    MetricsLog log(path, 0);
    for (int e = 1; e <= 3; ++e) log.append(metrics(e, 0.8 + 0.01 * e));
  }
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  const nlohmann::json j = nlohmann::json::parse(first);
  for (const char* k : {"epoch", "train_loss", "test_acc", "images_per_s", "lr", "epoch_time_s"})
    CHECK(j.contains(k));
  CHECK(j["test_acc"] == 0.81);
  CHECK(MetricsLog::read(path).size() == 3);

  MetricsLog resumed(path, 2);  // the checkpoint covers two epochs: epoch 3 is dropped
  REQUIRE(resumed.records().size() == 2);
  CHECK(resumed.records()[1].test_acc == 0.8 + 0.01 * 2);  // exact through the JSON text
  resumed.append(metrics(3, 0.9));
  const std::vector<EpochMetrics> back = MetricsLog::read(path);
  REQUIRE(back.size() == 3);
  CHECK(back[2].test_acc == 0.9);
  CHECK(back[2].images_per_s == 1234.5);

  MetricsLog fresh(path, 0);
  CHECK(fresh.records().empty());
  CHECK(MetricsLog::read(path).empty());

  qgrad_cli_test::write_text(path, "{\"epoch\": 1}\n");
  CHECK_THROWS_AS(MetricsLog::read(path), IOError);
  CHECK_THROWS_WITH(MetricsLog::read(path),
                    Catch::Contains("line 1") && Catch::Contains("train_loss"));
}

TEST_CASE("summary table: one row per epoch and the best accuracy", "[cli]") {
  const std::string t =
      format_summary_table({metrics(1, 0.85), metrics(2, 0.8712), metrics(3, 0.86)});
  CHECK_THAT(t, Catch::Contains("train loss") && Catch::Contains("test acc") &&
                    Catch::Contains("images/s"));
  CHECK_THAT(t, Catch::Contains("87.12%"));
  CHECK_THAT(t, Catch::Contains("best test accuracy 87.12% (epoch 2), final 86.00%"));
  CHECK_THAT(t, Catch::Contains("total time 33.0 s"));
  CHECK(count(t, '\n') == 6);  // header, rule, 3 rows, footer
}
