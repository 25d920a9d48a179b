// Optimizer base: parameter groups, per-parameter state and its flat state dict.
#include "nn/optim/optimizer.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "ops/device_check.h"

namespace qgrad::optim {

// ---------------------------------------------------------------------------------------------
// ParamGroup

ParamGroup::ParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}

ParamGroup::ParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
    : params_(std::move(params)), options_(std::move(options)) {}

ParamGroup::ParamGroup(const ParamGroup& other)
    : initial_lr(other.initial_lr),
      params_(other.params_),
      options_(other.options_ ? other.options_->clone() : nullptr) {}

ParamGroup& ParamGroup::operator=(const ParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
    initial_lr = other.initial_lr;
  }
  return *this;
}

OptimizerOptions& ParamGroup::options() {
  QGRAD_CHECK(options_ != nullptr, ValueError, "ParamGroup::options: the group has no options");
  return *options_;
}

const OptimizerOptions& ParamGroup::options() const {
  QGRAD_CHECK(options_ != nullptr, ValueError, "ParamGroup::options: the group has no options");
  return *options_;
}

// ---------------------------------------------------------------------------------------------
// Optimizer

Optimizer::Optimizer(std::unique_ptr<OptimizerOptions> defaults) : defaults_(std::move(defaults)) {
  QGRAD_CHECK(defaults_ != nullptr, ValueError, "Optimizer: default options are null");
}

void Optimizer::add_param_group(ParamGroup group) {
  const std::string op = name() + "::add_param_group";
  if (!group.has_options()) group.set_options(defaults_->clone());
  check_options(group.options());
  std::set<const TensorImpl*> seen;
  for (const auto& g : groups_)
    for (const auto& p : g.params()) seen.insert(p.impl());
  for (std::size_t i = 0; i < group.params().size(); ++i) {
    const Tensor& p = group.params()[i];
    QGRAD_CHECK(p.defined(), ValueError, op, ": parameter ", i, " of the group is undefined");
    QGRAD_CHECK(is_floating(p.dtype()), DTypeError, op, ": parameter ", i,
                " has non-floating dtype ", dtype_name(p.dtype()));
    QGRAD_CHECK(p.is_leaf(), ValueError, op, ": parameter ", i,
                " is not a leaf tensor; can't optimize a non-leaf tensor");
    QGRAD_CHECK(seen.insert(p.impl()).second, ValueError, op, ": parameter ", i,
                " appears more than once (within this group or in another group)");
  }
  groups_.push_back(std::move(group));
}

void Optimizer::zero_grad() {
  for (auto& g : groups_)
    for (auto& p : g.params())
      if (p.grad().defined()) p.set_grad(Tensor());
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const auto& g : groups_) out.insert(out.end(), g.params().begin(), g.params().end());
  return out;
}

const TensorDict* Optimizer::state(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

TensorDict& Optimizer::state_for(const Tensor& param) {
  auto it = state_.find(param.impl());
  if (it == state_.end()) it = state_.emplace(param.impl(), TensorDict("optimizer state")).first;
  return it->second;
}

void Optimizer::update_param(
    const Tensor& param, const std::function<void(const Tensor& p, const Tensor& g)>& fn) const {
  const std::string op = name() + "::step";
  const Tensor grad = param.grad();
  QGRAD_CHECK(grad.shape() == param.shape(), ShapeError, op, ": gradient shape ", grad.shape(),
              " does not match parameter shape ", param.shape());
  QGRAD_CHECK(grad.dtype() == param.dtype(), DTypeError, op, ": gradient dtype ",
              dtype_name(grad.dtype()), " does not match parameter dtype ",
              dtype_name(param.dtype()));
  check_same_device(op.c_str(), param, grad);
  NoGradGuard no_grad;
  const Tensor p = param.detach().contiguous();
  fn(p, grad.detach().contiguous());
  if (p.impl()->storage != param.impl()->storage)
    param.detach().copy_(p);
  else
    param.bump_version();
}

TensorDict Optimizer::state_dict() const {
  TensorDict out("optimizer state dict entry");
  std::int64_t index = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    for (const auto& [key, value] : groups_[g].options().items())
      out.insert(prefix + key, scalar_tensor(value, TensorOptions().dtype(kFloat64)));
    if (groups_[g].initial_lr)
      out.insert(prefix + "initial_lr",
                 scalar_tensor(*groups_[g].initial_lr, TensorOptions().dtype(kFloat64)));
    const auto n = static_cast<std::int64_t>(groups_[g].params().size());
    out.insert(prefix + "params", arange(static_cast<double>(index), static_cast<double>(index + n),
                                         1.0, TensorOptions().dtype(kInt64)));
    index += n;
  }
  index = 0;
  for (const auto& g : groups_) {
    for (const auto& p : g.params()) {
      if (const TensorDict* st = state(p))
        for (const auto& it : *st)
          out.insert("state." + std::to_string(index) + "." + it.key, it.value.detach());
      ++index;
    }
  }
  return out;
}

