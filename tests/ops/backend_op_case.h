// The cases of the cross-device op test (test_cuda_backend_ops.cpp): one OpCase per op of the
// build's catalogue, saying how to build the op's output from CPU- or GPU-resident inputs, the
// input shapes, and how closely the GPU must match the CPU. Each family's cases live in their
// own tests/*/test_cuda_cases_*.cpp file and register themselves with QGRAD_OP_CASES (test_gpu
// is an executable, so the registrations cannot be dropped by a static library's linker).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "qgrad.h"

namespace qgrad_test {

enum class Match { Bitwise, Close };

struct OpCase {
  // Builds the op's output from its inputs (all on one device).
  std::function<qgrad::Tensor(const std::vector<qgrad::Tensor>&)> fn;
  std::vector<qgrad::Shape> shapes;  // one per input; broadcasting shapes where the op broadcasts
  Match match = Match::Bitwise;
  double rtol = 1e-5, atol = 1e-6;  // for Match::Close: |cpu - cuda| <= atol + rtol * |cpu|
  bool positive = false;            // inputs in (0.5, 2.5) (log, sqrt, pow)
  bool differentiable = true;       // compare input gradients too
  bool mask_input0 = false;         // input 0 is a uint8 mask
  // Input i (when set) replaces the random one: built on the CPU from the seeded generator, e.g.
  // class indices for a loss. Returned tensors are moved to the device as they are.
  std::function<qgrad::Tensor(std::size_t i, qgrad::Generator& gen)> make_input;
};

using OpCases = std::map<std::string, OpCase>;

// Every registered family's cases.
OpCases all_op_cases();
// Whether the build has a CUDA kernel for every table of `op`, for some dtype.
bool op_on_cuda(const std::string& op);
// The catalogue's ops with CUDA kernels but no case (a coverage gap). tests/gpu_main.cpp checks
// it on every machine, GPU or not, so CI catches a kernel registered without a test.
std::vector<std::string> cuda_ops_without_case();

struct OpCaseRegistrar {
  explicit OpCaseRegistrar(void (*add)(OpCases&));
};

}  // namespace qgrad_test

#define QGRAD_OP_CASES_CAT2(a, b) a##b
#define QGRAD_OP_CASES_CAT(a, b) QGRAD_OP_CASES_CAT2(a, b)
// QGRAD_OP_CASES(add_my_cases): registers `void add_my_cases(qgrad_test::OpCases&)`.
#define QGRAD_OP_CASES(fn)                                                                 \
  static const qgrad_test::OpCaseRegistrar QGRAD_OP_CASES_CAT(qgrad_op_cases_, __LINE__) { \
    &fn                                                                                    \
  }
