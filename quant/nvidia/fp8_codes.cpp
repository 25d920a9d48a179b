// FP8 code tensors: argument checks and the CPU loops over the Fp8Encode / Fp8Decode functors.
#include "quant/nvidia/fp8_codes.h"

#include "core/error.h"
#include "core/factory.h"
#include "core/strided_loop.h"

namespace qgrad::nvidia {

Fp8Layout fp8_layout(FloatFormat format, const char* op) {
  if (format == kE4M3) return kFp8E4M3;
  if (format == kE5M2) return kFp8E5M2;
  throw ValueError(detail::concat(op, ": format must be E4M3 or E5M2, got ", format.str()));
}

Tensor fp8_encode(const Tensor& x, FloatFormat format) {
  const char* op = "fp8_encode";
  const Fp8Encode enc{fp8_layout(format, op)};
  QGRAD_CHECK(x.dtype() == kFloat32, DTypeError, op, ": input must be float32, got ",
              dtype_name(x.dtype()));
  QGRAD_CHECK(x.device().is_cpu(), DeviceError, op, ": input must be on the CPU, got ",
              x.device().str());
  const Tensor xc = x.contiguous();
  Tensor out = empty(x.shape(), TensorOptions().dtype(kUInt8));
  const float* px = xc.data_ptr<float>();
  std::uint8_t* po = out.data_ptr<std::uint8_t>();
  parallel_for(x.numel(), kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) po[i] = enc(px[i]);
  });
  return out;
}

Tensor fp8_decode(const Tensor& codes, FloatFormat format) {
  const char* op = "fp8_decode";
  const Fp8Decode dec{fp8_layout(format, op)};
  QGRAD_CHECK(codes.dtype() == kUInt8, DTypeError, op, ": codes must be uint8, got ",
              dtype_name(codes.dtype()));
  QGRAD_CHECK(codes.device().is_cpu(), DeviceError, op, ": codes must be on the CPU, got ",
              codes.device().str());
  const Tensor cc = codes.contiguous();
  Tensor out = empty(codes.shape(), TensorOptions().dtype(kFloat32));
  const std::uint8_t* pc = cc.data_ptr<std::uint8_t>();
  float* po = out.data_ptr<float>();
  parallel_for(codes.numel(), kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) po[i] = dec(pc[i]);
  });
  return out;
}

}  // namespace qgrad::nvidia
