// ProgressBar: formatting and the redraw / line throttling.
#include "cli/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "cli/usage_error.h"

namespace qgrad::cli {

namespace {

constexpr double kRedrawInterval = 0.1;  // seconds: at most ~10 redraws per second
constexpr int kBarWidth = 24;

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

ProgressMode resolve_progress_mode(const std::string& setting, bool is_terminal) {
  if (setting == "bar") return ProgressMode::Bar;
  if (setting == "lines") return ProgressMode::Lines;
  if (setting == "off") return ProgressMode::Off;
  if (setting == "auto") return is_terminal ? ProgressMode::Bar : ProgressMode::Lines;
  throw UsageError("output.progress must be one of \"auto\", \"bar\", \"lines\", \"off\", got \"" +
                   setting + "\"");
}

bool stdout_is_terminal() {
  return isatty(STDOUT_FILENO) == 1;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[64];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

ProgressBar::ProgressBar(std::ostream& out, ProgressMode mode, double line_interval_s, Clock clock)
    : out_(out),
      mode_(mode),
      line_interval_s_(line_interval_s),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)) {}

void ProgressBar::begin_epoch(std::int64_t epoch, std::int64_t epochs, std::int64_t total_batches,
                              std::int64_t first_batch) {
  epoch_ = epoch;
  epochs_ = epochs;
  total_ = total_batches;
  first_batch_ = first_batch;
  start_ = last_draw_ = clock_();
  drawn_ = false;
  last_width_ = 0;
}

std::string ProgressBar::status_line(std::int64_t done, std::int64_t images,
                                     double running_loss) const {
  const double elapsed = clock_() - start_;
  const double rate = elapsed > 0 ? static_cast<double>(images) / elapsed : 0.0;
  const std::int64_t done_here = done - first_batch_;
  const double eta =
      done_here > 0 ? elapsed / static_cast<double>(done_here) * static_cast<double>(total_ - done)
                    : NAN;
  std::string s = "epoch " + std::to_string(epoch_) + "/" + std::to_string(epochs_) + " ";
  if (mode_ == ProgressMode::Bar) {
    const int filled = total_ > 0 ? static_cast<int>(kBarWidth * done / total_) : kBarWidth;
    s += "[" + std::string(static_cast<std::size_t>(filled), '=') +
         (filled < kBarWidth
              ? ">" + std::string(static_cast<std::size_t>(kBarWidth - filled - 1), ' ')
              : "") +
         "] ";
  } else {
    s += "batch ";
  }
  s += std::to_string(done) + "/" + std::to_string(total_) + "  " + fixed(rate, 0) +
       " img/s  loss " + fixed(running_loss, 4) + "  ETA " + format_duration(eta);
  return s;
}

void ProgressBar::update(std::int64_t done, std::int64_t images, double running_loss) {
  if (mode_ == ProgressMode::Off) return;
  const double now = clock_();
  if (mode_ == ProgressMode::Bar) {
    if (drawn_ && now - last_draw_ < kRedrawInterval && done < total_) return;
    std::string line = status_line(done, images, running_loss);
    const std::size_t width = line.size();
    if (width < last_width_) line += std::string(last_width_ - width, ' ');  // erase leftovers
    out_ << '\r' << line << std::flush;
    last_width_ = width;
  } else {
    // The last batch gets no line: the epoch's summary line follows immediately.
    if (done >= total_ || now - last_draw_ < line_interval_s_) return;
    out_ << status_line(done, images, running_loss) << '\n' << std::flush;
  }
  last_draw_ = now;
  drawn_ = true;
}

void ProgressBar::end_epoch() {
  if (mode_ == ProgressMode::Bar && drawn_)
    out_ << '\r' << std::string(last_width_, ' ') << '\r' << std::flush;
  drawn_ = false;
  last_width_ = 0;
}

}  // namespace qgrad::cli
