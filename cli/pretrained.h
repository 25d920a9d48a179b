// Loading pretrained weights (the "pretrained" config key): the model state of a safetensors
// file initialises the float model before it is quantized, the usual QAT flow of training in
// float first and then fine-tuning with fake quantization. The file is either a qgrad checkpoint
// (its model section is used, and when `qgrad train` wrote it, its stored config must describe a
// float model of the same kind) or a plain state dict (tensor names as the model's
// state_dict(), e.g. "0.weight", "1.running_mean"). Loading is strict: every key of the model
// must be present with its shape, and no other key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nn/module.h"

namespace qgrad::cli {

struct PretrainedInfo {
  std::size_t tensors = 0;
  bool checkpoint = false;  // a qgrad checkpoint (else a plain state dict)
  std::int64_t epoch = 0;   // the checkpoint's epoch
};

// Loads `path` into `model` (of zoo model `model_name`). IOError for a missing or unreadable
// file; ValueError naming the file and the keys for a file that does not fit the model or holds
// a quantized model. The model is unchanged when it throws.
PretrainedInfo load_pretrained(nn::Module& model, const std::string& model_name,
                               const std::string& path);
// "loaded 18 tensors from <path> (qgrad checkpoint, epoch 3)"
std::string describe(const PretrainedInfo& info, const std::string& path);

}  // namespace qgrad::cli
