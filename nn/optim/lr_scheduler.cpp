// LR schedulers: torch 1.13's _LRScheduler machinery and the get_lr / _get_closed_form_lr of
// each scheduler, transcribed with Python's evaluation order.
#include "nn/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "core/factory.h"

namespace qgrad::optim {

namespace {

Tensor int_scalar(std::int64_t v) {
  return scalar_tensor(static_cast<double>(v), TensorOptions().dtype(kInt64));
}

Tensor double_list(const std::vector<double>& v) {
  return from_vector<double>(v, {static_cast<std::int64_t>(v.size())});
}

[[noreturn]] void throw_problems(const std::string& op, const std::vector<std::string>& problems) {
  std::ostringstream msg;
  msg << op << ": the state dict does not fit this scheduler:";
  for (const auto& p : problems) msg << "\n  " << p;
  throw ValueError(msg.str());
}

// Splits "schedulers.<i>.<rest>" entries by child index; other keys go to `own`.
std::vector<TensorDict> split_children(const TensorDict& dict, std::size_t n, TensorDict& own,
                                       std::vector<std::string>& problems) {
  std::vector<TensorDict> parts(n, TensorDict("scheduler state entry"));
  const std::string prefix = "schedulers.";
  for (const auto& it : dict) {
    if (it.key.compare(0, prefix.size(), prefix) != 0) {
      own.insert(it.key, it.value);
      continue;
    }
    const auto dot = it.key.find('.', prefix.size());
    const std::string idx = it.key.substr(prefix.size(), dot - prefix.size());
    std::size_t i = n;
    if (dot != std::string::npos && !idx.empty() && idx.size() < 6 &&
        std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; }))
      i = static_cast<std::size_t>(std::stoul(idx));
    if (i >= n) {
      problems.push_back("unexpected key '" + it.key + "'");
      continue;
    }
    parts[i].insert(it.key.substr(dot + 1), it.value);
  }
  return parts;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Base

LRScheduler::LRScheduler(Optimizer& optimizer, std::int64_t last_epoch) : optimizer_(&optimizer) {
  auto& groups = optimizer.param_groups();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (last_epoch == -1) {
      if (!groups[i].initial_lr) groups[i].initial_lr = groups[i].options().get_lr();
    } else {
      QGRAD_CHECK(groups[i].initial_lr.has_value(), ValueError,
                  "LRScheduler: param 'initial_lr' is not specified in param_groups[", i,
                  "] when resuming an optimizer (last_epoch=", last_epoch, ")");
    }
    base_lrs_.push_back(*groups[i].initial_lr);
  }
  last_epoch_ = last_epoch;
}

LRScheduler::LRScheduler(Optimizer& optimizer, Composite) : optimizer_(&optimizer) {}

void LRScheduler::initial_step() {
  step_count_ = 0;
  step();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> lrs;
  for (const auto& g : optimizer_->param_groups()) lrs.push_back(g.options().get_lr());
  return lrs;
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  auto& groups = optimizer_->param_groups();
  QGRAD_CHECK(lrs.size() == groups.size(), ValueError, name(), ": computed ", lrs.size(),
              " learning rates for ", groups.size(),
              " parameter groups (groups were added after the scheduler was created?)");
  for (std::size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
  last_lr_ = group_lrs();
}

void LRScheduler::step() {
  ++step_count_;
  ++last_epoch_;
  apply(get_lr());
}

void LRScheduler::step_to(std::int64_t epoch) {
  ++step_count_;
  last_epoch_ = epoch;
  apply(has_closed_form() ? closed_form_lr() : get_lr());
}

std::vector<double> LRScheduler::get_lr() {
  throw ValueError(name() + ": has no get_lr (a composite scheduler steps its children)");
}

TensorDict LRScheduler::state_dict() const {
  TensorDict out("scheduler state entry");
  out.insert("last_epoch", int_scalar(last_epoch_));
  out.insert("step_count", int_scalar(step_count_));
  out.insert("base_lrs", double_list(base_lrs_));
  out.insert("last_lr", double_list(last_lr_));
  return out;
}

void LRScheduler::load_state_dict(const TensorDict& dict) {
  const std::string op = name() + "::load_state_dict";
  const std::size_t groups = optimizer_->param_groups().size();
  std::vector<std::string> problems;
  const std::set<std::string> known = {"last_epoch", "step_count", "base_lrs", "last_lr"};
  for (const auto& it : dict)
    if (!known.count(it.key)) problems.push_back("unexpected key '" + it.key + "'");
  for (const auto& k : known) {
    const Tensor* t = dict.find(k);
    if (t == nullptr || !t->defined()) {
      problems.push_back("missing key '" + k + "'");
      continue;
    }
    const bool list = k == "base_lrs" || k == "last_lr";
    const auto expected = static_cast<std::int64_t>(list ? groups : 1);
    if (t->numel() != expected)
      problems.push_back("'" + k + "' holds " + std::to_string(t->numel()) + " values, expected " +
                         std::to_string(expected) + (list ? " (one per parameter group)" : ""));
  }
  if (!problems.empty()) throw_problems(op, problems);
  last_epoch_ = dict.at("last_epoch").item<std::int64_t>();
  step_count_ = dict.at("step_count").item<std::int64_t>();
  base_lrs_ = dict.at("base_lrs").to(kFloat64).to_vector<double>();
  last_lr_ = dict.at("last_lr").to(kFloat64).to_vector<double>();
}

// ---------------------------------------------------------------------------------------------
// StepLR

StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma, std::int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), step_size_(step_size), gamma_(gamma) {
  QGRAD_CHECK(step_size > 0, ValueError, "StepLR: step_size must be positive, got ", step_size);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (auto& lr : lrs) lr = lr * gamma_;
  return lrs;
}