namespace {

// Parses a non-negative decimal index; false when `s` is not one.
bool parse_index(const std::string& s, std::size_t& out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  out = static_cast<std::size_t>(std::stoul(s));
  return true;
}

}  // namespace

void Optimizer::load_state_dict(const TensorDict& dict) {
  const std::string op = name() + "::load_state_dict";
  const std::vector<Tensor> params = parameters();
  const std::vector<std::string> allowed_state = state_keys();
  std::vector<std::string> problems;

  // New options per group and new state per parameter index, built before anything changes.
  std::vector<std::unique_ptr<OptimizerOptions>> new_options;
  std::vector<std::optional<double>> new_initial_lr(groups_.size());
  std::vector<bool> saw_params(groups_.size(), false);
  for (const auto& g : groups_) new_options.push_back(g.options().clone());
  std::vector<TensorDict> new_state(params.size(), TensorDict("optimizer state"));

  for (const auto& it : dict) {
    const std::string& key = it.key;
    const Tensor& v = it.value;
    if (!v.defined()) {
      problems.push_back("entry '" + key + "' is an undefined tensor");
      continue;
    }
    const auto dot1 = key.find('.');
    const auto dot2 = dot1 == std::string::npos ? std::string::npos : key.find('.', dot1 + 1);
    std::size_t idx = 0;
    if (dot2 == std::string::npos || !parse_index(key.substr(dot1 + 1, dot2 - dot1 - 1), idx)) {
      problems.push_back("unexpected key '" + key + "'");
      continue;
    }
    const std::string head = key.substr(0, dot1), field = key.substr(dot2 + 1);
    if (head == "param_groups") {
      if (idx >= groups_.size()) {
        problems.push_back("key '" + key + "' names group " + std::to_string(idx) + " but " +
                           name() + " has " + std::to_string(groups_.size()) + " groups");
        continue;
      }
      if (field == "params") {
        saw_params[idx] = true;
        const auto expected = static_cast<std::int64_t>(groups_[idx].params().size());
        if (v.dim() != 1 || v.numel() != expected)
          problems.push_back("group " + std::to_string(idx) + " holds " +
                             std::to_string(v.numel()) + " parameters in the state dict but " +
                             std::to_string(expected) + " in the optimizer");
        continue;
      }
      if (v.numel() != 1) {
        problems.push_back("option '" + key + "' must hold one value, got shape " +
                           shape_str(v.shape()));
        continue;
      }
      if (field == "initial_lr") {
        new_initial_lr[idx] = v.item<double>();
        continue;
      }
      try {
        new_options[idx]->set_item(field, v.item<double>());
      } catch (const ValueError& e) {
        problems.push_back(e.what());
      }
    } else if (head == "state") {
      if (idx >= params.size()) {
        problems.push_back("key '" + key + "' names parameter " + std::to_string(idx) + " but " +
                           name() + " has " + std::to_string(params.size()) + " parameters");
        continue;
      }
      if (std::find(allowed_state.begin(), allowed_state.end(), field) == allowed_state.end()) {
        problems.push_back("key '" + key + "': " + name() + " has no state named '" + field + "'");
        continue;
      }
      const Tensor& p = params[idx];
      if (field == "step") {
        if (v.numel() != 1) {
          problems.push_back("key '" + key + "' must hold one value, got shape " +
                             shape_str(v.shape()));
          continue;
        }
        new_state[idx].insert(field,
                              scalar_tensor(v.item<double>(), TensorOptions().dtype(kInt64)));
        continue;
      }
      if (v.shape() != p.shape()) {
        problems.push_back("size mismatch for '" + key + "': shape " + shape_str(v.shape()) +
                           " in the state dict, parameter shape " + shape_str(p.shape()));
        continue;
      }
      NoGradGuard no_grad;
      Tensor copy = v.detach().to(p.device()).to(p.dtype());
      if (copy.is_same(v) || copy.impl()->storage == v.impl()->storage) copy = copy.clone();
      new_state[idx].insert(field, copy.contiguous());
    } else {
      problems.push_back("unexpected key '" + key + "'");
    }
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    if (!saw_params[g])
      problems.push_back("missing key 'param_groups." + std::to_string(g) + ".params'");
    try {
      check_options(*new_options[g]);
    } catch (const Error& e) {
      problems.push_back("group " + std::to_string(g) + ": " + e.what());
    }
  }
  if (!problems.empty()) {
    std::ostringstream msg;
    msg << op << ": the state dict does not fit this optimizer:";
    for (const auto& p : problems) msg << "\n  " << p;
    throw ValueError(msg.str());
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].set_options(std::move(new_options[g]));
    groups_[g].initial_lr = new_initial_lr[g];
  }
  state_.clear();
  for (std::size_t i = 0; i < params.size(); ++i)
    if (!new_state[i].empty()) state_.emplace(params[i].impl(), std::move(new_state[i]));
}

}  // namespace qgrad::optim
