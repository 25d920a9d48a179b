// dorefa_quantize_weight: tanh normalisation, then rounding with a straight-through gradient.
#include "quant/learnable/dorefa.h"

#include "ops/binary/binary.h"
#include "ops/device_check.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/learnable/pact_bits.h"
#include "quant/parameter_check_kernels.h"
#include "quant/torch_ao/fake_quantize.h"

namespace qgrad::learnable {

Tensor dorefa_quantize_weight(const Tensor& w, int num_bits) {
  QGRAD_CHECK(num_bits >= kPactMinBits && num_bits <= kPactMaxBits, ValueError,
              "dorefa_quantize_weight: num_bits must lie in [", kPactMinBits, ", ", kPactMaxBits,
              "], got ", num_bits);
  require_floating("dorefa_quantize_weight", "w", w);
  QGRAD_CHECK(w.numel() > 0, ValueError, "dorefa_quantize_weight: w must not be empty");
  const auto n = (std::int64_t{1} << num_bits) - 1;
  const Tensor t = tanh(w);
  const Tensor m = amax(abs(t));
  // An all-zero w has no scale (max|tanh(w)| = 0); on a GPU a kernel checks, the host does not
  // wait for the value.
  static const KernelTable<quant::CheckParameterKernel>& checks =
      kernel_table(quant::kCheckParameterKernels);
  checks("dorefa_quantize_weight", m)("dorefa_quantize_weight", CheckedParameter::TanhMax,
                                      ParameterRule::FiniteAndPositive, m);
  const Tensor wn = t / (m * 2.0) + 0.5;
  // round(v) with v = w_n n in [0, n]: torch.ao's fake quantization with scale 1 rounds half to
  // even and passes the gradient straight through inside [0, n].
  const Tensor q = ao::fake_quantize_per_tensor_affine(wn * static_cast<double>(n), 1.0, 0, 0, n);
  return q * (2.0 / static_cast<double>(n)) - 1.0;
}

}  // namespace qgrad::learnable
