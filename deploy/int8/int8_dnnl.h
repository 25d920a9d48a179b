// oneDNN plumbing of the int8 layers (included by their .cpp files only, so the public headers of
// deploy/int8 stay free of oneDNN): the CPU engine and per-thread stream, descriptors of qgrad
// tensors (their dims and element strides, so the NHWC views the layers write are described as
// they are), new NHWC activations, and dnnl::error rethrown as a qgrad Error naming the layer.
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace qgrad::quant::int8_dnnl {

dnnl::engine& engine();
// oneDNN streams are not thread-safe: each calling thread gets its own in-order CPU stream.
dnnl::stream& stream();

dnnl::memory::data_type data_type(DType d);
dnnl::memory::dims dims(const Shape& s);
// `t` described exactly as laid out (dims and element strides).
dnnl::memory::desc desc_of(const Tensor& t);
// `t`'s data (no copy) as a dnnl::memory of descriptor `md`.
dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t);
// A new [N, C, H, W] tensor of `dtype` laid out as NHWC (channels innermost, the layout oneDNN's
// int8 convolutions read and write without reorders); 2-D shapes are plain row-major.
Tensor new_activation(const Shape& nchw, DType dtype);

// The int8 weights at `data` (laid out as `user`) reordered once into `target`, the layout the
// primitive chose. oneDNN takes a non-const handle; the reorder only reads it.
dnnl::memory reorder_weights(const dnnl::memory::desc& user, const std::int8_t* data,
                             const dnnl::memory::desc& target);
// A new float32 memory of `md` holding `values`.
dnnl::memory bias_memory(const dnnl::memory::desc& md, const std::vector<float>& values);
// Runs a convolution or inner product on src `x` -> dst `y` with its weights and bias, and waits;
// errors name `layer`.
void run_weighted(const std::string& layer, const dnnl::primitive& prim,
                  const dnnl::memory::desc& src_md, const Tensor& x, const dnnl::memory& weights,
                  const dnnl::memory& bias, const dnnl::memory::desc& dst_md, const Tensor& y);

// Runs f(); a dnnl::error becomes qgrad::Error("int8 <layer>: oneDNN error ...").
template <typename F>
auto guarded(const std::string& layer, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    throw Error("int8 " + layer + ": oneDNN error (status " + std::to_string(e.status) +
                "): " + e.what());
  }
}

}  // namespace qgrad::quant::int8_dnnl
