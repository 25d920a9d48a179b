/// @file
/// Learning-rate schedulers, reproducing torch 1.13's torch.optim.lr_scheduler step for step
/// (the recursive "chainable" get_lr forms, and the closed forms where torch uses them, i.e.
/// inside SequentialLR at a milestone): StepLR, MultiStepLR, CosineAnnealingLR, LinearLR (and
/// LinearWarmup, LinearLR from start_factor up to 1), SequentialLR and ChainedScheduler.
///
/// As in PyTorch, constructing a scheduler records each group's initial_lr (if not yet set) and
/// performs the initial step, which already sets the epoch-0 learning rate on the optimiser;
/// call optimizer.step() then scheduler.step() once per epoch (or iteration). A scheduler keeps a
/// reference to its optimiser, which must outlive it. state_dict() holds the progress
/// (last_epoch, step count, base and last learning rates) as name -> Tensor for checkpoints.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/optim/optimizer.h"
#include "nn/ordered_dict.h"

namespace qgrad::optim {

/// Base of the learning-rate schedulers (see the file comment).
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advances one epoch and sets the new learning rate on every parameter group.
  virtual void step();
  /// The learning rates set by the latest step, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  /// The number of steps taken (the epoch of the latest learning rate).
  std::int64_t last_epoch() const { return last_epoch_; }
  /// The optimiser whose learning rates this scheduler sets.
  Optimizer& optimizer() const { return *optimizer_; }
  /// The scheduler's name ("StepLR", ...).
  virtual std::string name() const = 0;

  /// The progress (last_epoch, step count, base and last learning rates) as name -> Tensor.
  virtual TensorDict state_dict() const;
  /// Restores what state_dict() saved; throws ValueError listing every problem (unknown or
  /// missing keys, a different number of groups) without changing anything.
  virtual void load_state_dict(const TensorDict& dict);

 protected:
  /// The _LRScheduler constructor up to (not including) the initial step, which the concrete
  /// class performs at the end of its own constructor with initial_step().
  LRScheduler(Optimizer& optimizer, std::int64_t last_epoch);
  /// For composite schedulers, which set up their state themselves.
  struct Composite {};
  /// A scheduler of `optimizer` whose state the composite derived class sets up itself.
  LRScheduler(Optimizer& optimizer, Composite);

  /// The initial step, which sets the epoch-0 learning rates; called at the end of each concrete
  /// constructor.
  void initial_step();
  /// torch's step(epoch): jumps to `epoch`, using the closed form when the scheduler has one.
  void step_to(std::int64_t epoch);
  /// The chainable form: new learning rates from the current ones.
  virtual std::vector<double> get_lr();
  /// True when closed_form_lr() gives the rates at any epoch.
  virtual bool has_closed_form() const { return false; }
  /// The learning rates at last_epoch_ computed directly (when has_closed_form()).
  virtual std::vector<double> closed_form_lr() const { return {}; }
  /// The optimiser's current learning rates, one per group.
  std::vector<double> group_lrs() const;

  Optimizer* optimizer_;          ///< the optimiser (not owned)
  std::vector<double> base_lrs_;  ///< each group's initial_lr
  std::int64_t last_epoch_ = -1;  ///< the epoch of the current learning rates
  std::int64_t step_count_ = 0;   ///< steps taken, the initial step included
  std::vector<double> last_lr_;   ///< the rates set by the latest step

 private:
  void apply(const std::vector<double>& lrs);
  friend class SequentialLR;
};

/// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  /// Multiplies the rates by `gamma` every `step_size` epochs.
  StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1,
         std::int64_t last_epoch = -1);
  std::string name() const override { return "StepLR"; }

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form_lr() const override;

 private:
  std::int64_t step_size_;
  double gamma_;
};

/// lr *= gamma at each milestone (a milestone listed k times multiplies by gamma^k).
class MultiStepLR : public LRScheduler {
 public:
  /// Multiplies the rates by `gamma` at each epoch in `milestones`.
  MultiStepLR(Optimizer& optimizer, std::vector<std::int64_t> milestones, double gamma = 0.1,
              std::int64_t last_epoch = -1);
  std::string name() const override { return "MultiStepLR"; }

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form_lr() const override;

 private:
  std::map<std::int64_t, int> milestones_;  ///< epoch -> multiplicity
  double gamma_;
};

/// Cosine annealing from the base lr down to eta_min over T_max epochs (and back up after, as
/// torch's recursive form does).
class CosineAnnealingLR : public LRScheduler {
 public:
  /// Cosine annealing from the base rate down to `eta_min` over T_max epochs.
  CosineAnnealingLR(Optimizer& optimizer, std::int64_t T_max, double eta_min = 0.0,
                    std::int64_t last_epoch = -1);
  std::string name() const override { return "CosineAnnealingLR"; }

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form_lr() const override;

 private:
  std::int64_t T_max_;
  double eta_min_;
};

/// Multiplies the base lr by a factor going linearly from start_factor to end_factor over
/// total_iters steps, then constant.
class LinearLR : public LRScheduler {
 public:
  /// Scales the base rates linearly from start_factor to end_factor over total_iters epochs.
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           std::int64_t total_iters = 5, std::int64_t last_epoch = -1);
  std::string name() const override { return "LinearLR"; }

 protected:
  std::vector<double> get_lr() override;
  bool has_closed_form() const override { return true; }
  std::vector<double> closed_form_lr() const override;

 private:
  double start_factor_, end_factor_;
  std::int64_t total_iters_;
};

/// Linear warm-up: LinearLR from start_factor up to 1 over warmup_steps steps.
class LinearWarmup : public LinearLR {
 public:
  /// Rates rising linearly from start_factor times the base rate to the base rate over
  /// warmup_steps.
  LinearWarmup(Optimizer& optimizer, double start_factor, std::int64_t warmup_steps)
      : LinearLR(optimizer, start_factor, 1.0, warmup_steps) {}
  std::string name() const override { return "LinearWarmup"; }
};

/// Runs schedulers one after another, switching at the milestones (torch.optim.SequentialLR):
/// at a milestone the next scheduler restarts from epoch 0 in closed form.
class SequentialLR : public LRScheduler {
 public:
  /// Runs schedulers[i] from milestones[i - 1] on; the schedulers must share `optimizer`.
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<std::int64_t> milestones, std::int64_t last_epoch = -1);
  void step() override;
  std::string name() const override { return "SequentialLR"; }
  TensorDict state_dict() const override;
  void load_state_dict(const TensorDict& dict) override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<std::int64_t> milestones_;
};

/// Steps every scheduler each step so their effects multiply (torch.optim.ChainedScheduler).
/// last_epoch() counts the chained steps taken.
class ChainedScheduler : public LRScheduler {
 public:
  /// Steps every scheduler in `schedulers` at each step (their factors multiply).
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);
  void step() override;
  std::string name() const override { return "ChainedScheduler"; }
  TensorDict state_dict() const override;
  void load_state_dict(const TensorDict& dict) override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

}  // namespace qgrad::optim
