// The float model of a checkpoint, for the commands that quantize a trained float model (`qgrad
// ptq`, `qgrad sensitivity`): the training config it was trained with, read from the checkpoint
// (or the defaults of a zoo model named on the command line for a plain state dict), checked to
// be a float model. The commands then apply their own data, batch and thread options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/pretrained.h"
#include "cli/train_config.h"

namespace qgrad::cli {

// `file` read with read_pretrained(path, op). `model` is the zoo model the user named, or the
// ONNX file (a path ending in ".onnx") a state dict was imported from (empty: the checkpoint's
// own; required for a plain state dict, checked against a checkpoint's).
// UsageError starting with `op` for a missing or mismatched model or a quantized checkpoint;
// IOError for a stored config that does not parse. The result has no "quant" and no "resume".
TrainConfig float_checkpoint_config(const PretrainedFile& file, const std::string& model,
                                    const std::string& op);

// The float model a command reads, with the command's own overrides.
struct FloatModelSource {
  std::string checkpoint;  // required
  std::string model;       // the zoo model or FILE.onnx of a plain state dict (checked otherwise)
  std::string data_dir;    // empty: the float run's data.dir
  std::int64_t batch_size = 0;  // calibration batch size; 0: the float run's
  std::int64_t threads = 0;     // 0: every core

  struct Loaded {
    PretrainedFile file;
    TrainConfig config;  // with the overrides applied
  };
  // read_pretrained + float_checkpoint_config + the overrides; also sets OpenMP's thread count.
  Loaded load(const std::string& op) const;
  // The command-line options that set these fields.
  static const std::vector<std::string>& option_names();
  // Sets the field of option `name` (one of option_names(); false for another name).
  // UsageError "<command>: ..." for a bad number.
  bool take_option(const std::string& command, const std::string& name, const std::string& value);
};

}  // namespace qgrad::cli
