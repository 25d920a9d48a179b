// Observer modules: registration and syncing of the observer state classes' statistics.
#include "quant/modules/observer_module.h"

#include "core/autograd/grad_mode.h"
#include "quant/modules/lazy_buffer.h"
#include "quant/modules/quant_repr.h"
#include "quant/modules/quantizer_device.h"
#include "quant/observer/histogram_observer.h"
#include "quant/observer/minmax_observer.h"
#include "quant/observer/per_channel_minmax_observer.h"

namespace qgrad::quant {

const char* observer_kind_name(ObserverKind k) {
  switch (k) {
    case ObserverKind::MinMax:
      return "MinMaxObserver";
    case ObserverKind::MovingAverageMinMax:
      return "MovingAverageMinMaxObserver";
    case ObserverKind::PerChannelMinMax:
      return "PerChannelMinMaxObserver";
    case ObserverKind::MovingAveragePerChannelMinMax:
      return "MovingAveragePerChannelMinMaxObserver";
    case ObserverKind::Histogram:
      return "HistogramObserver";
  }
  return "?";
}

bool is_per_channel(ObserverKind k) {
  return k == ObserverKind::PerChannelMinMax || k == ObserverKind::MovingAveragePerChannelMinMax;
}

std::unique_ptr<ao::UniformQuantizationObserver> ObserverConfig::make() const {
  switch (kind) {
    case ObserverKind::MinMax:
      return std::make_unique<ao::MinMaxObserver>(options);
    case ObserverKind::MovingAverageMinMax:
      return std::make_unique<ao::MovingAverageMinMaxObserver>(averaging_constant, options);
    case ObserverKind::PerChannelMinMax:
      return std::make_unique<ao::PerChannelMinMaxObserver>(ch_axis, options);
    case ObserverKind::MovingAveragePerChannelMinMax:
      return std::make_unique<ao::MovingAveragePerChannelMinMaxObserver>(averaging_constant,
                                                                         ch_axis, options);
    case ObserverKind::Histogram:
      return std::make_unique<ao::HistogramObserver>(bins, upsample_rate, options);
  }
  throw ValueError("ObserverConfig::make: unknown observer kind");
}

Observer::Observer(const ObserverConfig& config)
    : nn::UnaryModule(observer_kind_name(config.kind)), config_(config), observer_(config.make()) {
  const std::vector<Tensor*> handles = state_handles();
  const char* names[] = {"eps", "min_val", "max_val", "histogram"};
  for (std::size_t i = 0; i < handles.size(); ++i)
    registered_.push_back(register_buffer(names[i], *handles[i]));
  min_val_ = registered_[1];
  max_val_ = registered_[2];
}

std::vector<Tensor*> Observer::state_handles() {
  std::vector<Tensor*> h{&observer_->eps(), &observer_->min_val(), &observer_->max_val()};
  if (auto* hist = dynamic_cast<ao::HistogramObserver*>(observer_.get()))
    h.push_back(&hist->histogram());
  return h;
}

// The state classes replace some tensors (per-channel statistics, the histogram) instead of
// writing into them; the registered buffers take the new values so state_dict() sees them.
void Observer::sync() {
  const std::vector<Tensor*> handles = state_handles();
  for (std::size_t i = 0; i < handles.size(); ++i) sync_buffer(registered_[i], *handles[i]);
}

bool Observer::runs_on(Device device) const {
  return device.is_cpu() || (device.is_cuda() && config_.kind != ObserverKind::Histogram);
}

Tensor Observer::forward(const Tensor& x) {
  if (x.defined() && !runs_on(x.device())) require_cpu_quantizer_input(name(), x);
  {
    NoGradGuard no_grad;
    observer_->forward(x.detach());
  }
  sync();
  return x;
}

void Observer::set_process_group(std::shared_ptr<distributed::ProcessGroup> group) {
  observer_->set_process_group(group);
  SyncedStatistics::set_process_group(std::move(group));
}

ao::QParams Observer::calculate_qparams() const {
  return observer_->calculate_qparams();
}

void Observer::reset_min_max_vals() {
  observer_->reset_min_max_vals();
  sync();
}

std::string Observer::extra_repr() const {
  return "min_val=" + values_repr(min_val_) + ", max_val=" + values_repr(max_val_);
}

}  // namespace qgrad::quant
