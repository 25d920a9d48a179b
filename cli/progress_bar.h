// ProgressBar: training progress within an epoch. On a terminal it redraws one line in place
// (carriage return) with batches done/total, images/s, the running loss and the ETA, at most
// ~10 times a second; elsewhere (a log file, a pipe) it prints a plain line every
// `line_interval_s` seconds instead, so logs stay readable. The clock is injectable for tests.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace qgrad::cli {

enum class ProgressMode { Bar, Lines, Off };

// "bar", "lines", "off", or "auto" (bar when `is_terminal`, lines otherwise).
ProgressMode resolve_progress_mode(const std::string& setting, bool is_terminal);
// Whether standard output is a terminal.
bool stdout_is_terminal();

// "1:02:03" or "2:03" for a duration in seconds.
std::string format_duration(double seconds);

class ProgressBar {
 public:
  using Clock = std::function<double()>;  // seconds, monotonic

  ProgressBar(std::ostream& out, ProgressMode mode, double line_interval_s, Clock clock = nullptr);

  // Starts an epoch of `total_batches`; `first_batch` > 0 when resuming in the middle.
  void begin_epoch(std::int64_t epoch, std::int64_t epochs, std::int64_t total_batches,
                   std::int64_t first_batch = 0);
  // After each batch: batches of the epoch done so far (counting resumed ones), images
  // processed since begin_epoch, and the mean loss so far.
  void update(std::int64_t batches_done, std::int64_t images_since_begin, double running_loss);
  // Clears the bar line (the caller prints the epoch's result next).
  void end_epoch();

  // The text of one progress report (without the carriage return).
  std::string status_line(std::int64_t batches_done, std::int64_t images_since_begin,
                          double running_loss) const;

 private:
  std::ostream& out_;
  ProgressMode mode_;
  double line_interval_s_;
  Clock clock_;
  std::int64_t epoch_ = 0, epochs_ = 0, total_ = 0, first_batch_ = 0;
  double start_ = 0, last_draw_ = 0;
  bool drawn_ = false;
  std::size_t last_width_ = 0;
};

}  // namespace qgrad::cli
