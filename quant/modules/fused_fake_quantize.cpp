// torch.ao FusedMovingAvgObsFakeQuantize module: the state of the fused op and its enable flags.
#include "quant/modules/fused_fake_quantize.h"

#include <cmath>
#include <limits>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "quant/modules/lazy_buffer.h"
#include "quant/modules/quant_repr.h"
#include "quant/observer/aminmax_kernels.h"
#include "quant/torch_ao/fused_obs_fake_quant.h"
#include "quant/torch_ao/fused_obs_fake_quant_math.h"

namespace qgrad::quant {

namespace {
const char* kName = "FusedMovingAvgObsFakeQuantize";

// The fused configurations: only the observer differs from FakeQuantize's (no channel_len).
FakeQuantizeConfig fused_config(ObserverKind kind, ao::QuantDType dtype, ao::QScheme qscheme,
                                std::int64_t qmin, std::int64_t qmax, bool reduce_range) {
  return {observer_config(kind, dtype, qscheme, qmin, qmax, reduce_range), std::nullopt};
}
}  // namespace

FakeQuantizeConfig default_fused_act_fake_quant_config() {
  return fused_config(ObserverKind::MovingAverageMinMax, ao::QuantDType::QUInt8,
                      ao::QScheme::PerTensorAffine, 0, 255, false);
}
FakeQuantizeConfig default_fused_wt_fake_quant_config() {
  return fused_config(ObserverKind::MovingAverageMinMax, ao::QuantDType::QInt8,
                      ao::QScheme::PerTensorSymmetric, -128, 127, false);
}
FakeQuantizeConfig default_fused_per_channel_wt_fake_quant_config() {
  return fused_config(ObserverKind::MovingAveragePerChannelMinMax, ao::QuantDType::QInt8,
                      ao::QScheme::PerChannelSymmetric, -128, 127, false);
}
FakeQuantizeConfig default_qat_activation_config() {
  return fused_config(ObserverKind::MovingAverageMinMax, ao::QuantDType::QUInt8,
                      ao::QScheme::PerTensorAffine, 0, 255, true);
}
FakeQuantizeConfig default_qat_weight_config() {
  return default_fused_per_channel_wt_fake_quant_config();
}

FusedObserverState::FusedObserverState(const ObserverConfig& config)
    : nn::Module(observer_kind_name(config.kind)), config_(config), observer_(config.make()) {
  const bool per_channel = quant::is_per_channel(config.kind);
  eps_ = register_buffer("eps", observer_->eps().clone());
  const TensorOptions f32 = TensorOptions().dtype(kFloat32);
  const float inf = std::numeric_limits<float>::infinity();
  min_val_ = register_buffer("min_val", per_channel ? empty({0}, f32) : scalar_tensor(inf, f32));
  max_val_ = register_buffer("max_val", per_channel ? empty({0}, f32) : scalar_tensor(-inf, f32));
}

ao::QParams FusedObserverState::calculate_qparams() const {
  return observer_->calculate_qparams_from(min_val_, max_val_);
}

std::string FusedObserverState::extra_repr() const {
  return "min_val=" + values_repr(min_val_) + ", max_val=" + values_repr(max_val_);
}

FusedMovingAvgObsFakeQuantize::FusedMovingAvgObsFakeQuantize(const FakeQuantizeConfig& config)
    : nn::UnaryModule(kName), config_(config) {
  const ObserverKind k = config.observer.kind;
  QGRAD_CHECK(
      k == ObserverKind::MovingAverageMinMax || k == ObserverKind::MovingAveragePerChannelMinMax,
      ValueError, kName,
      ": the fused observer + fake quant only works with MovingAverageMinMaxObserver or "
      "MovingAveragePerChannelMinMaxObserver, got ",
      observer_kind_name(k));
  const ao::QScheme q = config.observer.options.qscheme_;
  QGRAD_CHECK(q != ao::QScheme::PerChannelAffineFloatQParams, ValueError, kName,
              ": per_channel_affine_float_qparams (float zero points) is not supported");
  const bool per_channel = quant::is_per_channel(k);
  QGRAD_CHECK(per_channel == ao::is_per_channel(q), ValueError, kName, ": observer ",
              observer_kind_name(k), " does not match qscheme ", ao::qscheme_name(q));
  QGRAD_CHECK(!per_channel || config.observer.ch_axis == 0, ValueError, kName,
              ": per-channel fake quantization is only supported on ch_axis 0 (as in PyTorch "
              "1.13), got ",
              config.observer.ch_axis);
  QGRAD_CHECK(!config.channel_len || (per_channel && *config.channel_len >= 1), ValueError, kName,
              ": channel_len needs a per-channel observer and must be >= 1");
  const TensorOptions i64 = TensorOptions().dtype(kInt64);
  fake_quant_enabled_ = register_buffer("fake_quant_enabled", ones({1}, i64));
  observer_enabled_ = register_buffer("observer_enabled", ones({1}, i64));
  const std::int64_t n = per_channel ? config.channel_len.value_or(0) : 1;
  scale_ = register_buffer("scale", ones({n}, TensorOptions().dtype(kFloat32)));
  zero_point_ = register_buffer("zero_point", zeros({n}, TensorOptions().dtype(kInt32)));
  observer_ = register_module("activation_post_process",
                              std::make_shared<FusedObserverState>(config.observer));
}

FusedMovingAvgObsFakeQuantize::Factory FusedMovingAvgObsFakeQuantize::with_args(
    const FakeQuantizeConfig& config) {
  return [config] { return std::make_shared<FusedMovingAvgObsFakeQuantize>(config); };
}

bool FusedMovingAvgObsFakeQuantize::is_per_channel() const {
  return quant::is_per_channel(config_.observer.kind);
}
bool FusedMovingAvgObsFakeQuantize::is_symmetric_quant() const {
  return ao::is_symmetric(config_.observer.options.qscheme_);
}
std::int64_t FusedMovingAvgObsFakeQuantize::ch_axis() const {
  return is_per_channel() ? config_.observer.ch_axis : -1;
}

Tensor FusedMovingAvgObsFakeQuantize::forward(const Tensor& x) {
  // One rank (the usual case) takes the fused op alone; with a group the statistics are updated
  // here from the global batch and the op only fake-quantizes.
  const bool observed = statistics_synced() && observe_global_batch(x);
  const Tensor observe_flag =
      observed ? zeros({1}, TensorOptions().dtype(kInt64).device(x.device())) : observer_enabled_;
  return ao::fused_moving_avg_obs_fake_quant(
      x, observe_flag, fake_quant_enabled_, observer_->min_val(), observer_->max_val(), scale_,
      zero_point_, averaging_constant(), quant_min(), quant_max(), ch_axis(), is_per_channel(),
      is_symmetric_quant());
}

bool FusedMovingAvgObsFakeQuantize::observe_global_batch(const Tensor& x) {
  static const KernelTable<ao::AminmaxIntoKernel>& aminmax = kernel_table(ao::kAminmaxIntoKernels);
  // The fused op reports these itself, the same way on every rank.
  if (!x.defined() || x.dtype() != kFloat32 || x.numel() == 0 || !observer_enabled()) return false;
  const bool per_channel = is_per_channel();
  if (per_channel && x.dim() < 1) return false;
  const std::int64_t n = per_channel ? x.size(0) : 1;
  const Tensor &rmin = observer_->min_val(), &rmax = observer_->max_val();
  const bool fresh = per_channel && rmin.numel() == 0 && rmax.numel() == 0;
  if (!fresh && (rmin.numel() != n || rmax.numel() != n)) return false;
  NoGradGuard no_grad;
  const TensorOptions f32 = TensorOptions().dtype(kFloat32).device(x.device());
  const Tensor bmin = empty({n}, f32), bmax = empty({n}, f32);
  aminmax(kName, x)(x.detach(), per_channel ? 0 : -1, bmin, bmax);
  std::vector<float> lo = bmin.to(kCPU).to_vector<float>(), hi = bmax.to(kCPU).to_vector<float>();
  reduce_min_max(lo, hi);
  // The fused op's update (fused_obs_fake_quant_math.h), from +inf / -inf for fresh statistics.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> m(static_cast<std::size_t>(n), inf), M(static_cast<std::size_t>(n), -inf);
  if (!fresh) {
    m = rmin.to(kCPU).to(kFloat32).contiguous().to_vector<float>();
    M = rmax.to(kCPU).to(kFloat32).contiguous().to_vector<float>();
  }
  const float c = static_cast<float>(averaging_constant());
  for (std::size_t i = 0; i < m.size(); ++i) {
    m[i] = ao::fused::moving_average(m[i], lo[i], c);
    M[i] = ao::fused::moving_average(M[i], hi[i], c);
  }
  const Shape shape = fresh ? Shape{n} : rmin.shape();
  const Tensor new_min = from_vector<float>(m, shape).to(rmin.dtype()).to(rmin.device());
  const Tensor new_max = from_vector<float>(M, shape).to(rmax.dtype()).to(rmax.device());
  if (fresh) {
    // As the fused op resizes fresh state: the statistics, and scale 1 / zero point 0.
    rebind_buffer(rmin, new_min);
    rebind_buffer(rmax, new_max);
    if (scale_.numel() != n) rebind_buffer(scale_, ones({n}, f32));
    if (zero_point_.numel() != n)
      rebind_buffer(zero_point_, zeros({n}, TensorOptions().dtype(kInt32).device(x.device())));
  } else {
    Tensor a = rmin, b = rmax;
    a.copy_(new_min);
    b.copy_(new_max);
  }
  return true;
}

ao::QParams FusedMovingAvgObsFakeQuantize::fake_quant_qparams(const std::string& op) const {
  const std::vector<float> mn = observer_->min_val().contiguous().to_vector<float>();
  const std::vector<float> mx = observer_->max_val().contiguous().to_vector<float>();
  QGRAD_CHECK(!mn.empty() && mn.size() == mx.size(), ValueError, op, ": ", kName,
              " has no running statistics (it saw no data)");
  std::vector<float> scale(mn.size());
  std::vector<std::int32_t> zero_point(mn.size());
  for (std::size_t i = 0; i < mn.size(); ++i) {
    // Formatted only for the error (QGRAD_CHECK evaluates its message lazily).
    const auto channel = [&] {
      return mn.size() > 1 ? " of channel " + std::to_string(i) : std::string();
    };
    QGRAD_CHECK(!(std::isinf(mn[i]) && std::isinf(mx[i]) && mn[i] > mx[i]), ValueError, op, ": ",
                kName, " has no running statistics", channel(), " (it saw no data)");
    QGRAD_CHECK(std::isfinite(mn[i]) && std::isfinite(mx[i]) && mn[i] <= mx[i], ValueError, op,
                ": ", kName, "'s running min ", mn[i], " and max ", mx[i], channel(),
                " do not make a range");
    const ao::fused::ChosenQParams q =
        ao::fused::choose_qparams(mn[i], mx[i], static_cast<std::int32_t>(quant_min()),
                                  static_cast<std::int32_t>(quant_max()), is_symmetric_quant());
    scale[i] = q.scale;
    zero_point[i] = q.zero_point;
  }
  const std::int64_t n = static_cast<std::int64_t>(mn.size());
  return {from_vector(scale, {n}), from_vector(zero_point, {n})};
}

void FusedMovingAvgObsFakeQuantize::enable_fake_quant(bool on) {
  fake_quant_enabled_.fill_(on ? 1 : 0);
}
void FusedMovingAvgObsFakeQuantize::enable_observer(bool on) {
  observer_enabled_.fill_(on ? 1 : 0);
}
bool FusedMovingAvgObsFakeQuantize::fake_quant_enabled() const {
  return fake_quant_enabled_.item<std::int64_t>() != 0;
}
bool FusedMovingAvgObsFakeQuantize::observer_enabled() const {
  return observer_enabled_.item<std::int64_t>() != 0;
}

std::string FusedMovingAvgObsFakeQuantize::extra_repr() const {
  const ao::ObserverOptions& o = config_.observer.options;
  return "fake_quant_enabled=" + values_repr(fake_quant_enabled_) +
         ", observer_enabled=" + values_repr(observer_enabled_) + ", scale=" + values_repr(scale_) +
         ", zero_point=" + values_repr(zero_point_) + ", dtype=" + ao::quant_dtype_name(o.dtype_) +
         ", quant_min=" + std::to_string(quant_min()) +
         ", quant_max=" + std::to_string(quant_max()) +
         ", qscheme=" + ao::qscheme_name(o.qscheme_) +
         ", reduce_range=" + (o.reduce_range_ ? "True" : "False");
}

void FusedMovingAvgObsFakeQuantize::start_calibration() {
  enable_observer(true);
  enable_fake_quant(false);
}

void FusedMovingAvgObsFakeQuantize::finish_calibration(const CalibrationOptions& options) {
  const Tensor& mn = observer_->min_val();
  const bool has_data = mn.numel() != 0 && !std::isinf(mn.to_vector<float>()[0]);
  QGRAD_CHECK(!options.strict || has_data, ValueError, kName,
              "::finish_calibration: the observer saw no data during calibration");
  enable_fake_quant(true);
}

}  // namespace qgrad::quant