std::vector<double> StepLR::closed_form_lr() const {
  std::vector<double> lrs;
  // Python's floor division.
  std::int64_t q = last_epoch_ / step_size_;
  if ((last_epoch_ % step_size_ != 0) && (last_epoch_ < 0)) --q;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(q)));
  return lrs;
}

// ---------------------------------------------------------------------------------------------
// MultiStepLR

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<std::int64_t> milestones, double gamma,
                         std::int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), gamma_(gamma) {
  for (auto m : milestones) ++milestones_[m];
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  auto it = milestones_.find(last_epoch_);
  if (it == milestones_.end()) return lrs;
  for (auto& lr : lrs) lr = lr * std::pow(gamma_, static_cast<double>(it->second));
  return lrs;
}

std::vector<double> MultiStepLR::closed_form_lr() const {
  // bisect_right over the sorted milestones with multiplicity.
  std::int64_t passed = 0;
  for (const auto& [m, count] : milestones_)
    if (m <= last_epoch_) passed += count;
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(passed)));
  return lrs;
}

// ---------------------------------------------------------------------------------------------
// CosineAnnealingLR

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t T_max, double eta_min,
                                     std::int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), T_max_(T_max), eta_min_(eta_min) {
  QGRAD_CHECK(T_max > 0, ValueError, "CosineAnnealingLR: T_max must be positive, got ", T_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  const double pi = M_PI;
  const double T = static_cast<double>(T_max_);
  const double e = static_cast<double>(last_epoch_);
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) {
    for (std::size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = eta_min_ + (base_lrs_[i] - eta_min_) * (1 + std::cos(e * pi / T)) / 2;
    return lrs;
  }
  if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {
    for (std::size_t i = 0; i < lrs.size(); ++i)
      lrs[i] = lrs[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(pi / T)) / 2;
    return lrs;
  }
  for (auto& lr : lrs)
    lr = (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) * (lr - eta_min_) + eta_min_;
  return lrs;
}

std::vector<double> CosineAnnealingLR::closed_form_lr() const {
  const double T = static_cast<double>(T_max_);
  const double e = static_cast<double>(last_epoch_);
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(M_PI * e / T)) / 2);
  return lrs;
}

// ---------------------------------------------------------------------------------------------
// LinearLR

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   std::int64_t total_iters, std::int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  // torch 1.13 accepts start_factor = 0 and then divides by zero on the second step; later
  // versions require start_factor > 0, and so does qgrad.
  QGRAD_CHECK(start_factor > 0 && start_factor <= 1, ValueError,
              "LinearLR: start_factor expected to be in (0, 1], got ", start_factor);
  QGRAD_CHECK(end_factor >= 0 && end_factor <= 1, ValueError,
              "LinearLR: end_factor expected to be in [0, 1], got ", end_factor);
  QGRAD_CHECK(total_iters > 0, ValueError, "LinearLR: total_iters must be positive, got ",
              total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (auto& lr : lrs) lr = lr * start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double d = end_factor_ - start_factor_;
  for (auto& lr : lrs)
    lr = lr * (1. + d / (static_cast<double>(total_iters_) * start_factor_ +
                         static_cast<double>(last_epoch_ - 1) * d));
  return lrs;
}

std::vector<double> LinearLR::closed_form_lr() const {
  const double progress = static_cast<double>(std::min(total_iters_, last_epoch_));
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(base * (start_factor_ + (end_factor_ - start_factor_) * progress /
                                              static_cast<double>(total_iters_)));
  return lrs;
}

