// Dropout layer: probability check, seeding from a parent generator, forward via ops/dropout.
#include "nn/modules/dropout.h"

#include "nn/repr_format.h"
#include "ops/dropout/dropout.h"

namespace qgrad::nn {

namespace {

double checked_p(double p) {
  QGRAD_CHECK(p >= 0.0 && p <= 1.0, ValueError,
              "Dropout: dropout probability has to be between 0 and 1, but got ", p);
  return p;
}

std::uint64_t seed_from(Generator& parent) {
  const std::uint64_t hi = parent.next_u32();
  const std::uint64_t lo = parent.next_u32();
  return (hi << 32) | lo;
}

}  // namespace

Dropout::Dropout(double p, std::uint64_t seed)
    : UnaryModule("Dropout"), p_(checked_p(p)), gen_(seed) {}

Dropout::Dropout(double p, Generator& parent)
    : UnaryModule("Dropout"), p_(checked_p(p)), gen_(seed_from(parent)) {}

Tensor Dropout::forward(const Tensor& input) {
  return dropout(input, p_, is_training(), gen_);
}

std::string Dropout::extra_repr() const {
  return "p=" + py_float(p_) + ", inplace=False";
}

}  // namespace qgrad::nn
