// Per-layer weight bit widths under a size budget, from measured per-layer costs (the search of
// `qgrad autoquant`). Each layer i has n_i weights and, for each candidate bit width b, a cost
// c_i(b): the test accuracy lost when only that layer's weights are quantized to b bits. The
// budget bounds the weight storage, sum_i n_i b_i <= T bits ("avg_weight_bits<=4": T = 4 sum
// n_i; "size_bytes<=N": T = 8N). The search is greedy: every layer starts at the widest
// candidate, then, while over budget, the one step down to a layer's next narrower candidate
// with the least added cost per bit saved is taken (ties: the larger layer); then, while room is
// left, steps back up that lower the cost and fit are taken (largest saving per bit first).
// Greedy solves this
// multiple-choice knapsack approximately; with costs that grow as bits shrink it is close to the
// optimum and it never needs the budget discretised.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qgrad::cli {

struct LayerCosts {
  std::string name;
  std::int64_t weights = 0;   // n_i
  std::vector<double> costs;  // c_i(b) for each candidate, in the order of `bits`
};

struct BitBudget {
  enum class Kind { AvgWeightBits, SizeBytes } kind = Kind::AvgWeightBits;
  double value = 0;
  // "avg_weight_bits<=4", "size_bytes<=20000" (spaces allowed). UsageError naming the text.
  static BitBudget parse(const std::string& text);
  // The bound T on sum n_i b_i, in bits.
  double total_bits(std::int64_t total_weights) const;
  std::string str() const;
};

struct BitAllocation {
  std::vector<int> bits;         // per layer
  double cost = 0;               // sum of the chosen costs
  std::int64_t weight_bits = 0;  // sum n_i b_i
};

// `bits`: the candidate widths (any order, distinct, each in [1, 32]). ValueError when even the
// narrowest candidate everywhere exceeds the budget, naming the smallest size reachable.
BitAllocation allocate_bits(const std::vector<LayerCosts>& layers, const std::vector<int>& bits,
                            const BitBudget& budget);

// The widest candidate b with b * sum n_i within the budget (the uniform baseline); 0 if none.
int uniform_bits(const std::vector<LayerCosts>& layers, const std::vector<int>& bits,
                 const BitBudget& budget);

}  // namespace qgrad::cli
