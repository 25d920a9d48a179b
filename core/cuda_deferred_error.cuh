// The device side of core/cuda_deferred_error.h: how a kernel records the first error it finds.
#pragma once

#include <cstdint>

#include "core/cuda_deferred_error.h"

namespace qgrad::cuda {

// Records a class target out of range, unless an earlier error holds the slot: the first to
// claim it wins, so with several bad targets the message names one of them, not necessarily the
// first position (which the CPU's check names). The host reads the slot only after the kernel
// has finished, so plain stores suffice after the claim.
__device__ inline void report_class_target(CudaDeferredError* slot, DeferredErrorOp op,
                                           std::int64_t position, std::int64_t value,
                                           std::int64_t classes, std::int64_t ignore_index) {
  if (atomicCAS(&slot->claimed, 0, 1) != 0) return;
  slot->kind = DeferredErrorKind::ClassTargetOutOfRange;
  slot->op = op;
  slot->position = position;
  slot->value = value;
  slot->classes = classes;
  slot->ignore_index = ignore_index;
}

// Records running statistics of a quantizer for which low <= high fails (NaN), in `channel` (-1
// per tensor), unless an earlier error holds the slot.
__device__ inline void report_range_not_ordered(CudaDeferredError* slot, DeferredErrorOp op,
                                                std::int64_t channel, double low, double high) {
  if (atomicCAS(&slot->claimed, 0, 1) != 0) return;
  slot->kind = DeferredErrorKind::RangeNotOrdered;
  slot->op = op;
  slot->position = channel;
  slot->low = low;
  slot->high = high;
}

// The op's name for the host's message: a string literal, whose address stays valid.
__device__ inline void record_op_name(CudaDeferredError* slot, const char* op) {
  slot->op = DeferredErrorOp::Named;
  slot->name = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(op));
}

// Records qparams that a fake quantizer cannot use (qparams_usable fails) in `channel` (-1 per
// tensor), unless an earlier error holds the slot. `op` is a string literal.
__device__ inline void report_qparams_unusable(CudaDeferredError* slot, const char* op,
                                               std::int64_t channel, double scale,
                                               double zero_point, std::int64_t quant_min,
                                               std::int64_t quant_max) {
  if (atomicCAS(&slot->claimed, 0, 1) != 0) return;
  slot->kind = DeferredErrorKind::QParamsUnusable;
  record_op_name(slot, op);
  slot->position = channel;
  slot->low = scale;
  slot->high = zero_point;
  slot->value = quant_min;
  slot->classes = quant_max;
}

// Records a quantizer's parameter `which` (value `value`, at `index`) that breaks `rule`, unless
// an earlier error holds the slot. `op` is a string literal: the host prints it at its next wait.
__device__ inline void report_parameter_unusable(CudaDeferredError* slot, const char* op,
                                                 CheckedParameter which, ParameterRule rule,
                                                 std::int64_t index, double value) {
  if (atomicCAS(&slot->claimed, 0, 1) != 0) return;
  slot->kind = DeferredErrorKind::ParameterUnusable;
  record_op_name(slot, op);
  slot->position = index;
  slot->low = value;
  slot->value = static_cast<std::int64_t>(rule);
  slot->classes = static_cast<std::int64_t>(which);
}

}  // namespace qgrad::cuda
