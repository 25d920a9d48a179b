// Argument validation shared by the quantization ops: quantization ranges, scales, zero points,
// channel axes and per-channel parameter vectors. Every check throws a qgrad error that names
// the op and the offending argument.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace qgrad::ao {

// quant_min <= quant_max (ValueError).
void check_quant_range(const char* op, std::int64_t quant_min, std::int64_t quant_max);
// scale finite and > 0 (ValueError).
void check_scale_value(const char* op, const char* arg, double scale);
// quant_min <= zero_point <= quant_max (ValueError).
void check_zero_point_value(const char* op, std::int64_t zero_point, std::int64_t quant_min,
                            std::int64_t quant_max);
// Returns axis normalised to [0, x.dim()) (IndexError when out of range or x is 0-d).
std::int64_t normalize_channel_axis(const char* op, const Tensor& x, std::int64_t axis);
// A per-channel parameter: 1-D with `channels` elements (ShapeError) of a floating dtype
// (DTypeError); returns its values.
std::vector<double> per_channel_floats(const char* op, const char* arg, const Tensor& t,
                                       std::int64_t channels);
// A parameter of x's floating dtype, on x's device, whose shape broadcasts to x when aligned at the
// trailing dims (AIMET / LSQ encoding shapes: [], [1], [C,1,1,1], ...). DTypeError / DeviceError /
// ShapeError.
void check_broadcast_param(const char* op, const char* arg, const Tensor& p, const Tensor& x);
// The checks of a device path whose qparams are tensors on x's device: a narrow range
// (|quant_min|, |quant_max| <= 2^23; ValueError: wider ones run on the CPU only), then scale and
// zero_point defined, on x's device (DeviceError) and of one element (axis < 0) or x.size(axis)
// elements in 1 dim (ShapeError).
void check_device_qparams(const char* op, const Tensor& x, const Tensor& scale,
                          const Tensor& zero_point, std::int64_t axis, std::int64_t quant_min,
                          std::int64_t quant_max);
// A one-element floating tensor (shape [] or [1]); returns its value.
double single_float(const char* op, const char* arg, const Tensor& t);

}  // namespace qgrad::ao
