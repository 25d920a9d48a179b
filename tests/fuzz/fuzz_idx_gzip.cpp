// libFuzzer target for gzip-compressed IDX. An input starting with the gzip magic goes to
// parse_idx as is (mutated streams: corrupt, truncated, trailing data, several members, huge
// expansion against the declared size). Any other input is taken as plain IDX bytes,
// compressed here as one or two gzip members (split where the last byte says), and checked
// differentially: the gzip path must give the same tensor as the plain path, or fail as it
// does. Any other outcome (a mismatch, a non-qgrad exception, a crash, a sanitizer report, an
// allocation over the run's limit) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/tensor.h"
#include "nn/data/gzip.h"
#include "nn/data/idx.h"

namespace {

bool parse(const std::string& bytes, qgrad::Tensor& out) {
  try {
    out = qgrad::data::parse_idx(bytes, "fuzz.idx.gz");
    return true;
  } catch (const qgrad::Error&) {
    return false;
  }
}

bool same(const qgrad::Tensor& a, const qgrad::Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  // An empty tensor may have no storage (a null pointer memcmp must not see).
  const std::size_t n = static_cast<std::size_t>(a.numel()) * a.element_size();
  return n == 0 || std::memcmp(a.raw_data(), b.raw_data(), n) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  qgrad::Tensor gz, plain;
  if (qgrad::data::is_gzip(bytes)) {
    parse(bytes, gz);
    return 0;
  }
  const std::size_t split = size ? data[size - 1] % (size + 1) : 0;
  const std::string compressed = split == 0 ? qgrad::data::gzip(bytes)
                                            : qgrad::data::gzip(bytes.substr(0, split)) +
                                                  qgrad::data::gzip(bytes.substr(split));
  const bool plain_ok = parse(bytes, plain);
  const bool gz_ok = parse(compressed, gz);
  if (plain_ok != gz_ok || (plain_ok && !same(plain, gz))) std::abort();
  return 0;
}