// ---------------------------------------------------------------------------------------------
// SequentialLR

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<std::int64_t> milestones, std::int64_t last_epoch)
    : LRScheduler(optimizer, Composite{}),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  QGRAD_CHECK(!schedulers_.empty(), ValueError, "SequentialLR: expected at least one scheduler");
  for (std::size_t i = 0; i < schedulers_.size(); ++i) {
    QGRAD_CHECK(schedulers_[i] != nullptr, ValueError, "SequentialLR: scheduler ", i, " is null");
    QGRAD_CHECK(&schedulers_[i]->optimizer() == &optimizer, ValueError,
                "SequentialLR: expects all schedulers to belong to the same optimizer, but "
                "scheduler ",
                i, " (", schedulers_[i]->name(), ") belongs to a different one");
  }
  QGRAD_CHECK(milestones_.size() + 1 == schedulers_.size(), ValueError,
              "SequentialLR: expects one more scheduler than milestones, got ", schedulers_.size(),
              " schedulers and ", milestones_.size(), " milestones");
  QGRAD_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), ValueError,
              "SequentialLR: milestones must be sorted");
  last_epoch_ = last_epoch + 1;
  // Reset the learning rates to their initial values and undo the children's initial steps.
  auto& groups = optimizer.param_groups();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    QGRAD_CHECK(groups[i].initial_lr.has_value(), ValueError, "SequentialLR: param_groups[", i,
                "] has no initial_lr");
    groups[i].options().set_lr(*groups[i].initial_lr);
  }
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->initial_step();
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const auto idx = static_cast<std::size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_)
    s.step_to(0);
  else
    s.step();
  last_lr_ = s.get_last_lr();
}

TensorDict SequentialLR::state_dict() const {
  TensorDict out("scheduler state entry");
  out.insert("last_epoch", int_scalar(last_epoch_));
  out.insert("last_lr", double_list(last_lr_));
  for (std::size_t i = 0; i < schedulers_.size(); ++i)
    for (const auto& it : schedulers_[i]->state_dict())
      out.insert("schedulers." + std::to_string(i) + "." + it.key, it.value);
  return out;
}

namespace {

// Loads the composite's own keys and its children's, restoring everything if a child throws.
void load_composite(const std::string& op, const TensorDict& dict, std::size_t groups,
                    std::vector<std::shared_ptr<LRScheduler>>& children, std::int64_t& last_epoch,
                    std::vector<double>& last_lr) {
  std::vector<std::string> problems;
  TensorDict own("scheduler state entry");
  std::vector<TensorDict> parts = split_children(dict, children.size(), own, problems);
  for (const auto& it : own)
    if (it.key != "last_epoch" && it.key != "last_lr")
      problems.push_back("unexpected key '" + it.key + "'");
  const Tensor* le = own.find("last_epoch");
  const Tensor* lr = own.find("last_lr");
  if (le == nullptr || !le->defined() || le->numel() != 1)
    problems.push_back("missing or malformed key 'last_epoch'");
  if (lr == nullptr || !lr->defined() || lr->numel() != static_cast<std::int64_t>(groups))
    problems.push_back("missing key 'last_lr' or it does not hold one value per group");
  if (!problems.empty()) throw_problems(op, problems);
  std::vector<TensorDict> backup;
  for (auto& c : children) backup.push_back(c->state_dict());
  try {
    for (std::size_t i = 0; i < children.size(); ++i) children[i]->load_state_dict(parts[i]);
  } catch (...) {
    for (std::size_t i = 0; i < children.size(); ++i) children[i]->load_state_dict(backup[i]);
    throw;
  }
  last_epoch = le->item<std::int64_t>();
  last_lr = lr->to(kFloat64).to_vector<double>();
}

}  // namespace

void SequentialLR::load_state_dict(const TensorDict& dict) {
  load_composite(name() + "::load_state_dict", dict, optimizer_->param_groups().size(), schedulers_,
                 last_epoch_, last_lr_);
}

// ---------------------------------------------------------------------------------------------
// ChainedScheduler

namespace {
Optimizer& first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  QGRAD_CHECK(!schedulers.empty() && schedulers[0] != nullptr, ValueError,
              "ChainedScheduler: expected at least one scheduler");
  return schedulers[0]->optimizer();
}
}  // namespace

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : LRScheduler(first_optimizer(schedulers), Composite{}), schedulers_(std::move(schedulers)) {
  for (std::size_t i = 1; i < schedulers_.size(); ++i) {
    QGRAD_CHECK(schedulers_[i] != nullptr, ValueError, "ChainedScheduler: scheduler ", i,
                " is null");
    QGRAD_CHECK(&schedulers_[i]->optimizer() == optimizer_, ValueError,
                "ChainedScheduler: expects all schedulers to belong to the same optimizer, but "
                "scheduler ",
                i, " (", schedulers_[i]->name(), ") belongs to a different one");
  }
  last_epoch_ = 0;
  last_lr_ = group_lrs();
}

void ChainedScheduler::step() {
  for (auto& s : schedulers_) s->step();
  ++last_epoch_;
  last_lr_ = group_lrs();
}

TensorDict ChainedScheduler::state_dict() const {
  TensorDict out("scheduler state entry");
  out.insert("last_epoch", int_scalar(last_epoch_));
  out.insert("last_lr", double_list(last_lr_));
  for (std::size_t i = 0; i < schedulers_.size(); ++i)
    for (const auto& it : schedulers_[i]->state_dict())
      out.insert("schedulers." + std::to_string(i) + "." + it.key, it.value);
  return out;
}

void ChainedScheduler::load_state_dict(const TensorDict& dict) {
  load_composite(name() + "::load_state_dict", dict, optimizer_->param_groups().size(), schedulers_,
                 last_epoch_, last_lr_);
}

}  // namespace qgrad::optim
