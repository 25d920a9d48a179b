// Argmax, correct counts, agreement and the largest logit difference of two paths' logits.
#include "cli/logit_agreement.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/error.h"

namespace qgrad::cli {

std::int64_t argmax_row(const float* row, std::int64_t classes) {
  std::int64_t best = 0;
  for (std::int64_t c = 1; c < classes; ++c)
    if (row[c] > row[best]) best = c;
  return best;
}

std::int64_t count_correct_logits(const std::vector<float>& logits, std::int64_t classes,
                                  const std::vector<std::int64_t>& targets) {
  QGRAD_CHECK(classes > 0 && logits.size() == targets.size() * static_cast<std::size_t>(classes),
              ValueError, "count_correct_logits: ", logits.size(), " logits for ", targets.size(),
              " targets of ", classes, " classes");
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < targets.size(); ++i)
    correct += argmax_row(logits.data() + i * classes, classes) == targets[i];
  return correct;
}

void LogitDifference::add(const float* a, const float* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const bool fa = std::isfinite(a[i]), fb = std::isfinite(b[i]);
    nonfinite_a += !fa;
    nonfinite_b += !fb;
    if (fa && fb) finite_max = std::max(finite_max, std::fabs(double(a[i]) - double(b[i])));
  }
}

double LogitDifference::max() const {
  return nonfinite_a > 0 || nonfinite_b > 0 ? std::numeric_limits<double>::quiet_NaN() : finite_max;
}

LogitAgreement compare_logits(const std::vector<float>& a, const std::vector<float>& b,
                              std::int64_t classes, const std::vector<std::int64_t>& targets) {
  QGRAD_CHECK(a.size() == b.size(), ValueError, "compare_logits: ", a.size(), " against ", b.size(),
              " logits");
  LogitAgreement r;
  r.count = static_cast<std::int64_t>(targets.size());
  r.correct_a = count_correct_logits(a, classes, targets);
  r.correct_b = count_correct_logits(b, classes, targets);
  for (std::size_t i = 0; i < targets.size(); ++i)
    r.agree +=
        argmax_row(a.data() + i * classes, classes) == argmax_row(b.data() + i * classes, classes);
  LogitDifference d;
  d.add(a.data(), b.data(), a.size());
  r.nonfinite_a = d.nonfinite_a;
  r.nonfinite_b = d.nonfinite_b;
  r.max_logit_diff = d.max();
  return r;
}

bool deploy_targets_met(const LogitAgreement& r) {
  // agree / count >= 999 / 1000 and |correct_a - correct_b| / count <= 1 / 1000.
  return r.count > 0 && r.nonfinite_a == 0 && r.nonfinite_b == 0 &&
         r.agree * 1000 >= r.count * 999 && std::llabs(r.correct_a - r.correct_b) * 1000 <= r.count;
}

}  // namespace qgrad::cli
