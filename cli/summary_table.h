// The table `qgrad train` prints at the end: one row per epoch (train loss and accuracy, test
// loss and accuracy, images/s, learning rate, epoch time) and a footer with the best test
// accuracy and the total training time.
#pragma once

#include <string>
#include <vector>

#include "cli/metrics_log.h"

namespace qgrad::cli {

std::string format_summary_table(const std::vector<EpochMetrics>& epochs);

}  // namespace qgrad::cli
