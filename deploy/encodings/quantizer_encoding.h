// aimet_encoding_of: one qgrad quantizer as an AIMET affine encoding (scale, offset, bitwidth,
// symmetry; one entry per channel), derived exactly as the quantizer's family quantizes.
// AIMET's own AimetQuantizeDequantize gives its encoding (scale = (max - min) / (2^b - 1) in
// float32, offset from min). The integer-grid families go through quant/modules/qdq_params:
// torch.ao's stored scale / zero point, pytorch_quantization's amax / max_bound with zero point 0,
// LSQ's learned scale and rounded zero point; Horizon's scale with zero point 0. A grid
// [qmin, qmax] with zero point z becomes AIMET's grid of b = log2(qmax - qmin + 1) bits with
// file offset qmin - z (the represented values (k + offset) * scale, k in [0, 2^b - 1], are the
// family's (q - z) * scale); it is symmetric when that offset is -2^(b-1). A disabled quantizer
// has no encoding (nullopt), as AIMET leaves disabled quantizers out. ValueError naming `where`
// (the layer and the quantizer): FP8 and block quantization, dynamic or missing amax, an AIMET
// range never set, a grid whose size is not a power of two (narrow_range), per-channel
// parameters along an axis other than 0, grids wider than 8 bits for the families that go
// through qdq_params, unusable scales, and quantizer types without an integer grid.
#pragma once

#include <optional>
#include <string>

#include "nn/unary_module.h"
#include "quant/aimet/affine_encoding.h"

namespace qgrad::deploy {

std::optional<aimet::AffineEncoding> aimet_encoding_of(const nn::UnaryModule& quantizer,
                                                       const std::string& where);

}  // namespace qgrad::deploy
