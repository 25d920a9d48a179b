/// @file
/// The quantized dtypes and quantization schemes of torch.ao observers, and PyTorch's rule for an
/// observer's integer range (torch.ao.quantization.utils.calculate_qmin_qmax): the dtype's full
/// range, halved by reduce_range, or a user range (which must contain 0, also halved by
/// reduce_range).
#pragma once

#include <cstdint>
#include <optional>

namespace qgrad::ao {

/// torch.ao's quantized dtypes (torch.qint8, quint8, qint32, quint4x2).
enum class QuantDType { QInt8, QUInt8, QInt32, QUInt4x2 };
/// torch.ao's quantization schemes (torch.per_tensor_affine, ...).
enum class QScheme {
  PerTensorAffine,
  PerTensorSymmetric,
  PerChannelAffine,
  PerChannelSymmetric,
  PerChannelAffineFloatQParams
};

const char* quant_dtype_name(QuantDType d);  ///< "qint8", ...
const char* qscheme_name(QScheme q);         ///< "per_tensor_affine", ...
bool is_per_channel(QScheme q);              ///< whether q is one of the per-channel schemes
bool is_symmetric(QScheme q);                ///< whether q is a symmetric scheme

/// An inclusive integer range of an observer.
struct QuantRange {
  std::int64_t quant_min = 0;    ///< lowest integer
  std::int64_t quant_max = 255;  ///< highest integer
};

/// quant_min and quant_max must be given together (or not at all); a user range must satisfy
/// quant_min <= 0 <= quant_max and quant_min < quant_max, and fit the dtype's bit range
/// (ValueError otherwise). Defaults: qint8 [-128,127] ([-64,63] reduced), quint8 [0,255]
/// ([0,127] reduced), qint32 [-2^31, 2^31-1], quint4x2 [0,15].
QuantRange calculate_qmin_qmax(std::optional<std::int64_t> quant_min,
                               std::optional<std::int64_t> quant_max, QuantDType dtype,
                               bool reduce_range);

}  // namespace qgrad::ao
