// NVIDIA TensorQuantizer module: calibration, amax handling, fake/real quantization, printout.
#include "quant/modules/tensor_quantizer.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/repr_format.h"
#include "ops/binary/binary.h"
#include "ops/reduce/reduce.h"
#include "ops/unary/unary.h"
#include "quant/modules/lazy_buffer.h"
#include "quant/modules/quant_repr.h"
#include "quant/modules/quantizer_device.h"
#include "quant/nvidia/tensor_quant.h"

namespace qgrad::quant {

namespace {

const char* kName = "TensorQuantizer";
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor flag(bool on) {
  return scalar_tensor(on ? 1 : 0, TensorOptions().dtype(kUInt8));
}

bool all_nan(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (!std::isnan(v)) return false;
  return true;
}

std::string fixed4(double v) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

std::string axis_repr(const nvidia::QuantAxis& a) {
  if (a.kind == nvidia::QuantAxis::Kind::Int) return std::to_string(a.axes[0]);
  std::string s = "(";
  for (std::size_t i = 0; i < a.axes.size(); ++i) s += (i ? ", " : "") + std::to_string(a.axes[i]);
  return s + (a.axes.size() == 1 ? ",)" : ")");
}

}  // namespace

TensorQuantizer::TensorQuantizer(const nvidia::QuantDescriptor& desc,
                                 const TensorQuantizerOptions& options)
    : nn::UnaryModule(kName), desc_(desc) {
  const bool is_float = desc.num_bits().is_float();
  const bool blocks = desc.block_sizes().has_value();
  QGRAD_CHECK(!(desc.calib_method() == nvidia::CalibMethod::Histogram && (is_float || blocks)),
              ValueError, kName,
              ": calib_method \"histogram\" needs integer num_bits and no block_sizes (got "
              "num_bits ",
              desc.num_bits().str(), blocks ? " with block_sizes" : "", ")");
  QGRAD_CHECK(desc.fake_quant() || (!is_float && !blocks), ValueError, kName,
              ": real quantization (fake_quant false) supports integer num_bits without "
              "block_sizes only");
  QGRAD_CHECK(!(blocks && desc.scale_amax()), ValueError, kName,
              ": scale_amax cannot be combined with block_sizes");

  const bool per_tensor = desc.axis().is_none() && !blocks;
  Tensor amax;
  if (desc.amax()) {
    const nvidia::AmaxValue& a = *desc.amax();
    std::vector<float> v(a.values.begin(), a.values.end());
    amax = from_vector<float>(v, a.shape);
    if (options.amax_shape_) {
      QGRAD_CHECK(numel_of(*options.amax_shape_) == amax.numel(), ShapeError, kName,
                  ": the descriptor's amax of shape ", a.shape, " does not fit amax_shape ",
                  *options.amax_shape_);
      amax = amax.reshape(*options.amax_shape_);
    }
    if (per_tensor) amax = amax.reshape({});
  } else if (desc.learn_amax()) {
    amax = scalar_tensor(1.0, TensorOptions().dtype(kFloat32));
  } else if (options.amax_shape_) {
    amax = full(*options.amax_shape_, kNaN, TensorOptions().dtype(kFloat32));
  } else if (per_tensor) {
    amax = scalar_tensor(kNaN, TensorOptions().dtype(kFloat32));
  } else {
    amax = empty({0}, TensorOptions().dtype(kFloat32));
  }
  amax_ = register_buffer("_amax", amax);
  disabled_ = register_buffer("_disabled", flag(options.disabled_));
  if_quant_ = register_buffer("_if_quant", flag(options.if_quant_));
  if_calib_ = register_buffer("_if_calib", flag(options.if_calib_));
  disabled_on_ = HostFlag(disabled_);
  quant_on_ = HostFlag(if_quant_);
  calib_on_ = HostFlag(if_calib_);
  has_amax_on_ = HostFlag(amax_, [](const Tensor& a) { return a.numel() != 0 && !all_nan(a); });

  if (desc.learn_amax()) {
    const double init = amax.item<double>();
    clip_ = register_module("clip", std::make_shared<Clip>(-init, init));
  }

  if (blocks) {
    if (!is_dynamic())
      block_calib_ = std::make_unique<nvidia::BlockQuantizer>(nvidia::BlockQuantSpec{
          desc.num_bits(), *desc.block_sizes(), desc.is_unsigned(), desc.narrow_range()});
  } else if (desc.calib_method() == nvidia::CalibMethod::Histogram) {
    nvidia::HistogramCalibratorOptions h;
    h.num_bits = desc.num_bits().bits();
    h.is_unsigned = desc.is_unsigned();
    h.num_bins = options.num_bins_;
    h.skip_zeros = options.skip_zeros_;
    hist_calib_ = std::make_unique<nvidia::HistogramCalibrator>(h);
  } else {
    max_calib_ = std::make_unique<nvidia::MaxCalibrator>(desc.axis().axes, desc.is_unsigned());
  }
}

void TensorQuantizer::set_process_group(std::shared_ptr<distributed::ProcessGroup> group) {
  if (max_calib_) max_calib_->set_process_group(group);
  if (hist_calib_) hist_calib_->set_process_group(group);
  SyncedStatistics::set_process_group(std::move(group));
}

bool TensorQuantizer::is_dynamic() const {
  return desc_.dynamic() ||
         (desc_.block_sizes() && desc_.block_sizes()->type == nvidia::BlockQuantType::Dynamic);
}

// ---------------------------------------------------------------------------------------------
// Switches

void TensorQuantizer::enable() {
  disabled_on_.set(false);
}
void TensorQuantizer::disable() {
  disabled_on_.set(true);
}
void TensorQuantizer::enable_quant() {
  quant_on_.set(true);
}
void TensorQuantizer::disable_quant() {
  quant_on_.set(false);
}
void TensorQuantizer::enable_calib() {
  calib_on_.set(true);
}
void TensorQuantizer::disable_calib() {
  calib_on_.set(false);
}
bool TensorQuantizer::is_enabled() const {
  return !disabled_on_.get();
}
bool TensorQuantizer::quant_enabled() const {
  return quant_on_.get();
}
bool TensorQuantizer::calib_enabled() const {
  return calib_on_.get();
}

bool TensorQuantizer::runs_on(Device device) const {
  return device.is_cpu() || (device.is_cuda() && !hist_calib_);
}

// ---------------------------------------------------------------------------------------------
// Forward

Tensor TensorQuantizer::forward(const Tensor& x) {
  if (!runs_on(x.device())) require_cpu_quantizer_input(name(), x);
  if (!is_enabled()) return x;
  if (calib_enabled() && !is_dynamic()) {
    NoGradGuard no_grad;
    const Tensor xd = x.detach();
    if (block_calib_) {
      block_calib_->calibrate(xd);
    } else if (hist_calib_) {
      hist_calib_->collect(xd);
    } else {
      max_calib_->collect(xd);
    }
  }
  if (quant_enabled()) return quant_forward(x);
  if (clip_ && !calib_enabled()) return clip_->forward(x);
  return x;
}

Tensor TensorQuantizer::dynamic_amax(const Tensor& x) const {
  NoGradGuard no_grad;
  const Tensor a = abs(x.detach());
  if (desc_.axis().is_none()) return qgrad::amax(a);
  const std::int64_t rank = x.dim();
  std::set<std::int64_t> kept;
  for (std::int64_t ax : desc_.axis().axes) {
    QGRAD_CHECK(ax >= -rank && ax < rank, IndexError, kName, ": axis ", ax,
                " is out of range for an input of shape ", x.shape());
    kept.insert(ax < 0 ? ax + rank : ax);
  }
  Shape dims;
  for (std::int64_t d = 0; d < rank; ++d)
    if (!kept.count(d)) dims.push_back(d);
  return dims.empty() ? a : qgrad::amax(a, dims, /*keepdim=*/true);
}

Tensor TensorQuantizer::quant_forward(const Tensor& x) {
  Tensor input = x;
  Tensor a;
  if (clip_) {
    input = clip_->forward(x);
    a = clip_->amax().detach();
    sync_learned_amax();
  }
  if (desc_.block_sizes()) {
    const nvidia::BlockQuantSpec spec{desc_.num_bits(), *desc_.block_sizes(), desc_.is_unsigned(),
                                      desc_.narrow_range()};
    const Tensor grid = (!is_dynamic() && has_amax()) ? amax_.detach().to(x.dtype()) : Tensor();
    return nvidia::block_fake_quant(input, spec, grid);
  }
  if (!a.defined()) a = (!desc_.dynamic() && has_amax()) ? amax_.detach() : dynamic_amax(x);
  if (desc_.scale_amax()) {
    NoGradGuard no_grad;
    a = mul(a, *desc_.scale_amax());
  }
  last_amax_ = a.detach();
  if (desc_.num_bits().is_float()) {
    if (desc_.fp8_recipe() == nvidia::Fp8Recipe::Modelopt)
      return nvidia::modelopt_scaled_fp8(input, a, desc_.num_bits().format());
    return nvidia::scaled_minifloat_quant(input, a, desc_.num_bits().format());
  }
  const int bits = desc_.num_bits().bits();
  if (desc_.fake_quant())
    return nvidia::fake_tensor_quant(input, a, bits, desc_.is_unsigned(), desc_.narrow_range());
  auto [q, s] = nvidia::tensor_quant(input, a, bits, desc_.is_unsigned(), desc_.narrow_range());
  scale_ = s;
  return q;
}

// ---------------------------------------------------------------------------------------------
// amax

bool TensorQuantizer::has_amax() const {
  if (clip_) return true;
  return has_amax_on_.get();
}

Tensor TensorQuantizer::amax() const {
  if (clip_) return clip_->amax().detach();
  return has_amax() ? amax_.detach() : Tensor();
}

void TensorQuantizer::write_amax(const Tensor& value) {
  NoGradGuard no_grad;
  if (value.shape() == amax_.shape()) {
    Tensor dst = amax_;
    dst.copy_(value);
  } else {
    rebind_buffer(amax_, value.to(amax_.dtype()));
  }
}

void TensorQuantizer::set_amax(const Tensor& amax) {
  const char* op = "TensorQuantizer::set_amax";
  QGRAD_CHECK(amax.defined() && is_floating(amax.dtype()), DTypeError, op,
              ": amax must be a defined floating tensor");
  QGRAD_CHECK(amax.numel() > 0, ShapeError, op, ": amax must not be empty");
  for (double v : amax.to_vector<double>())
    QGRAD_CHECK(std::isfinite(v) && v >= 0, ValueError, op, ": amax must be finite and >= 0, got ",
                v);
  Tensor value = amax.detach().to(kFloat32);
  const bool per_tensor = desc_.axis().is_none() && !desc_.block_sizes();
  if (per_tensor) {
    QGRAD_CHECK(value.numel() == 1, ShapeError, op,
                ": a per-tensor quantizer takes one amax value, got shape ", amax.shape());
    value = value.reshape({});
  } else if (amax_.numel() != 0 && value.shape() != amax_.shape()) {
    QGRAD_CHECK(value.numel() == amax_.numel(), ShapeError, op, ": amax of shape ", amax.shape(),
                " does not match the quantizer's amax shape ", amax_.shape());
    value = value.reshape(amax_.shape());
  }
  if (clip_) {
    const double v = value.item<double>();
    clip_->set_bounds(-v, v);
  }
  write_amax(value);
}

void TensorQuantizer::set_amax(double amax) {
  set_amax(scalar_tensor(amax, TensorOptions().dtype(kFloat32)));
}

void TensorQuantizer::reset_amax() {
  QGRAD_CHECK(!clip_, ValueError, kName,
              "::reset_amax: a quantizer with learn_amax always has an amax (its clip bounds)");
  NoGradGuard no_grad;
  amax_.fill_(kNaN);
}

void TensorQuantizer::sync_learned_amax() {
  NoGradGuard no_grad;
  write_amax(clip_->amax().detach().reshape({}));
}

bool TensorQuantizer::load_calib_amax(const std::string& method,
                                      const nvidia::HistogramAmaxOptions& options, bool strict) {
  const char* op = "TensorQuantizer::load_calib_amax";
  QGRAD_CHECK(!is_dynamic(), ValueError, op,
              ": the quantizer is dynamic (amax is computed from every batch); there is no "
              "calibrated amax to load");
  auto no_data = [&]() {
    QGRAD_CHECK(!strict, ValueError, op,
                ": the calibrator saw no data (run batches through the quantizer with "
                "enable_calib() first); pass strict = false to keep the current amax");
    return false;
  };
  Tensor a;
  if (hist_calib_) {
    QGRAD_CHECK(method == "entropy" || method == "mse" || method == "percentile", ValueError, op,
                ": method \"", method,
                "\" is not valid for a histogram calibrator (use \"entropy\", \"mse\" or "
                "\"percentile\")");
    if (!hist_calib_->has_data()) return no_data();
    a = hist_calib_->compute_amax(method, options);
  } else {
    QGRAD_CHECK(method == "max", ValueError, op, ": method \"", method, "\" is not valid for a ",
                block_calib_ ? "static block quantizer" : "max calibrator", " (use \"max\")");
    if (block_calib_) {
      if (!block_calib_->calibrated()) return no_data();
      a = block_calib_->amax();
    } else {
      if (!max_calib_->has_data()) return no_data();
      a = max_calib_->compute_amax();
    }
  }
  set_amax(a);
  return true;
}

void TensorQuantizer::init_learn_amax() {
  QGRAD_CHECK(clip_ != nullptr, ValueError, kName,
              "::init_learn_amax: the quantizer was not created with learn_amax");
  const double v = amax_.item<double>();
  QGRAD_CHECK(std::isfinite(v) && v >= 0, ValueError, kName,
              "::init_learn_amax: amax must be set (finite, >= 0), got ", v);
  clip_->set_bounds(-v, v);
}

void TensorQuantizer::reset_calibrator() {
  if (max_calib_) max_calib_->reset();
  if (hist_calib_) hist_calib_->reset();
  if (block_calib_) block_calib_->reset();
}

// ---------------------------------------------------------------------------------------------
// Calibratable

void TensorQuantizer::start_calibration() {
  if (!is_enabled() || is_dynamic()) return;
  reset_calibrator();
  disable_quant();
  enable_calib();
}

void TensorQuantizer::finish_calibration(const CalibrationOptions& options) {
  if (!is_enabled() || is_dynamic()) return;
  load_calib_amax(hist_calib_ ? options.method : "max", options.histogram, options.strict);
  disable_calib();
  enable_quant();
}

// ---------------------------------------------------------------------------------------------
// Printout

std::string TensorQuantizer::extra_repr() const {
  if (!is_enabled()) return "disabled";
  std::string s = (desc_.is_unsigned() ? "unsigned " : "") + desc_.num_bits().str() + "bit";
  if (desc_.narrow_range()) s += " narrow";
  if (desc_.fake_quant()) s += " fake";
  if (desc_.block_sizes()) {
    s += " block_sizes=" + desc_.to_json()["block_sizes"].dump();
  } else {
    s += desc_.axis().is_none() ? " per-tensor" : " axis=" + axis_repr(desc_.axis());
  }
  std::string amax_str = "dynamic";
  if (!is_dynamic() && has_amax()) {
    const Tensor a = amax();
    if (a.numel() == 1) {
      amax_str = fixed4(a.item<double>());
    } else {
      NoGradGuard no_grad;
      amax_str = "[" + fixed4(qgrad::amin(a).item<double>()) + ", " +
                 fixed4(qgrad::amax(a).item<double>()) + "](" + std::to_string(a.numel()) + ")";
    }
  }
  s += " amax=" + amax_str;
  if (desc_.scale_amax()) s += " *" + nn::py_float(*desc_.scale_amax());
  if (desc_.learn_amax()) s += " learned";
  if (max_calib_ || block_calib_) s += " calibrator=MaxCalibrator";
  if (hist_calib_) s += " calibrator=HistogramCalibrator";
  if (scale_.defined()) s += " scale=" + values_repr(scale_);
  if (quant_enabled()) s += " quant";
  if (clip_) s += " clip";
  if (calib_enabled()) s += " calib";
  return s;
}

}  // namespace qgrad::quant
