// torch.ao _LearnableFakeQuantize module (LSQ / LSQ+), with LSQ and min/max initialisation.
#include "quant/modules/learnable_fake_quantize.h"

#include <algorithm>
#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/repr_format.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/modules/fake_quantize.h"
#include "quant/modules/quant_repr.h"
#include "quant/modules/quantizer_device.h"
#include "quant/torch_ao/learnable_fake_quantize.h"

namespace qgrad::quant {

namespace {
const char* kName = "LearnableFakeQuantize";

Tensor flag1(bool on) {
  return full({1}, on ? 1 : 0, TensorOptions().dtype(kUInt8));
}
}  // namespace

const char* learnable_init_name(LearnableInit i) {
  switch (i) {
    case LearnableInit::Observer:
      return "observer";
    case LearnableInit::LSQ:
      return "lsq";
    case LearnableInit::MinMax:
      return "minmax";
  }
  return "?";
}

LearnableFakeQuantize::LearnableFakeQuantize(const LearnableFakeQuantizeConfig& config)
    : nn::UnaryModule(kName), config_(config) {
  const ObserverConfig& oc = config.observer;
  QGRAD_CHECK(oc.options.qscheme_ != ao::QScheme::PerChannelAffineFloatQParams, ValueError, kName,
              ": per_channel_affine_float_qparams is not supported");
  const bool per_channel = quant::is_per_channel(oc.kind);
  QGRAD_CHECK(per_channel == ao::is_per_channel(oc.options.qscheme_), ValueError, kName,
              ": observer ", observer_kind_name(oc.kind), " does not match qscheme ",
              ao::qscheme_name(oc.options.qscheme_));
  QGRAD_CHECK(per_channel == (config.channel_len > 0) &&
                  (config.channel_len > 0 || config.channel_len == -1),
              ValueError, kName,
              ": a per-channel observer needs channel_len > 0 and a per-tensor one channel_len "
              "-1, got ",
              config.channel_len);
  QGRAD_CHECK(std::isfinite(config.scale) && config.scale > 0, ValueError, kName,
              ": scale must be finite and > 0, got ", config.scale);
  QGRAD_CHECK(std::isfinite(config.zero_point), ValueError, kName,
              ": zero_point must be finite, got ", config.zero_point);
  auto observer = std::make_shared<Observer>(oc);
  QGRAD_CHECK(observer->quant_min() < observer->quant_max(), ValueError, kName,
              ": quant_min must be < quant_max, got [", observer->quant_min(), ", ",
              observer->quant_max(), "]");
  const std::int64_t n = per_channel ? config.channel_len : 1;
  scale_ = register_parameter("scale", full({n}, config.scale));
  zero_point_ = register_parameter("zero_point", full({n}, config.zero_point));
  observer_ = register_module("activation_post_process", observer);
  const bool learn_first = config.init != LearnableInit::Observer;
  fake_quant_enabled_ = register_buffer("fake_quant_enabled", flag1(true));
  static_enabled_ = register_buffer("static_enabled", flag1(!learn_first));
  learning_enabled_ = register_buffer("learning_enabled", flag1(learn_first));
  eps_ = register_buffer("eps", full({1}, oc.options.eps_, TensorOptions().dtype(kFloat32)));
  initialized_ = register_buffer("initialized", flag1(false));
  fake_quant_on_ = HostFlag(fake_quant_enabled_);
  static_on_ = HostFlag(static_enabled_);
  learning_on_ = HostFlag(learning_enabled_);
  initialized_on_ = HostFlag(initialized_);
}

LearnableFakeQuantize::Factory LearnableFakeQuantize::with_args(
    const LearnableFakeQuantizeConfig& config) {
  return [config] { return std::make_shared<LearnableFakeQuantize>(config); };
}

void LearnableFakeQuantize::copy_observer_qparams() {
  NoGradGuard no_grad;
  const ao::QParams qp = observer_->calculate_qparams();
  Tensor s = scale_, z = zero_point_;
  s.copy_(qp.scale);
  z.copy_(qp.zero_point.to(kFloat32));
  initialized_on_.set(true);
}

void LearnableFakeQuantize::set_process_group(std::shared_ptr<distributed::ProcessGroup> group) {
  observer_->set_process_group(group);
  SyncedStatistics::set_process_group(std::move(group));
}

void LearnableFakeQuantize::init_from_batch(const Tensor& x) {
  const char* op = "LearnableFakeQuantize (init)";
  // With a group every rank must agree before the collectives below: a rank whose batch is
  // unusable makes every rank raise.
  const bool bad_here = x.numel() == 0;
  QGRAD_CHECK(!any_rank(bad_here), ValueError, op, ": cannot initialise from an empty batch",
              bad_here ? "" : " (on another rank)");
  NoGradGuard no_grad;
  const Tensor xf = x.detach().to(kFloat64);
  Shape dims;
  if (is_per_channel()) {
    const std::int64_t rank = xf.dim();
    const std::int64_t ax = ch_axis() < 0 ? ch_axis() + rank : ch_axis();
    const bool bad_axis = !(ax >= 0 && ax < rank);
    QGRAD_CHECK(!any_rank(bad_axis), IndexError, op, ": ch_axis ", ch_axis(),
                " is out of range for an input of shape ", x.shape(),
                bad_axis ? "" : " (on another rank)");
    const bool bad_len = xf.size(ax) != scale_.numel();
    QGRAD_CHECK(!any_rank(bad_len), ShapeError, op, ": the input has ", xf.size(ax),
                " channels along axis ", ax, " but channel_len is ", scale_.numel(),
                bad_len ? "" : " (on another rank)");
    for (std::int64_t d = 0; d < rank; ++d)
      if (d != ax) dims.push_back(d);
  }
  auto reduce = [&](const Tensor& t, auto fn) {
    if (!is_per_channel()) return fn(t, Shape{}).reshape({1});
    if (dims.empty()) return t.clone();  // 1-D input: one element per channel
    return fn(t, dims).reshape({scale_.numel()});
  };
  const double qmin = static_cast<double>(quant_min()), qmax = static_cast<double>(quant_max());
  const double eps = eps_.item<double>();
  std::vector<double> s, z;
  if (config_.init == LearnableInit::LSQ) {
    std::vector<double> m;
    if (!statistics_synced()) {
      m = reduce(abs(xf), [](const Tensor& t, const Shape& d) {
            return mean(t, d);
          }).to_vector<double>();
    } else {
      // The global mean: the ranks' sums (and element counts, the last entry) summed.
      std::vector<double> sums = reduce(abs(xf), [](const Tensor& t, const Shape& d) {
                                   return sum(t, d);
                                 }).to_vector<double>();
      sums.push_back(static_cast<double>(xf.numel()) / static_cast<double>(sums.size()));
      reduce_sum(sums);
      const double count = sums.back();
      sums.pop_back();
      for (double v : sums) m.push_back(v / count);
    }
    for (double v : m) {
      s.push_back(std::max(2.0 * v / std::sqrt(qmax), eps));
      z.push_back(0.0);
    }
  } else {
    std::vector<double> lo =
        reduce(xf, [](const Tensor& t, const Shape& d) { return amin(t, d); }).to_vector<double>();
    std::vector<double> hi =
        reduce(xf, [](const Tensor& t, const Shape& d) { return amax(t, d); }).to_vector<double>();
    reduce_min_max(lo, hi);  // the global batch's (a no-op without a group)
    const bool symmetric = ao::is_symmetric(config_.observer.options.qscheme_);
    for (std::size_t i = 0; i < lo.size(); ++i) {
      const double mn = std::min(lo[i], 0.0), mx = std::max(hi[i], 0.0);
      QGRAD_CHECK(std::isfinite(mn) && std::isfinite(mx), ValueError, op,
                  ": the batch has non-finite values");
      const double sc =
          symmetric ? std::max(-mn, mx) / ((qmax - qmin) / 2) : (mx - mn) / (qmax - qmin);
      s.push_back(std::max(sc, eps));
      z.push_back(symmetric ? 0.0 : qmin - mn / s.back());
    }
  }
  const auto n = static_cast<std::int64_t>(s.size());
  Tensor sp = scale_, zp = zero_point_;
  sp.copy_(from_vector<double>(s, {n}));
  zp.copy_(from_vector<double>(z, {n}));
  initialized_on_.set(true);
}

bool LearnableFakeQuantize::runs_on(Device device) const {
  return device.is_cpu() || (device.is_cuda() && observer_->runs_on(device));
}

Tensor LearnableFakeQuantize::forward(const Tensor& x) {
  if (!runs_on(x.device())) require_cpu_quantizer_input(name(), x);
  if (static_enabled()) {
    observer_->forward(x.detach());
    copy_observer_qparams();
  } else {
    if (learning_enabled() && !is_initialized() && config_.init != LearnableInit::Observer)
      init_from_batch(x);
    NoGradGuard no_grad;
    Tensor s = scale_;
    // max(s, eps) with eps a tensor, clamp's bits, so the host reads nothing on a GPU.
    s.copy_(maximum(s.detach(), eps_.to(s.dtype())));
  }
  if (!fake_quant_enabled()) return x;
  if (ao::is_symmetric(config_.observer.options.qscheme_)) {
    NoGradGuard no_grad;
    Tensor z = zero_point_;
    z.zero_();
  }
  // The global batch's element count with a group (see the file comment).
  const std::int64_t numel = statistics_synced() ? x.numel() * process_group()->size() : x.numel();
  const double g = config_.use_grad_scaling ? ao::learnable_grad_factor(numel, quant_max()) : 1.0;
  // The parameters follow x's dtype (float64 gradchecks run on a model moved with to(kFloat64)).
  if (is_per_channel())
    return ao::fake_quantize_learnable_per_channel_affine(x, scale_, zero_point_, ch_axis(),
                                                          quant_min(), quant_max(), g);
  return ao::fake_quantize_learnable_per_tensor_affine(x, scale_, zero_point_, quant_min(),
                                                       quant_max(), g);
}

ao::QParams LearnableFakeQuantize::calculate_qparams() {
  NoGradGuard no_grad;
  Tensor s = scale_;
  s.copy_(clamp(s.detach(), eps_.item<double>(), std::nullopt));
  std::vector<std::int64_t> z;
  for (double v : zero_point_.to_vector<double>())
    z.push_back(static_cast<std::int64_t>(std::min<double>(
        std::max<double>(std::nearbyint(static_cast<float>(v)), static_cast<double>(quant_min())),
        static_cast<double>(quant_max()))));
  return {scale_.detach().to(kFloat32).clone(),
          from_vector<std::int64_t>(z, {static_cast<std::int64_t>(z.size())})};
}

void LearnableFakeQuantize::enable_param_learning() {
  toggle_qparam_learning(true);
  toggle_fake_quant(true);
  toggle_observer_update(false);
}
void LearnableFakeQuantize::enable_static_estimate() {
  toggle_qparam_learning(false);
  toggle_fake_quant(true);
  toggle_observer_update(true);
}
void LearnableFakeQuantize::enable_static_observation() {
  toggle_qparam_learning(false);
  toggle_fake_quant(false);
  toggle_observer_update(true);
}
void LearnableFakeQuantize::toggle_qparam_learning(bool on) {
  learning_on_.set(on);
  Tensor s = scale_, z = zero_point_;
  s.set_requires_grad(on);
  z.set_requires_grad(on);
}
void LearnableFakeQuantize::toggle_fake_quant(bool on) {
  fake_quant_on_.set(on);
}
void LearnableFakeQuantize::toggle_observer_update(bool on) {
  static_on_.set(on);
}
bool LearnableFakeQuantize::learning_enabled() const {
  return learning_on_.get();
}
bool LearnableFakeQuantize::static_enabled() const {
  return static_on_.get();
}
bool LearnableFakeQuantize::fake_quant_enabled() const {
  return fake_quant_on_.get();
}
bool LearnableFakeQuantize::is_initialized() const {
  return initialized_on_.get();
}

std::string LearnableFakeQuantize::extra_repr() const {
  const ao::ObserverOptions& o = config_.observer.options;
  return "fake_quant_enabled=" + values_repr(fake_quant_enabled_) +
         ", static_enabled=" + values_repr(static_enabled_) +
         ", learning_enabled=" + values_repr(learning_enabled_) +
         ", quant_min=" + std::to_string(quant_min()) +
         ", quant_max=" + std::to_string(quant_max()) +
         ", dtype=" + ao::quant_dtype_name(o.dtype_) + ", qscheme=" + ao::qscheme_name(o.qscheme_) +
         ", ch_axis=" + std::to_string(ch_axis()) +
         ", use_grad_scaling=" + nn::py_bool(config_.use_grad_scaling) +
         ", init=" + learnable_init_name(config_.init) + ", scale=" + values_repr(scale_) +
         ", zero_point=" + values_repr(zero_point_);
}

void LearnableFakeQuantize::start_calibration() {
  enable_static_observation();
}

void LearnableFakeQuantize::finish_calibration(const CalibrationOptions& options) {
  if (observer_has_data(*observer_)) {
    copy_observer_qparams();
  } else {
    QGRAD_CHECK(!options.strict, ValueError, kName,
                "::finish_calibration: the observer saw no data during calibration");
  }
  enable_param_learning();
}

}  // namespace qgrad::quant
