/// @file
/// Export of AIMET encodings to AIMET's JSON encodings file, in the 0.6.1 layout (tensor name ->
/// list of per-channel dicts with bitwidth, dtype "int", is_symmetric "True"/"False", min, max,
/// scale, offset) or the 1.0.0 layout (lists of dicts with name, enc_type PER_TENSOR /
/// PER_CHANNEL, dtype "INT", bw, is_sym, scale[], offset[]). Offsets are written in AIMET's file
/// convention, round(min / scale) (= offset + qmin: -128 for 8-bit symmetric), and min / max are
/// the represented range (offset + qmin) * scale, (offset + qmax) * scale.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "quant/aimet/affine_encoding.h"

namespace qgrad::aimet {

/// A tensor name and its encoding, one entry of the encodings file.
struct NamedEncoding {
  std::string name;         ///< the tensor's name in the file
  AffineEncoding encoding;  ///< its encoding
};

/// The layout of AIMET's encodings file (see the file comment).
enum class EncodingFileVersion { V0_6_1, V1_0_0 };

/// The encodings file as JSON: activation_encodings and param_encodings in the layout of version.
/// ValueError when an offset is not finite or too large to write exactly.
nlohmann::json encodings_to_json(const std::vector<NamedEncoding>& activation_encodings,
                                 const std::vector<NamedEncoding>& param_encodings,
                                 EncodingFileVersion version = EncodingFileVersion::V1_0_0);

/// Writes the JSON (indented) atomically; IOError on failure.
void save_encodings(const std::string& path, const std::vector<NamedEncoding>& activation_encodings,
                    const std::vector<NamedEncoding>& param_encodings,
                    EncodingFileVersion version = EncodingFileVersion::V1_0_0);

}  // namespace qgrad::aimet
