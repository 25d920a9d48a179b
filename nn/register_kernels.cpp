// The nn layer's kernels (optimiser updates, gradient clipping) for each device this build has.
#include "nn/register_kernels.h"

#include "nn/optim/optim_kernels.h"
#include "nn/utils/clip_grad_kernels.h"

namespace qgrad {

void register_nn_kernels(KernelRegistry& r) {
  optim::register_optim_cpu_kernels(r);
  nn::utils::register_clip_grad_cpu_kernels(r);
#ifdef QGRAD_WITH_CUDA
  optim::register_optim_cuda_kernels(r);
  nn::utils::register_clip_grad_cuda_kernels(r);
#endif
}

}  // namespace qgrad
