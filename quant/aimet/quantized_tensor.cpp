// QuantizedTensor / DequantizedTensor conversions and the integer representation.
#include "quant/aimet/quantized_tensor.h"

#include <cmath>
#include <limits>

#include "core/factory.h"

namespace qgrad::aimet {

QuantizedTensor::QuantizedTensor(Tensor data, AffineEncoding encoding)
    : data_(std::move(data)), encoding_(std::move(encoding)) {
  QGRAD_CHECK(data_.defined() && is_floating(data_.dtype()), DTypeError,
              "aimet.QuantizedTensor: data must be a floating tensor");
}

DequantizedTensor QuantizedTensor::dequantize() const {
  return DequantizedTensor(encoding_.dequantize(data_), encoding_);
}

Tensor QuantizedTensor::quantized_repr() const {
  const DType dt = encoding_.dtype();
  const std::vector<double> v = data_.detach().to_vector<double>();
  const double lo = static_cast<double>(encoding_.qmin()),
               hi = static_cast<double>(encoding_.qmax());
  for (std::size_t i = 0; i < v.size(); ++i)
    QGRAD_CHECK(std::isfinite(v[i]) && v[i] == std::floor(v[i]) && v[i] >= lo && v[i] <= hi,
                ValueError, "aimet.QuantizedTensor.quantized_repr: element ", i, " = ", v[i],
                " is not an integer of the grid [", lo, ", ", hi, "]");
  Tensor out = empty(data_.shape(), TensorOptions().dtype(dt));
  QGRAD_DISPATCH_ALL(dt, "aimet.QuantizedTensor.quantized_repr", [&] {
    const double tmax = static_cast<double>(std::numeric_limits<scalar_t>::max());
    for (std::size_t i = 0; i < v.size(); ++i)
      QGRAD_CHECK(v[i] <= tmax, ValueError, "aimet.QuantizedTensor.quantized_repr: element ", i,
                  " = ", v[i], " does not fit the encoding's dtype ", dtype_name(dt),
                  " (AIMET represents unsigned grids of 16 or more bits as int32)");
    scalar_t* p = out.data_ptr<scalar_t>();
    // + 0.0 turns -0.0 into 0 before the conversion (values are exact integers).
    for (std::size_t i = 0; i < v.size(); ++i) p[i] = static_cast<scalar_t>(v[i] + 0.0);
  });
  return out;
}

DequantizedTensor::DequantizedTensor(Tensor data, AffineEncoding encoding)
    : data_(std::move(data)), encoding_(std::move(encoding)) {
  QGRAD_CHECK(data_.defined() && is_floating(data_.dtype()), DTypeError,
              "aimet.DequantizedTensor: data must be a floating tensor");
}

QuantizedTensor DequantizedTensor::quantize() const {
  return QuantizedTensor(encoding_.quantize(data_), encoding_);
}

Tensor DequantizedTensor::quantized_repr() const {
  return quantize().quantized_repr();
}

}  // namespace qgrad::aimet
