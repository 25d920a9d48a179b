// oneDNN plumbing of the float inference layers (internal to deploy/float_inference): the shared
// CPU engine and per-thread stream (ops/dnnl's), running a primitive and waiting, a memory
// reordered into another layout, weights and bias memories, and dnnl::error rethrown as a qgrad
// Error naming the layer.
#pragma once

#include <dnnl.hpp>

#include <string>
#include <unordered_map>
#include <vector>

namespace qgrad::deploy {

// A convolution or inner product with what it was built for: the source and destination
// descriptors it reads and writes, its weights (in its own layout) and bias, its implementation.
struct FloatWeightedPrimitive {
  dnnl::primitive prim;
  dnnl::memory::desc src_md, dst_md;
  dnnl::memory weights, bias;
  std::string impl;
  // The input's buffer is read as src_md as it is (a dense image batch read as a matrix), without
  // a reorder.
  bool view_input = false;
};

}  // namespace qgrad::deploy

namespace qgrad::deploy::float_dnnl {

dnnl::engine& engine();
dnnl::stream& stream();

// Runs `prim` with `args` on the calling thread's stream and waits.
void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args);

// Runs `p` on `src` (reordered first when laid out otherwise than p.src_md, unless p.view_input)
// into `dst`, and waits.
void execute_weighted(const FloatWeightedPrimitive& p, const dnnl::memory& src,
                      const dnnl::memory& dst);

// `from` copied into a new memory of descriptor `to` (a reorder; a plain copy when equal).
dnnl::memory reordered(const dnnl::memory& from, const dnnl::memory::desc& to);

// A new float32 memory of the 1-D descriptor `md` holding `values` (zeros when empty).
dnnl::memory bias_memory(const dnnl::memory::desc& md, const std::vector<float>& values);

// `data`, laid out as `user`, reordered once into `target` (a primitive's weights_desc()).
dnnl::memory weights_memory(const dnnl::memory::desc& user, const std::vector<float>& data,
                            const dnnl::memory::desc& target);

// Runs f(); a dnnl::error becomes qgrad::Error("float inference: <layer>: oneDNN error ...").
[[noreturn]] void rethrow(const std::string& layer, const dnnl::error& e);
template <typename F>
auto guarded(const std::string& layer, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    rethrow(layer, e);
  }
}

}  // namespace qgrad::deploy::float_dnnl
