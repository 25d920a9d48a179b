// FloatLayer: one step of a compiled float model (deploy::FloatInferenceModel), internal to
// deploy/float_inference (its users see float_model.h, free of oneDNN). Activations travel between
// layers as FloatActivation: a oneDNN memory in the layout the primitive that wrote it used
// (nChw16c for convolutions with a multiple of 16 channels, otherwise oneDNN's choice), so
// consecutive convolutions and pools run without reorders; only the model's input and output are
// plain NCHW / NC. Each layer builds its primitives on the first input of a given memory descriptor
// and keeps them (FloatPrimitiveCache). Layers are not thread-safe: one forward at a time.
#pragma once

#include <dnnl.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace qgrad::deploy {

struct FloatActivation {
  dnnl::memory mem;
  // false: the memory wraps the caller's input tensor, which no layer may write (a fused residual
  // sum accumulates in place only into an activation the model owns).
  bool owned = true;
};

class FloatLayer {
 public:
  virtual ~FloatLayer() = default;
  virtual FloatActivation forward(const FloatActivation& x) = 0;
  // The source layer's qualified name and what this layer computes, for logs.
  virtual std::string describe() const = 0;
  // oneDNN's name of the implementation that ran last (empty before the first forward).
  const std::string& impl_info() const { return impl_info_; }
  // (describe(), impl_info()) of this layer, or of each of its parts for a composite layer.
  virtual std::vector<std::pair<std::string, std::string>> implementations() const {
    return {{describe(), impl_info()}};
  }

 protected:
  std::string impl_info_;
};

// Primitives (or anything else) of one layer by the input's memory descriptor: a short list
// searched with memory::desc's operator== (exact: dims, type and layout), the oldest entry dropped
// past `capacity`. A model sees one or two input shapes (the batch and the last, partial batch).
template <typename Entry>
class FloatPrimitiveCache {
 public:
  template <typename Make>
  Entry& get(const dnnl::memory::desc& key, Make&& make) {
    for (auto& e : entries_)
      if (e.first == key) return *e.second;
    if (entries_.size() >= kCapacity) entries_.erase(entries_.begin());
    entries_.emplace_back(key, std::make_unique<Entry>(make()));
    return *entries_.back().second;
  }

 private:
  static constexpr std::size_t kCapacity = 16;
  std::vector<std::pair<dnnl::memory::desc, std::unique_ptr<Entry>>> entries_;
};

}  // namespace qgrad::deploy
