// Building the model, transforms, optimiser and schedule from a TrainConfig.
#include "cli/training_factory.h"

#include <omp.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "cli/dataset_factory.h"
#include "cli/onnx_model.h"
#include "cli/usage_error.h"
#include "distributed/init.h"
#include "nn/data/resize_transforms.h"
#include "nn/models/zoo.h"
#include "nn/optim/adam.h"
#include "nn/optim/adamw.h"
#include "nn/optim/sgd.h"

namespace qgrad::cli {

namespace {

// a * b for schedule lengths in batches; a UsageError naming `key` instead of overflow (the
// config bounds keep real runs far from it, but a dataset can be of any size).
std::int64_t checked_product(std::int64_t a, std::int64_t b, const std::string& key) {
  std::int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p))
    throw UsageError(key + " (" + std::to_string(a) + ") x " + std::to_string(b) +
                     " batches per epoch does not fit in a 64-bit step count");
  return p;
}

// image_folder's evaluation geometry: the shorter side to data.resize, the centre image_size
// square (torchvision's ImageNet evaluation: Resize(256), CenterCrop(224)).
std::vector<std::shared_ptr<const data::Transform>> image_folder_eval_crop(const DataConfig& d) {
  return {std::make_shared<data::Resize>(d.resize),
          std::make_shared<data::CenterCrop>(d.image_size)};
}

}  // namespace

int compute_threads(const TrainConfig& config) {
  if (config.threads > 0) return static_cast<int>(config.threads);
  // Ranks that mpirun started on this machine share its cores (a rank bound to one core sees one).
  return std::max(1, omp_get_num_procs() / distributed::launched_local_size());
}

int use_compute_threads(const TrainConfig& config) {
  const int n = compute_threads(config);
  if (n > omp_get_num_procs()) {
    // Started together and kept until all are up, as an OpenMP team is.
    std::mutex mutex;
    std::condition_variable released;
    bool go = false;
    std::vector<std::thread> started;
    started.reserve(static_cast<std::size_t>(n) - 1);
    std::string failure;
    try {
      for (int i = 1; i < n; ++i)
        started.emplace_back([&] {
          std::unique_lock<std::mutex> lock(mutex);
          released.wait(lock, [&] { return go; });
        });
    } catch (const std::system_error& e) {
      failure = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      go = true;
    }
    released.notify_all();
    for (std::thread& t : started) t.join();
    if (!failure.empty())
      throw UsageError("threads: " + std::to_string(n) + " threads cannot run here (only " +
                       std::to_string(started.size() + 1) + " could start: " + failure +
                       "; a memory or process limit); use fewer (\"threads\" or --threads)");
  }
  omp_set_num_threads(n);
  return n;
}

bool background_loading(const TrainConfig& config) {
  if (config.data.prefetch) return *config.data.prefetch;
  if (config.data.workers > 1) return true;  // asked for workers: they run in the background
  return omp_get_num_procs() > compute_threads(config);
}

std::shared_ptr<nn::UnaryModule> build_model(const TrainConfig& config) {
  const DataShape shape = data_shape(config.data);
  if (!config.onnx.empty()) return onnx_model(config, shape);
  return nn::make_model(config.model, static_cast<std::uint64_t>(config.seed), shape.image,
                        shape.num_classes);
}

std::vector<std::shared_ptr<const data::Transform>> build_train_transforms(
    const TrainConfig& config, std::int64_t image_height, std::int64_t image_width) {
  std::vector<std::shared_ptr<const data::Transform>> t;
  const AugmentConfig& a = config.data.augment;
  const DataConfig& d = config.data;
  if (d.format == "image_folder") {
    if (a.random_resized_crop)
      t.push_back(std::make_shared<data::RandomResizedCrop>(d.image_size));
    else
      t = image_folder_eval_crop(d);
  }
  if (a.random_crop_padding > 0)
    t.push_back(
        std::make_shared<data::RandomCrop>(image_height, image_width, a.random_crop_padding));
  if (a.hflip) t.push_back(std::make_shared<data::RandomHorizontalFlip>(0.5));
  for (auto& n : build_eval_transforms(config)) t.push_back(n);
  return t;
}

