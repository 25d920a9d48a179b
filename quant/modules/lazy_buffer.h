/// @file
/// Buffers whose shape is only known after the first batch (per-channel observer statistics, the
/// scale of a per-channel FakeQuantize, a calibrated amax), as PyTorch resizes them in place.
/// rebind_buffer() swaps the data of a registered buffer for another tensor's inside the same
/// TensorImpl (what nn::Module::to does for devices), so every handle on the buffer, including
/// the module's registration, sees the new shape. A buffer not sized yet is empty (shape [0]).
/// load_quant_state_dict() first resizes such empty buffers to the shapes found in the state
/// dict, so a fresh quantized model can load a checkpoint written after calibration.
#pragma once

#include "core/tensor.h"
#include "nn/module.h"
#include "nn/ordered_dict.h"

namespace qgrad::quant {

/// dst takes src's values, shape and dtype (a contiguous private copy of src). dst must be a
/// defined tensor that does not require grad (a buffer); ValueError otherwise.
void rebind_buffer(const Tensor& dst, const Tensor& src);

/// Keeps `state` (a quantizer state class's own handle) and `registered` (the module's buffer)
/// the same tensor: when the state class replaced its handle with a new tensor, the registered
/// buffer takes its data and the state class's handle is pointed back at the buffer.
void sync_buffer(const Tensor& registered, Tensor& state);

/// For every buffer of `model` that is empty (numel 0) and has an entry of another shape in
/// `dict`: rebinds it to zeros of the entry's shape and dtype. Returns how many were resized.
std::size_t resize_empty_buffers(nn::Module& model, const TensorDict& dict);

/// resize_empty_buffers, then model.load_state_dict(dict, strict).
nn::LoadStateDictResult load_quant_state_dict(nn::Module& model, const TensorDict& dict,
                                              bool strict = true);

}  // namespace qgrad::quant
