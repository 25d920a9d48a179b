/// @file
/// Parameter initialisers, as torch.nn.init: uniform_, normal_, constant_, zeros_, ones_,
/// kaiming_uniform_/kaiming_normal_ and xavier_uniform_/xavier_normal_, with fan and gain
/// computed exactly as PyTorch's _calculate_fan_in_and_fan_out and calculate_gain. All fill the
/// tensor in place under NoGradGuard (so they work on parameters that require grad), draw from
/// an explicit Generator, and return the tensor.
#pragma once

#include <cstdint>
#include <utility>

#include "core/generator.h"
#include "core/tensor.h"

namespace qgrad::nn::init {

/// The nonlinearities calculate_gain knows.
enum class Nonlinearity {
  Linear,
  Conv1D,
  Conv2D,
  Conv3D,
  ConvTranspose1D,
  ConvTranspose2D,
  ConvTranspose3D,
  Sigmoid,
  Tanh,
  ReLU,
  LeakyReLU,
  SELU
};
/// Which fan kaiming initialisation scales by.
enum class FanMode { FanIn, FanOut };

/// The recommended gain for a nonlinearity; `param` is LeakyReLU's negative slope (PyTorch's
/// default 0.01 when not given). 1 for linear/conv/sigmoid, 5/3 for tanh, sqrt(2) for ReLU,
/// sqrt(2 / (1 + slope^2)) for LeakyReLU, 3/4 for SELU.
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
/// (fan_in, fan_out) = (size(1), size(0)) times the receptive field (product of dims 2..); throws
/// ValueError for fewer than 2 dims.
std::pair<std::int64_t, std::int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

/// Fills `tensor` with U(a, b) samples, in place; returns it.
Tensor uniform_(Tensor tensor, Generator& gen, double a = 0.0, double b = 1.0);
/// Fills `tensor` with N(mean, std^2) samples, in place; returns it.
Tensor normal_(Tensor tensor, Generator& gen, double mean = 0.0, double std = 1.0);
/// Fills `tensor` with `value`, in place; returns it.
Tensor constant_(Tensor tensor, double value);
/// Fills `tensor` with 0, in place; returns it.
Tensor zeros_(Tensor tensor);
/// Fills `tensor` with 1, in place; returns it.
Tensor ones_(Tensor tensor);

/// U(-bound, bound) with bound = gain * sqrt(3 / fan); `a` is the LeakyReLU slope used for the
/// gain (PyTorch's defaults: a = 0, fan_in, leaky_relu, i.e. gain sqrt(2)).
Tensor kaiming_uniform_(Tensor tensor, Generator& gen, double a = 0.0,
                        FanMode mode = FanMode::FanIn,
                        Nonlinearity nonlinearity = Nonlinearity::LeakyReLU);
/// N(0, std^2) with std = gain / sqrt(fan).
Tensor kaiming_normal_(Tensor tensor, Generator& gen, double a = 0.0, FanMode mode = FanMode::FanIn,
                       Nonlinearity nonlinearity = Nonlinearity::LeakyReLU);
/// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform_(Tensor tensor, Generator& gen, double gain = 1.0);
/// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(Tensor tensor, Generator& gen, double gain = 1.0);

}  // namespace qgrad::nn::init
