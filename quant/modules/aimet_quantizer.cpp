// AIMET Quantize / QuantizeDequantize modules and their compute_encodings scope.
#include "quant/modules/aimet_quantizer.h"

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/repr_format.h"
#include "quant/modules/quantizer_device.h"

namespace qgrad::quant {

namespace {
std::string py_tuple(const Shape& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Scope

AimetComputeEncodings::AimetComputeEncodings(aimet::AffineQuantizer& quantizer,
                                             Tensor initialized_flag)
    : quantizer_(&quantizer), flag_(std::move(initialized_flag)) {
  inner_.emplace(quantizer);
}

AimetComputeEncodings::AimetComputeEncodings(AimetComputeEncodings&& other) noexcept
    : inner_(std::move(other.inner_)), quantizer_(other.quantizer_), flag_(other.flag_) {
  other.inner_.reset();  // the moved-from scope no longer ends anything
}

void AimetComputeEncodings::end() {
  if (!inner_) return;
  aimet::AffineQuantizer::ComputeEncodings inner = std::move(*inner_);
  inner_.reset();
  inner.end();
  flag_.fill_(quantizer_->is_initialized() ? 1 : 0);
}

AimetComputeEncodings::~AimetComputeEncodings() {
  if (!inner_) return;
  inner_.reset();  // the inner scope ends (or, while unwinding, aborts) in its destructor
  try {
    flag_.fill_(quantizer_->is_initialized() ? 1 : 0);
  } catch (...) {  // a destructor must not throw
  }
}

// ---------------------------------------------------------------------------------------------
// Shared module state

template <typename Base>
AimetQuantizerModule<Base>::AimetQuantizerModule(const char* name, Shape shape, int bitwidth,
                                                 bool symmetric)
    : Base(name),
      quantizer_(std::make_unique<aimet::AffineQuantizer>(std::move(shape), bitwidth, symmetric)) {
  min_ = this->register_parameter("min", quantizer_->min());
  max_ = this->register_parameter("max", quantizer_->max());
  initialized_ =
      this->register_buffer("initialized", scalar_tensor(0, TensorOptions().dtype(kUInt8)));
  initialized_on_ = HostFlag(initialized_);
}

template <typename Base>
aimet::AffineQuantizer& AimetQuantizerModule<Base>::ready(const char* op) {
  aimet::AffineQuantizer& q = *quantizer_;
  if (q.computing_encodings()) return q;
  QGRAD_CHECK(is_initialized(), ValueError, op,
              ": quantization parameters are not initialized (call set_range or "
              "compute_encodings first)");
  if (!q.is_initialized()) {  // a range loaded from a state dict
    NoGradGuard no_grad;
    q.set_range(min_.detach().clone(), max_.detach().clone());
  }
  return q;
}

template <typename Base>
bool AimetQuantizerModule<Base>::is_initialized() const {
  return initialized_on_.get();
}

template <typename Base>
void AimetQuantizerModule<Base>::set_range(const Tensor& min, const Tensor& max) {
  quantizer_->set_range(min, max);
  initialized_on_.set(true);
}

template <typename Base>
void AimetQuantizerModule<Base>::set_range(double min, double max) {
  quantizer_->set_range(min, max);
  initialized_on_.set(true);
}

template <typename Base>
Tensor AimetQuantizerModule<Base>::get_scale() {
  return ready("AimetQuantizer::get_scale").get_scale();
}

template <typename Base>
Tensor AimetQuantizerModule<Base>::get_offset() {
  return ready("AimetQuantizer::get_offset").get_offset();
}

template <typename Base>
aimet::AffineEncoding AimetQuantizerModule<Base>::get_encoding() {
  return ready("AimetQuantizer::get_encoding").get_encoding();
}

template <typename Base>
AimetComputeEncodings AimetQuantizerModule<Base>::compute_encodings() {
  return AimetComputeEncodings(*quantizer_, initialized_);
}

template <typename Base>
std::string AimetQuantizerModule<Base>::extra_repr() const {
  return "shape=" + py_tuple(shape()) + ", qmin=" + std::to_string(qmin()) +
         ", qmax=" + std::to_string(qmax()) + ", symmetric=" + nn::py_bool(symmetric());
}

template <typename Base>
void AimetQuantizerModule<Base>::start_calibration() {
  calibration_.reset();
  calibration_.emplace(compute_encodings());
}

template <typename Base>
void AimetQuantizerModule<Base>::set_process_group(
    std::shared_ptr<distributed::ProcessGroup> group) {
  quantizer_->encoding_analyzer().set_process_group(group);
  SyncedStatistics::set_process_group(std::move(group));
}

template <typename Base>
void AimetQuantizerModule<Base>::finish_calibration(const CalibrationOptions& options) {
  if (!calibration_) return;
  const bool saw_data = !quantizer_->encoding_analyzer().stats().empty();
  calibration_->end();
  calibration_.reset();
  QGRAD_CHECK(saw_data || !options.strict, ValueError, this->name(),
              "::finish_calibration: the quantizer saw no data during compute_encodings");
}

template class AimetQuantizerModule<nn::Module>;
template class AimetQuantizerModule<nn::UnaryModule>;

// ---------------------------------------------------------------------------------------------
// The two modules

AimetQuantize::AimetQuantize(Shape shape, int bitwidth, bool symmetric)
    : AimetQuantizerModule<nn::Module>("Quantize", std::move(shape), bitwidth, symmetric) {}

aimet::QuantizedTensor AimetQuantize::forward(const Tensor& x) {
  if (!runs_on(x.device())) require_cpu_quantizer_input(name(), x);
  return ready("Quantize").quantize(x);
}

AimetQuantizeDequantize::AimetQuantizeDequantize(Shape shape, int bitwidth, bool symmetric)
    : AimetQuantizerModule<nn::UnaryModule>("QuantizeDequantize", std::move(shape), bitwidth,
                                            symmetric) {}

aimet::DequantizedTensor AimetQuantizeDequantize::quantize_dequantize(const Tensor& x) {
  return ready("QuantizeDequantize").quantize_dequantize(x);
}

Tensor AimetQuantizeDequantize::forward(const Tensor& x) {
  if (!runs_on(x.device())) require_cpu_quantizer_input(name(), x);
  return quantize_dequantize(x).data();
}

}  // namespace qgrad::quant
