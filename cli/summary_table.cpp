// Summary table formatting: fixed-width columns, right-aligned numbers.
#include "cli/summary_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace qgrad::cli {

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

std::string format_summary_table(const std::vector<EpochMetrics>& epochs) {
  const std::vector<std::string> head{"epoch",    "train loss", "train acc", "test loss",
                                      "test acc", "images/s",   "lr",        "time (s)"};
  std::vector<std::vector<std::string>> rows;
  for (const EpochMetrics& m : epochs)
    rows.push_back({std::to_string(m.epoch), fmt("%.4f", m.train_loss),
                    fmt("%.2f%%", 100 * m.train_acc), fmt("%.4f", m.test_loss),
                    fmt("%.2f%%", 100 * m.test_acc), fmt("%.0f", m.images_per_s), fmt("%.4g", m.lr),
                    fmt("%.1f", m.epoch_time_s)});
  std::vector<std::size_t> width(head.size());
  for (std::size_t c = 0; c < head.size(); ++c) {
    width[c] = head[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  std::ostringstream os;
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < cells.size(); ++c)
      os << (c ? "  " : "") << std::string(width[c] - cells[c].size(), ' ') << cells[c];
    os << "\n";
  };
  line(head);
  std::size_t total_width = 2 * (head.size() - 1);
  for (std::size_t w : width) total_width += w;
  os << std::string(total_width, '-') << "\n";
  for (const auto& r : rows) line(r);
  if (!epochs.empty()) {
    // As for best.safetensors: an epoch whose losses are not finite (diverged) is never best.
    const EpochMetrics* best = nullptr;
    for (const EpochMetrics& m : epochs)
      if (std::isfinite(m.train_loss) && std::isfinite(m.test_loss) &&
          (!best || m.test_acc > best->test_acc))
        best = &m;
    double train_time = 0;
    for (const EpochMetrics& m : epochs) train_time += m.epoch_time_s + m.eval_time_s;
    if (best)
      os << "best test accuracy " << fmt("%.2f%%", 100 * best->test_acc) << " (epoch "
         << best->epoch << ")";
    else
      os << "no epoch with finite losses (no best test accuracy)";
    os << ", final " << fmt("%.2f%%", 100 * epochs.back().test_acc) << ", total time "
       << fmt("%.1f", train_time) << " s\n";
  }
  return os.str();
}

}  // namespace qgrad::cli
