// Loading pretrained weights (the "pretrained" config key). The usual QAT flow trains in float
// first and then fine-tunes with fake quantization: the model state of a safetensors file
// initialises the float model before it is quantized. The file is either a qgrad checkpoint (its
// model section is used, and when `qgrad train` or `qgrad ptq` wrote it, its stored config must
// describe a model of the same kind) or a plain state dict (tensor names as the model's
// state_dict(), e.g. "0.weight", "1.running_mean"). A quantized checkpoint (`qgrad ptq`'s, or
// one of quantization-aware training) seeds QAT fine-tuning when the training recipe equals the
// checkpoint's recipe apart from "calibration": it is loaded into the already quantized model,
// quantizer state (amax, scale, zero point, observer statistics) included, and nothing is
// calibrated again. Loading is strict: every key of the model must be present with its shape,
// and no other key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "nn/module.h"
#include "nn/ordered_dict.h"
#include "quant/modules/quant_recipe.h"

namespace qgrad::cli {

// A pretrained file, read once.
struct PretrainedFile {
  std::string path;
  std::string op = "pretrained";  // what read it, the start of every error message
  TensorDict state;               // the model tensors
  bool checkpoint = false;        // a qgrad checkpoint (else a plain state dict)
  std::int64_t epoch = 0;         // the checkpoint's epoch
  std::string model;              // the zoo model its stored config names; empty when unknown
  nlohmann::json quant;           // its stored, normalised recipe; null for a float model
  nlohmann::json config;          // its whole stored training config; null when it has none
  bool quantized() const { return quant.is_object(); }
};

struct PretrainedInfo {
  std::size_t tensors = 0;
  bool checkpoint = false;  // a qgrad checkpoint (else a plain state dict)
  bool quantized = false;   // quantizer state loaded too
  std::int64_t epoch = 0;   // the checkpoint's epoch
};

// Reads `path`. IOError for a missing, unreadable or damaged file (a stored config or recipe
// that does not parse included); ValueError for a file without model tensors. Errors start with
// `op` ("pretrained: ...", "ptq: ...").
PretrainedFile read_pretrained(const std::string& path, const std::string& op = "pretrained");

// Loads `file` into `model` (of zoo model `model_name`). `training_quant` is the recipe of the
// run (nullopt for float training). A float file goes into the float model, before quantization;
// a quantized file (file.quantized()) goes into the model already quantized with
// `training_quant`, which must equal the file's recipe apart from "calibration" (compared as
// their JSON, so that the error names the first key that differs). ValueError
// naming the file for another model kind, a quantized file in float training or with another
// recipe (naming the first key that differs), or tensors that do not fit; the model is then
// unchanged, except that a strict load of a quantized file that does not fit may have sized
// the quantizers' still-empty buffers.
PretrainedInfo load_pretrained(nn::Module& model, const std::string& model_name,
                               const PretrainedFile& file,
                               const std::optional<quant::QuantRecipe>& training_quant);
// read_pretrained, then the above for float training.
PretrainedInfo load_pretrained(nn::Module& model, const std::string& model_name,
                               const std::string& path);
// "loaded 18 tensors from <path> (qgrad checkpoint, epoch 3)", "... (state dict)" or
// "... (quantized qgrad checkpoint, epoch 3: quantizer state loaded, no calibration)"
std::string describe(const PretrainedInfo& info, const std::string& path);

}  // namespace qgrad::cli
