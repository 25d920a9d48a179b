// The quant layer's kernels (fake quantizers, observers, calibrators) for each device this build
// has, and the catalogue of its user-facing ops with the kernel tables each runs on (what
// supports() answers for and what the cross-device test iterates over).
#include "core/dispatch.h"
#include "quant/horizon/horizon_fake_quantize_kernels.h"
#include "quant/learnable/learnable_clip_kernels.h"
#include "quant/learnable/lsq_kernels.h"
#include "quant/learnable/pact_kernels.h"
#include "quant/observer/aminmax_kernels.h"
#include "quant/observer/histc_kernels.h"
#include "quant/torch_ao/fake_quantize_kernels.h"

namespace qgrad {

void register_quant_kernels(KernelRegistry& r) {
  ao::register_fake_quantize_cpu_kernels(r);
  horizon::register_horizon_fake_quantize_cpu_kernels(r);
  learnable::register_learnable_clip_cpu_kernels(r);
  learnable::register_lsq_cpu_kernels(r);
  learnable::register_pact_cpu_kernels(r);
  ao::register_aminmax_cpu_kernels(r);
  ao::register_histc_cpu_kernels(r);
  // No quant family has CUDA kernels yet (register_<family>_cuda_kernels are declared only).

  r.add_op("fake_quantize_per_tensor_affine",
           {"torch_ao.fake_quantize_per_tensor", "torch_ao.masked_gradient"});
  r.add_op("fake_quantize_per_channel_affine",
           {"torch_ao.fake_quantize_per_channel", "torch_ao.masked_gradient"});
  r.add_op("fake_quantize_learnable_per_tensor_affine",
           {"torch_ao.fake_quantize_per_tensor", "torch_ao.learnable_per_tensor_backward"});
  r.add_op("fake_quantize_learnable_per_channel_affine",
           {"torch_ao.fake_quantize_per_channel", "torch_ao.learnable_per_channel_backward"});
  r.add_op("horizon.fake_quantize",
           {"horizon.fake_quantize_per_tensor", "horizon.fake_quantize_per_channel",
            "torch_ao.masked_gradient"});

  for (const char* op : {"pact_clip", "pact_quantize"})
    r.add_op(op, {"learnable.pact_forward", "learnable.pact_backward"});
  for (const char* op : {"lsq_quantize", "lsq_plus_quantize"})
    r.add_op(op, {"learnable.lsq_forward", "learnable.lsq_backward"});
  r.add_op("lsq_init_scale", {"learnable.lsq_abs_sum"});
  r.add_op("lsq_plus_init_minmax", {"learnable.lsq_minmax"});
  r.add_op("learnable_clip", {"learnable.clip_forward", "learnable.clip_backward"});
  // Composites of ops-layer kernels.
  r.add_op("pact_alpha_penalty", {"binary", "reduce"});
  r.add_op("learnable_clip_amax", {"unary", "unary_backward", "binary"});

  // Observers (by class name, as their errors name them): forward() reads the batch through these.
  for (const char* op : {"MinMaxObserver", "MovingAverageMinMaxObserver"})
    r.add_op(op, {"observer.aminmax"});
  for (const char* op : {"PerChannelMinMaxObserver", "MovingAveragePerChannelMinMaxObserver"})
    r.add_op(op, {"observer.aminmax_per_channel"});
  r.add_op("HistogramObserver", {"observer.aminmax", "observer.histc"});
}

}  // namespace qgrad
