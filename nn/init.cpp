// torch.nn.init in C++: fan/gain arithmetic and in-place fills from an explicit Generator.
#include "nn/init.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"

namespace qgrad::nn::init {

namespace {

void check_floating(const char* op, const Tensor& t) {
  QGRAD_CHECK(t.defined(), ValueError, op, ": tensor is undefined");
  QGRAD_CHECK(is_floating(t.dtype()), DTypeError, op,
              ": expected a floating tensor (float32 or float64), got ", dtype_name(t.dtype()));
}

// Copies `values` (same shape, any device) into `t` without recording autograd.
Tensor fill_from(Tensor t, const Tensor& values) {
  NoGradGuard no_grad;
  t.copy_(values);
  return t;
}

TensorOptions like(const Tensor& t) {
  return TensorOptions().dtype(t.dtype()).device(t.device());
}

std::int64_t fan_for(const char* op, const Tensor& t, FanMode mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const std::int64_t fan = mode == FanMode::FanIn ? fan_in : fan_out;
  QGRAD_CHECK(fan > 0, ValueError, op, ": fan is 0 for a tensor of shape ", t.shape());
  return fan;
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case Nonlinearity::Linear:
    case Nonlinearity::Conv1D:
    case Nonlinearity::Conv2D:
    case Nonlinearity::Conv3D:
    case Nonlinearity::ConvTranspose1D:
    case Nonlinearity::ConvTranspose2D:
    case Nonlinearity::ConvTranspose3D:
    case Nonlinearity::Sigmoid:
      return 1.0;
    case Nonlinearity::Tanh:
      return 5.0 / 3;
    case Nonlinearity::ReLU:
      return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU:
      return std::sqrt(2.0 / (1 + param * param));
    case Nonlinearity::SELU:
      return 3.0 / 4;
  }
  throw ValueError("calculate_gain: unknown nonlinearity");
}

std::pair<std::int64_t, std::int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  QGRAD_CHECK(tensor.defined(), ValueError, "calculate_fan_in_and_fan_out: tensor is undefined");
  QGRAD_CHECK(tensor.dim() >= 2, ValueError,
              "calculate_fan_in_and_fan_out: fan in and fan out can not be computed for a tensor "
              "with fewer than 2 dimensions, got shape ",
              tensor.shape());
  std::int64_t receptive = 1;
  for (std::int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

Tensor uniform_(Tensor tensor, Generator& gen, double a, double b) {
  check_floating("uniform_", tensor);
  return fill_from(tensor, uniform(tensor.shape(), a, b, gen, like(tensor)));
}

Tensor normal_(Tensor tensor, Generator& gen, double mean, double std) {
  check_floating("normal_", tensor);
  return fill_from(tensor, normal(tensor.shape(), mean, std, gen, like(tensor)));
}

Tensor constant_(Tensor tensor, double value) {
  QGRAD_CHECK(tensor.defined(), ValueError, "constant_: tensor is undefined");
  NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
}

Tensor zeros_(Tensor tensor) {
  return constant_(std::move(tensor), 0.0);
}

Tensor ones_(Tensor tensor) {
  return constant_(std::move(tensor), 1.0);
}

Tensor kaiming_uniform_(Tensor tensor, Generator& gen, double a, FanMode mode,
                        Nonlinearity nonlinearity) {
  check_floating("kaiming_uniform_", tensor);
  if (tensor.numel() == 0) return tensor;  // PyTorch warns and returns
  const auto fan = fan_for("kaiming_uniform_", tensor, mode);
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, gen, -bound, bound);
}

Tensor kaiming_normal_(Tensor tensor, Generator& gen, double a, FanMode mode,
                       Nonlinearity nonlinearity) {
  check_floating("kaiming_normal_", tensor);
  if (tensor.numel() == 0) return tensor;
  const auto fan = fan_for("kaiming_normal_", tensor, mode);
  const double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
  return normal_(tensor, gen, 0.0, std);
}

Tensor xavier_uniform_(Tensor tensor, Generator& gen, double gain) {
  check_floating("xavier_uniform_", tensor);
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  QGRAD_CHECK(fan_in + fan_out > 0, ValueError, "xavier_uniform_: fan_in + fan_out is 0 for shape ",
              tensor.shape());
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double a = std::sqrt(3.0) * std;
  return uniform_(tensor, gen, -a, a);
}

Tensor xavier_normal_(Tensor tensor, Generator& gen, double gain) {
  check_floating("xavier_normal_", tensor);
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  QGRAD_CHECK(fan_in + fan_out > 0, ValueError, "xavier_normal_: fan_in + fan_out is 0 for shape ",
              tensor.shape());
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return normal_(tensor, gen, 0.0, std);
}

}  // namespace qgrad::nn::init