std::vector<std::shared_ptr<const data::Transform>> build_eval_transforms(
    const TrainConfig& config) {
  const NormalizeConfig& n = config.data.normalize;
  std::vector<std::shared_ptr<const data::Transform>> t;
  if (config.data.format == "image_folder") t = image_folder_eval_crop(config.data);
  if (n.enabled) t.push_back(std::make_shared<data::Normalize>(n.mean, n.std));
  return t;
}

std::unique_ptr<optim::Optimizer> build_optimizer(const TrainConfig& config,
                                                  const std::vector<Tensor>& parameters) {
  const OptimizerConfig& o = config.optimizer;
  if (o.name == "sgd")
    return std::make_unique<optim::SGD>(parameters, optim::SGDOptions(o.lr)
                                                        .momentum(o.momentum)
                                                        .nesterov(o.nesterov)
                                                        .weight_decay(o.weight_decay));
  if (o.name == "adam")
    return std::make_unique<optim::Adam>(
        parameters,
        optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  if (o.name == "adamw")
    return std::make_unique<optim::AdamW>(parameters, optim::AdamWOptions(o.lr)
                                                          .betas({o.beta1, o.beta2})
                                                          .eps(o.eps)
                                                          .weight_decay(o.weight_decay));
  throw UsageError("optimizer.name: unknown optimizer \"" + o.name + "\"");
}

std::unique_ptr<optim::LRScheduler> build_scheduler(const TrainConfig& config,
                                                    optim::Optimizer& optimizer,
                                                    std::int64_t batches_per_epoch) {
  const ScheduleConfig& s = config.schedule;
  const std::int64_t total = checked_product(config.epochs, batches_per_epoch, "epochs");
  const std::int64_t warmup =
      s.warmup_steps > 0
          ? s.warmup_steps
          : checked_product(s.warmup_epochs, batches_per_epoch, "schedule.warmup_epochs");
  std::unique_ptr<optim::LRScheduler> main;
  if (s.name == "step") {
    main = std::make_unique<optim::StepLR>(
        optimizer, checked_product(s.step_size, batches_per_epoch, "schedule.step_size"), s.gamma);
  } else if (s.name == "multistep") {
    std::vector<std::int64_t> at;
    for (std::int64_t m : s.milestones) {
      const std::int64_t batch = checked_product(m, batches_per_epoch, "schedule.milestones");
      if (batch <= warmup)
        throw UsageError("schedule.milestones: epoch " + std::to_string(m) +
                         " is not after the warm-up (" + std::to_string(warmup) + " batches)");
      at.push_back(batch - warmup);
    }
    main = std::make_unique<optim::MultiStepLR>(optimizer, at, s.gamma);
  } else if (s.name == "cosine") {
    main = std::make_unique<optim::CosineAnnealingLR>(
        optimizer, std::max<std::int64_t>(1, total - warmup), s.eta_min);
  } else if (s.name != "constant") {
    throw UsageError("schedule.name: unknown schedule \"" + s.name + "\"");
  }
  if (warmup == 0) return main;
  if (!main) return std::make_unique<optim::LinearWarmup>(optimizer, s.warmup_start_factor, warmup);
  // SequentialLR resets the lr to initial_lr and undoes the initial steps of both parts.
  std::shared_ptr<optim::LRScheduler> warm;
  warm = std::make_shared<optim::LinearWarmup>(optimizer, s.warmup_start_factor, warmup);
  std::shared_ptr<optim::LRScheduler> rest = std::move(main);
  return std::make_unique<optim::SequentialLR>(
      optimizer, std::vector<std::shared_ptr<optim::LRScheduler>>{warm, rest},
      std::vector<std::int64_t>{warmup});
}

}  // namespace qgrad::cli
