// AIMET min/max affine quantizer state and its compute_encodings scope.
#include "quant/aimet/affine_quantizer.h"

#include "core/autograd/grad_mode.h"
#include "core/factory.h"

namespace qgrad::aimet {

namespace {
const char* kName = "aimet.AffineQuantizer";
}

AffineQuantizer::AffineQuantizer(Shape shape, int bitwidth, bool symmetric)
    : shape_(std::move(shape)),
      bitwidth_(bitwidth),
      symmetric_(symmetric),
      grid_(affine_grid(bitwidth, symmetric)),
      analyzer_(shape_) {
  min_ = full(shape_, -1.0).set_requires_grad(true);
  max_ = full(shape_, 1.0).set_requires_grad(true);
}

void AffineQuantizer::set_range(const Tensor& min, const Tensor& max) {
  QGRAD_CHECK(min.defined() && max.defined(), ValueError, kName,
              ".set_range: min and max must be defined");
  NoGradGuard no_grad;
  min_.copy_(min.detach());
  max_.copy_(max.detach());
  initialized_ = true;
}

void AffineQuantizer::set_range(double min, double max) {
  set_range(scalar_tensor(min), scalar_tensor(max));
}

Tensor AffineQuantizer::get_scale() const {
  QGRAD_CHECK(initialized_, ValueError, kName,
              ": quantization parameters are not initialized (call set_range or "
              "compute_encodings first)");
  return encoding_scale(min_, max_, bitwidth_);
}

Tensor AffineQuantizer::get_offset() const {
  return encoding_offset(min_, get_scale(), bitwidth_, symmetric_);
}

AffineEncoding AffineQuantizer::get_encoding() const {
  Tensor s = get_scale();
  return AffineEncoding(s, encoding_offset(min_, s, bitwidth_, symmetric_), bitwidth_, symmetric_);
}

// Outside compute_encodings: the learnable range. Inside: the statistics are updated and the
// batch's own encoding (no gradient to min / max) is used, as AIMET's forward wrapper does.
AffineEncoding AffineQuantizer::encoding_for(const Tensor& x) {
  if (!calibrating_) return get_encoding();
  const MinMaxStats batch = analyzer_.update_stats(x);
  NoGradGuard no_grad;
  const std::int64_t steps = grid_.qmax - grid_.qmin;
  auto [mn, mx] = MinMaxEncodingAnalyzer::compute_encodings_from_stats(batch, steps, symmetric_);
  mn = mn.to(kFloat32);
  mx = mx.to(kFloat32);
  Tensor s = encoding_scale(mn, mx, bitwidth_);
  return AffineEncoding(s, encoding_offset(mn, s, bitwidth_, symmetric_), bitwidth_, symmetric_);
}

// The encoding is converted to the input's dtype, as AIMET does (scale.to(input.dtype)).
QuantizedTensor AffineQuantizer::quantize(const Tensor& x) {
  QGRAD_CHECK(x.defined() && is_floating(x.dtype()), DTypeError, kName,
              ".quantize: input must be a floating tensor");
  const AffineEncoding e = encoding_for(x).to(x.dtype());
  return QuantizedTensor(e.quantize(x), e);
}

DequantizedTensor AffineQuantizer::quantize_dequantize(const Tensor& x) {
  QGRAD_CHECK(x.defined() && is_floating(x.dtype()), DTypeError, kName,
              ".quantize_dequantize: input must be a floating tensor");
  const AffineEncoding e = encoding_for(x).to(x.dtype());
  return DequantizedTensor(e.quantize_dequantize(x), e);
}

AffineQuantizer::ComputeEncodings::ComputeEncodings(AffineQuantizer& q)
    : q_(&q), uncaught_(std::uncaught_exceptions()) {
  QGRAD_CHECK(!q.calibrating_, ValueError, kName, ": compute_encodings is already open");
  q.analyzer_.reset_stats();
  q.calibrating_ = true;
}

AffineQuantizer::ComputeEncodings::ComputeEncodings(ComputeEncodings&& o) noexcept
    : q_(o.q_), uncaught_(o.uncaught_) {
  o.q_ = nullptr;
}

void AffineQuantizer::ComputeEncodings::end() {
  if (!q_) return;
  AffineQuantizer& q = *q_;
  q_ = nullptr;
  q.calibrating_ = false;
  const auto range = q.analyzer_.compute_encodings(q.grid_.qmax - q.grid_.qmin, q.symmetric_);
  if (range) q.set_range(range->first.to(kFloat32), range->second.to(kFloat32));
}

AffineQuantizer::ComputeEncodings::~ComputeEncodings() {
  if (!q_) return;
  if (std::uncaught_exceptions() > uncaught_) {  // leaving by an exception: keep the old range
    q_->calibrating_ = false;
    return;
  }
  try {
    end();
  } catch (...) {  // a destructor must not throw; the range stays unchanged
    if (q_) q_->calibrating_ = false;
  }
}

}  // namespace qgrad::aimet
