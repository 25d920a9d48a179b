/// @file
/// Tensor creation: TensorOptions (dtype, device, requires_grad with chainable setters, as in
/// libtorch), constant fills, ranges, construction from host data, and random tensors drawn
/// from an explicit Generator.
#pragma once

#include <initializer_list>
#include <optional>
#include <vector>

#include "core/generator.h"
#include "core/tensor.h"

namespace qgrad {

/// How a creation function makes its tensor: dtype, device and requires_grad, set with chainable
/// setters.
struct TensorOptions {
  std::optional<DType> dtype_;  ///< unset: float32, or the element type for from_vector
  Device device_ = kCPU;        ///< where the tensor is allocated
  bool requires_grad_ = false;  ///< whether the new tensor is a leaf that requires grad

  /// Sets the dtype.
  TensorOptions& dtype(DType d) {
    dtype_ = d;
    return *this;
  }
  /// Sets the device.
  TensorOptions& device(Device d) {
    device_ = d;
    return *this;
  }
  /// Sets requires_grad.
  TensorOptions& requires_grad(bool r = true) {
    requires_grad_ = r;
    return *this;
  }
  /// The dtype, or `fallback` when none was set.
  DType dtype_or(DType fallback) const { return dtype_.value_or(fallback); }
};

/// An uninitialised tensor of `shape`.
Tensor empty(const Shape& shape, TensorOptions opts = {});
/// A tensor of `shape` filled with 0.
Tensor zeros(const Shape& shape, TensorOptions opts = {});
/// A tensor of `shape` filled with 1.
Tensor ones(const Shape& shape, TensorOptions opts = {});
/// A tensor of `shape` filled with `value`.
Tensor full(const Shape& shape, double value, TensorOptions opts = {});
Tensor scalar_tensor(double value, TensorOptions opts = {});  ///< 0-d
/// An uninitialised tensor with t's shape, dtype and device.
Tensor empty_like(const Tensor& t);
/// Zeros with t's shape, dtype and device.
Tensor zeros_like(const Tensor& t);
/// Ones with t's shape, dtype and device.
Tensor ones_like(const Tensor& t);
/// `value` everywhere, with t's shape, dtype and device.
Tensor full_like(const Tensor& t, double value);

/// [0, end) and [start, end) with step, like torch.arange: without an explicit dtype the result
/// is int64 when start, end and step are all integral, float32 otherwise. ceil((end-start)/step)
/// elements, element i = start + i * step.
Tensor arange(double end, TensorOptions opts = {});
/// [start, end) with step (see arange(double, TensorOptions)).
Tensor arange(double start, double end, double step = 1.0, TensorOptions opts = {});

/// From host values (converted to opts.dtype, which defaults to T's dtype), laid out in `shape`
/// as torch.tensor(data).view(shape) would: the default {-1} is 1-D of data.size() elements, one
/// -1 dim is inferred, and {} is 0-d (exactly one value). A count that does not fit the shape
/// throws ShapeError.
template <typename T>
Tensor from_vector(const std::vector<T>& data, const Shape& shape = {-1}, TensorOptions opts = {});
/// tensor({1, 2, 3}) -> float32 1-D (tensor({}) -> 1-D of 0 elements).
Tensor tensor(std::initializer_list<double> values, TensorOptions opts = {});

/// Random tensors; each call advances `gen`.
Tensor rand(const Shape& shape, Generator& gen, TensorOptions opts = {});   ///< U[0, 1)
Tensor randn(const Shape& shape, Generator& gen, TensorOptions opts = {});  ///< N(0, 1)
/// Uniform samples in [low, high).
Tensor uniform(const Shape& shape, double low, double high, Generator& gen,
               TensorOptions opts = {});
/// Normal samples with mean `mean` and standard deviation `std`.
Tensor normal(const Shape& shape, double mean, double std, Generator& gen, TensorOptions opts = {});
/// Integers in [low, high), default int64.
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, Generator& gen,
               TensorOptions opts = TensorOptions().dtype(DType::Int64));
/// 1 with probability p, else 0.
Tensor bernoulli(const Shape& shape, double p, Generator& gen, TensorOptions opts = {});
/// A random permutation of [0, n) (int64).
Tensor randperm(std::int64_t n, Generator& gen);

/// @cond
extern template Tensor from_vector<float>(const std::vector<float>&, const Shape&, TensorOptions);
extern template Tensor from_vector<double>(const std::vector<double>&, const Shape&, TensorOptions);
extern template Tensor from_vector<std::int8_t>(const std::vector<std::int8_t>&, const Shape&,
                                                TensorOptions);
extern template Tensor from_vector<std::uint8_t>(const std::vector<std::uint8_t>&, const Shape&,
                                                 TensorOptions);
extern template Tensor from_vector<std::int16_t>(const std::vector<std::int16_t>&, const Shape&,
                                                 TensorOptions);
extern template Tensor from_vector<std::int32_t>(const std::vector<std::int32_t>&, const Shape&,
                                                 TensorOptions);
extern template Tensor from_vector<std::int64_t>(const std::vector<std::int64_t>&, const Shape&,
                                                 TensorOptions);
/// @endcond

}  // namespace qgrad
