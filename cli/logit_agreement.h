// How closely two deployment paths of one model agree on the same test images, from their logits
// ([N, classes] row-major float32, rows in the same order): each path's correct count, the top-1
// agreement (rows whose argmax, the first largest logit as torch.argmax takes it, is the same)
// and the largest absolute logit difference. deploy_targets_met() is issue 12's bar for a pair:
// top-1 agreement of at least 99.9% and accuracies within 0.1 percentage point, both decided in
// integer arithmetic on the counts (no rounding at the boundary), and no NaN or infinite logit in
// either path: a diverged model's NaN logits all "agree" (argmax takes the first), so they are
// counted and fail the pair, and the largest difference is then NaN rather than a reassuring 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qgrad::cli {

std::int64_t argmax_row(const float* row, std::int64_t classes);

std::int64_t count_correct_logits(const std::vector<float>& logits, std::int64_t classes,
                                  const std::vector<std::int64_t>& targets);

// The largest |a - b| over pairs of logits, added to batch by batch, and the NaN or infinite
// logits of each side: std::max drops NaN, so with any non-finite logit the largest difference
// is NaN rather than a reassuring 0.
struct LogitDifference {
  std::int64_t nonfinite_a = 0, nonfinite_b = 0;
  double finite_max = 0;  // over the pairs where both are finite

  void add(const float* a, const float* b, std::size_t n);
  double max() const;
};

struct LogitAgreement {
  std::int64_t count = 0;
  std::int64_t correct_a = 0, correct_b = 0;
  std::int64_t agree = 0;
  std::int64_t nonfinite_a = 0, nonfinite_b = 0;  // NaN or infinite logits in each path
  double max_logit_diff = 0;                      // NaN when either path has a non-finite logit
};

// a and b hold targets.size() rows of `classes` logits each.
LogitAgreement compare_logits(const std::vector<float>& a, const std::vector<float>& b,
                              std::int64_t classes, const std::vector<std::int64_t>& targets);

// agree / count >= 99.9%, |correct_a - correct_b| / count <= 0.1 percentage point, and every
// logit of both paths finite.
bool deploy_targets_met(const LogitAgreement& r);

}  // namespace qgrad::cli
