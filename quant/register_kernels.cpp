// The quant layer's kernels (fake quantizers, observers, calibrators) for each device this build
// has, and the catalogue of its user-facing ops with the kernel tables each runs on (what
// supports() answers for and what the cross-device test iterates over). Functions are named as in
// their headers, qualified where the bare name is ambiguous (horizon., aimet.); observers and
// calibrators by their class names, as their errors name them. Composites of other ops are not
// listed, as in ops/register_kernels.cpp.
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
#include "quant/torch_ao/fake_quantize_kernels.h"
#include "quant/torch_ao/fused_obs_fake_quant_kernels.h"

namespace qgrad {

namespace {

void register_cpu_kernels(KernelRegistry& r) {
  ao::register_fake_quantize_cpu_kernels(r);
  ao::register_fused_obs_fake_quant_cpu_kernels(r);
  ao::register_aminmax_cpu_kernels(r);
  ao::register_histc_cpu_kernels(r);
  horizon::register_horizon_fake_quantize_cpu_kernels(r);
  learnable::register_pact_cpu_kernels(r);
  learnable::register_lsq_cpu_kernels(r);
  learnable::register_learnable_clip_cpu_kernels(r);
  nvidia::register_tensor_quant_cpu_kernels(r);
  nvidia::register_block_quant_cpu_kernels(r);
  nvidia::register_calibrator_cpu_kernels(r);
  aimet::register_affine_quantize_cpu_kernels(r);
  aimet::register_minmax_encoding_cpu_kernels(r);
}

void add_torch_ao_ops(KernelRegistry& r) {
  r.add_op("fake_quantize_per_tensor_affine",
           {"torch_ao.fake_quantize_per_tensor", "torch_ao.masked_gradient"});
  r.add_op("fake_quantize_per_channel_affine",
           {"torch_ao.fake_quantize_per_channel", "torch_ao.fake_quantize_per_channel_float_zp",
            "torch_ao.masked_gradient"});
  r.add_op("fused_moving_avg_obs_fake_quant",
           {"torch_ao.fused_moving_avg_obs_fake_quant", "torch_ao.masked_gradient"});
  r.add_op("fake_quantize_learnable_per_tensor_affine",
           {"torch_ao.fake_quantize_per_tensor", "torch_ao.learnable_per_tensor_backward"});
  r.add_op("fake_quantize_learnable_per_channel_affine",
           {"torch_ao.fake_quantize_per_channel", "torch_ao.learnable_per_channel_backward"});
  for (const char* op : {"MinMaxObserver", "MovingAverageMinMaxObserver"})
    r.add_op(op, {"observer.aminmax"});
  for (const char* op : {"PerChannelMinMaxObserver", "MovingAveragePerChannelMinMaxObserver"})
    r.add_op(op, {"observer.aminmax_per_channel"});
  r.add_op("HistogramObserver", {"observer.aminmax", "observer.histc"});
}

void add_horizon_ops(KernelRegistry& r) {
  r.add_op("horizon.fake_quantize",
           {"horizon.fake_quantize_per_tensor", "horizon.fake_quantize_per_channel",
            "torch_ao.masked_gradient"});
}

void add_learnable_ops(KernelRegistry& r) {
  for (const char* op : {"pact_clip", "pact_quantize"})
    r.add_op(op, {"learnable.pact_forward", "learnable.pact_backward"});
  for (const char* op : {"lsq_quantize", "lsq_plus_quantize"})
    r.add_op(op, {"learnable.lsq_forward", "learnable.lsq_backward"});
  r.add_op("lsq_init_scale", {"learnable.lsq_abs_sum"});
  r.add_op("lsq_plus_init_minmax", {"learnable.lsq_minmax"});
  r.add_op("learnable_clip", {"learnable.clip_forward", "learnable.clip_backward"});
  // pact_alpha_penalty and learnable_clip_amax are composites of ops (their ops are listed).
}

void add_nvidia_ops(KernelRegistry& r) {
  for (const char* op : {"tensor_quant", "fake_tensor_quant", "legacy_fake_tensor_quant"})
    r.add_op(op, {"nvidia.any_negative", "nvidia.amax_scales", "nvidia.int_quant",
                  "nvidia.clip_ste_backward"});
  r.add_op("fake_affine_tensor_quant", {"nvidia.affine_fake_quant", "nvidia.range_ste_backward"});
  for (const char* op : {"scaled_e4m3", "scaled_minifloat_quant"})
    r.add_op(op, {"nvidia.amax_scales", "nvidia.fp_scaled_quant", "nvidia.clip_ste_backward"});
  r.add_op("block_amax", {"nvidia.block_absmax"});
  // Every block format's kernels: which ones a call runs depends on its BlockQuantSpec.
  for (const char* op : {"block_fake_quant", "block_effective_amax", "BlockQuantizer"})
    r.add_op(op, {"nvidia.any_negative", "nvidia.block_absmax", "nvidia.amax_merge",
                  "nvidia.amax_scales", "nvidia.int_quant", "nvidia.fp_scaled_quant",
                  "nvidia.fp_divmul_quant", "nvidia.mx_scales", "nvidia.nvfp4_scales",
                  "nvidia.expand_blocks", "nvidia.clip_ste_backward"});
  r.add_op("MaxCalibrator", {"nvidia.any_negative", "nvidia.block_absmax", "nvidia.amax_merge"});
  r.add_op("HistogramCalibrator", {"nvidia.abs_stats", "nvidia.abs_histogram"});
}

void add_aimet_ops(KernelRegistry& r) {
  for (const char* op : {"aimet.quantize", "aimet.dequantize", "aimet.quantize_dequantize"})
    r.add_op(op, {"aimet.affine_forward", "aimet.affine_backward_dx", "aimet.affine_backward",
                  "aimet.affine_forward_strided", "aimet.affine_backward_strided"});
  r.add_op("aimet.ste_round", {"aimet.round_half_even"});
  // collect_stats is amin / amax (the ops layer's "reduce" table).
  r.add_op("aimet.MinMaxEncodingAnalyzer",
           {"reduce", "aimet.minmax_merge", "aimet.minmax_encodings"});
}

}  // namespace

void register_quant_kernels(KernelRegistry& r) {
  register_cpu_kernels(r);
  // No quant family has CUDA kernels yet: register_<family>_cuda_kernels are declared only.

  add_torch_ao_ops(r);
  add_horizon_ops(r);
  add_learnable_ops(r);
  add_nvidia_ops(r);
  add_aimet_ops(r);
}

}  // namespace qgrad
