// The qgrad-native quantizer state file (`qgrad export --quantizers Q.json`, read back by
// `qgrad eval --quantizers Q.json`): every quantizer module of a quantized model under its
// qualified name ("0._input_quantizer"), with its family ("torch_ao", "nvidia", "lsq",
// "horizon", "aimet"), its module type, its settings (the configuration that shapes it: torch.ao's
// observer, dtype, qscheme and grid; pytorch_quantization's QuantDescriptor JSON; LSQ's grid and
// init; Horizon's dtype, rounding and saturation; AIMET's encoding shape, bitwidth and symmetry)
// and its state: every parameter and persistent buffer of the module and its observer or
// calibrator (scale, zero_point, amax, min / max, running statistics, enable switches), each
// {"dtype", "shape", "values"} with values exact (float32 and float64 written with enough digits
// to read back bit for bit; inf / -inf / nan as strings). That is what a checkpoint holds for the
// quantizers, so applying the file to a model quantized with the same recipe restores them
// exactly: apply_quantizer_state() checks that the model has the same quantizers (no more, no
// fewer), of the same type and settings, and loads each one's state strictly (lazily sized
// buffers take the file's shapes). Errors (ValueError, naming the file and the quantizer) leave
// the quantizers already applied changed: apply to a model you can rebuild. The file is written
// through a temporary file and a rename.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "nn/module.h"

namespace qgrad::quant {

inline constexpr const char kQuantizerStateFormat[] = "qgrad.quantizers";
inline constexpr int kQuantizerStateVersion = 1;

// ValueError when the model has no quantizer.
nlohmann::json quantizer_state_json(const nn::Module& model);
void save_quantizer_state(const nn::Module& model, const std::string& path);

// `what` names the source in errors ("quantizers 'q.json'"). Returns the quantizers restored.
std::size_t apply_quantizer_state(nn::Module& model, const nlohmann::json& file,
                                  const std::string& what);
// Reads `path` (IOError when missing or not JSON) and applies it.
std::size_t load_quantizer_state(nn::Module& model, const std::string& path);

}  // namespace qgrad::quant
