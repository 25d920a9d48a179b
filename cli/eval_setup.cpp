// load_eval_setup and eval_test_loader: the checkpoint, config, model and test set of an
// evaluation.
#include "cli/eval_setup.h"

#include <omp.h>

#include <optional>

#include "cli/dataset_factory.h"
#include "cli/qat_setup.h"
#include "cli/stored_config.h"
#include "cli/training_factory.h"
#include "quant/modules/lazy_buffer.h"

namespace qgrad::cli {

EvalSetup load_checkpoint_model(const std::string& command, const std::string& checkpoint) {
  EvalSetup s;
  s.ckpt = serialize::load_checkpoint(checkpoint);
  s.config = stored_train_config(s.ckpt, command, checkpoint);
  // The same model as training built: quantized with the stored (normalised) recipe, then the
  // checkpoint's state, which also sizes the quantizers' lazily sized buffers.
  s.model = build_model(s.config);
  if (s.config.quant) {
    s.quantized = ", fake-quantized " + quantize_for_training(*s.model, *s.config.quant).family;
    s.has_recipe = true;
  }
  quant::load_quant_state_dict(*s.model, s.ckpt.model, /*strict=*/true);
  return s;
}

EvalSetup load_eval_setup(const std::string& command, const std::string& checkpoint,
                          const std::string& data_dir, std::int64_t batch_size,
                          std::int64_t threads) {
  EvalSetup s = load_checkpoint_model(command, checkpoint);
  TrainConfig& config = s.config;
  if (!data_dir.empty()) config.data.dir = data_dir;
  if (batch_size > 0) config.eval_batch_size = batch_size;
  config.threads = threads;  // this command's own --threads, not the training run's
  use_compute_threads(config);
  s.test_set = make_dataset(config.data, data::Split::Test);
  return s;
}

data::DataLoader eval_test_loader(const EvalSetup& s) {
  return data::DataLoader(s.test_set,
                          data::DataLoaderOptions()
                              .batch_size(s.config.eval_batch_size)
                              .prefetch(background_loading(s.config))
                              .workers(static_cast<int>(s.config.data.workers)),
                          build_eval_transforms(s.config));
}

}  // namespace qgrad::cli
