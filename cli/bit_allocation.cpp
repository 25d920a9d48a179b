// allocate_bits: the greedy search for per-layer weight bit widths under a budget.
#include "cli/bit_allocation.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>

#include "cli/usage_error.h"
#include "core/error.h"

namespace qgrad::cli {

BitBudget BitBudget::parse(const std::string& text) {
  std::string t;
  for (char c : text)
    if (c != ' ') t += c;
  BitBudget b;
  std::string number;
  if (t.rfind("avg_weight_bits<=", 0) == 0) {
    b.kind = Kind::AvgWeightBits;
    number = t.substr(17);
  } else if (t.rfind("size_bytes<=", 0) == 0) {
    b.kind = Kind::SizeBytes;
    number = t.substr(12);
  } else {
    throw UsageError(
        "autoquant: --budget must be \"avg_weight_bits<=B\" or \"size_bytes<=N\", "
        "got '" +
        text + "'");
  }
  std::size_t used = 0;
  try {
    b.value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !(b.value > 0) ||
      b.value > std::numeric_limits<double>::max())
    throw UsageError("autoquant: --budget '" + text + "': the bound must be a positive number");
  return b;
}

double BitBudget::total_bits(std::int64_t total_weights) const {
  return kind == Kind::AvgWeightBits ? value * static_cast<double>(total_weights) : 8 * value;
}

std::string BitBudget::str() const {
  char b[64];
  std::snprintf(b, sizeof b, "%s<=%g",
                kind == Kind::AvgWeightBits ? "avg_weight_bits" : "size_bytes", value);
  return b;
}

namespace {

std::int64_t total_weights(const std::vector<LayerCosts>& layers) {
  std::int64_t n = 0;
  for (const LayerCosts& l : layers) n += l.weights;
  return n;
}

}  // namespace

BitAllocation allocate_bits(const std::vector<LayerCosts>& layers, const std::vector<int>& bits,
                            const BitBudget& budget) {
  QGRAD_CHECK(!bits.empty(), ValueError, "allocate_bits: no candidate bit widths");
  // Candidate indices from the widest to the narrowest.
  std::vector<std::size_t> order(bits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return bits[a] > bits[b]; });
  for (const LayerCosts& l : layers)
    QGRAD_CHECK(l.costs.size() == bits.size(), ValueError, "allocate_bits: layer '", l.name,
                "' has ", l.costs.size(), " costs for ", bits.size(), " candidate widths");
  const double limit = budget.total_bits(total_weights(layers));
  std::vector<std::size_t> at(layers.size(), 0);  // position in `order`
  auto used = [&] {
    std::int64_t s = 0;
    for (std::size_t i = 0; i < layers.size(); ++i) s += layers[i].weights * bits[order[at[i]]];
    return s;
  };
  while (static_cast<double>(used()) > limit) {
    std::size_t best = layers.size();
    double best_rate = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < layers.size(); ++i) {
      if (at[i] + 1 >= order.size() || layers[i].weights == 0) continue;
      const std::size_t cur = order[at[i]], next = order[at[i] + 1];
      const double saved = static_cast<double>(layers[i].weights) * (bits[cur] - bits[next]);
      const double rate = (layers[i].costs[next] - layers[i].costs[cur]) / saved;
      if (rate < best_rate ||
          (rate == best_rate && best < layers.size() && layers[i].weights > layers[best].weights)) {
        best_rate = rate;
        best = i;
      }
    }
    if (best == layers.size()) {
      char b[160];
      std::snprintf(b, sizeof b, "%lld bytes", static_cast<long long>((used() + 7) / 8));
      throw ValueError("autoquant: the budget " + budget.str() +
                       " cannot be met: the narrowest candidate width on every layer needs " + b);
    }
    ++at[best];
  }
  // The last step may leave room: step layers back up where that lowers the cost and fits, the
  // largest cost saving per added bit first.
  while (true) {
    std::size_t best = layers.size();
    double best_rate = 0;
    const std::int64_t now = used();
    for (std::size_t i = 0; i < layers.size(); ++i) {
      if (at[i] == 0 || layers[i].weights == 0) continue;
      const std::size_t cur = order[at[i]], wider = order[at[i] - 1];
      const double added = static_cast<double>(layers[i].weights) * (bits[wider] - bits[cur]);
      if (static_cast<double>(now) + added > limit) continue;
      const double rate = (layers[i].costs[cur] - layers[i].costs[wider]) / added;
      if (rate > best_rate) {
        best_rate = rate;
        best = i;
      }
    }
    if (best == layers.size()) break;
    --at[best];
  }
  BitAllocation a;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    a.bits.push_back(bits[order[at[i]]]);
    a.cost += layers[i].costs[order[at[i]]];
  }
  a.weight_bits = used();
  return a;
}

int uniform_bits(const std::vector<LayerCosts>& layers, const std::vector<int>& bits,
                 const BitBudget& budget) {
  const std::int64_t n = total_weights(layers);
  const double limit = budget.total_bits(n);
  int best = 0;
  for (int b : bits)
    if (static_cast<double>(b) * static_cast<double>(n) <= limit) best = std::max(best, b);
  return best;
}

}  // namespace qgrad::cli
