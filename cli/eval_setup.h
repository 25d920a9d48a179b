// What `qgrad eval` and `qgrad verify-deploy` start from: a checkpoint written by `qgrad train` or
// `qgrad ptq`, its stored config with the command's overrides (data folder, batch size, threads,
// which also sets OpenMP's thread count), the model rebuilt from that config (quantized with the
// stored recipe for a quantization-aware checkpoint) with the checkpoint's state loaded strictly,
// and the test split with the config's evaluation transforms (normalisation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cli/train_config.h"
#include "nn/data/dataloader.h"
#include "nn/data/dataset.h"
#include "nn/serialize/checkpoint.h"
#include "nn/unary_module.h"

namespace qgrad::cli {

struct EvalSetup {
  serialize::Checkpoint ckpt;
  TrainConfig config;
  std::shared_ptr<nn::UnaryModule> model;
  std::string quantized;  // ", fake-quantized <family>" or ""
  bool has_recipe = false;
  std::shared_ptr<const data::Dataset> test_set;  // null from load_checkpoint_model
};

// The checkpoint, its stored config and the model rebuilt from it with the checkpoint's state
// (quantized with the stored recipe for a quantization-aware checkpoint): load_eval_setup
// without the data, for commands that only look at the model. `command` names it in errors.
EvalSetup load_checkpoint_model(const std::string& command, const std::string& checkpoint);

// `command` names the command in errors. data_dir empty, batch_size 0: the stored config's;
// threads 0: every core.
EvalSetup load_eval_setup(const std::string& command, const std::string& checkpoint,
                          const std::string& data_dir, std::int64_t batch_size,
                          std::int64_t threads);

// The test set in order, in batches of config.eval_batch_size, with the evaluation transforms.
data::DataLoader eval_test_loader(const EvalSetup& s);

}  // namespace qgrad::cli
