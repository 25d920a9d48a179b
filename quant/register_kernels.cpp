// The quant layer's kernels (fake quantizers, observers, calibrators) for each device this build
// has. The ops each table serves are named by its key beside its signature (*_kernels.h):
// functions as in their headers, qualified where the bare name is ambiguous (horizon., aimet.),
// observers and calibrators by their class names, as their errors name them. Composites of other
// ops (pact_alpha_penalty, learnable_clip_amax) are not listed.
#include "quant/register_kernels.h"

#include "quant/aimet/affine_quantize_kernels.h"
#include "quant/aimet/minmax_encoding_kernels.h"
#include "quant/horizon/horizon_fake_quantize_kernels.h"
#include "quant/learnable/learnable_clip_kernels.h"
#include "quant/learnable/lsq_kernels.h"
#include "quant/learnable/pact_kernels.h"
#include "quant/nvidia/block_quant_kernels.h"
#include "quant/nvidia/calibrator_kernels.h"
#include "quant/nvidia/tensor_quant_kernels.h"
#include "quant/observer/aminmax_kernels.h"
#include "quant/observer/histc_kernels.h"
#include "quant/observer/observer_kernels.h"
#include "quant/parameter_check_kernels.h"
#include "quant/torch_ao/fake_quantize_kernels.h"
#include "quant/torch_ao/fused_obs_fake_quant_kernels.h"

namespace qgrad {

void register_quant_kernels(KernelRegistry& r) {
  ao::register_fake_quantize_cpu_kernels(r);
  ao::register_fused_obs_fake_quant_cpu_kernels(r);
  ao::register_aminmax_cpu_kernels(r);
  ao::register_observer_cpu_kernels(r);
  ao::register_histc_cpu_kernels(r);
  horizon::register_horizon_fake_quantize_cpu_kernels(r);
  learnable::register_pact_cpu_kernels(r);
  learnable::register_lsq_cpu_kernels(r);
  learnable::register_learnable_clip_cpu_kernels(r);
  quant::register_parameter_check_cpu_kernels(r);
  nvidia::register_tensor_quant_cpu_kernels(r);
  nvidia::register_block_quant_cpu_kernels(r);
  nvidia::register_calibrator_cpu_kernels(r);
  aimet::register_affine_quantize_cpu_kernels(r);
  aimet::register_minmax_encoding_cpu_kernels(r);
#ifdef QGRAD_WITH_CUDA
  ao::register_fake_quantize_cuda_kernels(r);
  ao::register_fused_obs_fake_quant_cuda_kernels(r);
  ao::register_aminmax_cuda_kernels(r);
  ao::register_observer_cuda_kernels(r);
  horizon::register_horizon_fake_quantize_cuda_kernels(r);
  learnable::register_pact_cuda_kernels(r);
  learnable::register_lsq_cuda_kernels(r);
  learnable::register_learnable_clip_cuda_kernels(r);
  quant::register_parameter_check_cuda_kernels(r);
  nvidia::register_tensor_quant_cuda_kernels(r);
  nvidia::register_block_quant_cuda_kernels(r);
  nvidia::register_calibrator_cuda_kernels(r);
  aimet::register_affine_quantize_cuda_kernels(r);
  aimet::register_minmax_encoding_cuda_kernels(r);
#endif
}

}  // namespace qgrad
