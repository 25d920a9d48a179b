// FloatInferenceModel: the float32 inference model deploy::compile_inference builds from an
// nn::Module, a chain of float layers on oneDNN (batch norms folded, activations and residual
// adds fused, activations in oneDNN's preferred layouts between layers; float_layer.h).
// forward() takes the float32 input the module takes ([N, C, H, W]) and returns what the module's
// eval-mode forward returns, contiguous, up to float rounding (compile_inference.h states the
// tolerance). No autograd graph is built and nothing is saved for a backward pass.
// implementations() lists every layer with the oneDNN implementation that ran it last. Not
// thread-safe: one forward at a time. This header is free of oneDNN.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace qgrad::deploy {

class FloatLayer;

struct FloatLayerInfo {
  std::string layer;  // FloatLayer::describe()
  std::string impl;   // FloatLayer::impl_info(); empty before the first forward
};

class FloatInferenceModel {
 public:
  FloatInferenceModel();
  ~FloatInferenceModel();
  FloatInferenceModel(FloatInferenceModel&&) noexcept;
  FloatInferenceModel& operator=(FloatInferenceModel&&) noexcept;

  void append(std::unique_ptr<FloatLayer> layer);
  Tensor forward(const Tensor& x);
  std::vector<FloatLayerInfo> implementations() const;
  std::size_t num_layers() const { return layers_.size(); }

 private:
  std::vector<std::unique_ptr<FloatLayer>> layers_;
};

}  // namespace qgrad::deploy
