// SingleProcessGroup: collectives of one rank, which leave the data as it is.
#include "distributed/single_process_group.h"

#include <cstring>

namespace qgrad::distributed {

namespace {
class DoneWork final : public Work {
 public:
  bool test() override { return true; }
  void wait() override {}
};
}  // namespace

std::unique_ptr<Work> SingleProcessGroup::start_all_reduce(void*, std::int64_t, DType, ReduceOp) {
  return std::make_unique<DoneWork>();
}

void SingleProcessGroup::broadcast_bytes(void*, std::size_t, int) {}

void SingleProcessGroup::all_gather_bytes(const void* in, void* out, std::size_t bytes) {
  if (bytes > 0) std::memcpy(out, in, bytes);
}

}  // namespace qgrad::distributed
