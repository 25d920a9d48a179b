// The scale and offset gradients of the learnable quantizers are sums over many elements; qgrad
// accumulates them in double in a fixed order (docs/quantization.md: PyTorch sums float32 in its
// own order, so qgrad can differ from it in the last bits, by design). Here: the results do not
// depend on the number of threads.
#include <catch2/catch.hpp>

#include <omp.h>

#include "core/factory.h"
#include "ops/binary/binary.h"
#include "quant/aimet/affine_quantize.h"
#include "quant/torch_ao/learnable_fake_quantize.h"

using namespace qgrad;

namespace {

struct Grads {
  std::vector<float> dx, dscale, dzp;
};

Grads run(int threads, bool aimet, bool per_channel) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  Generator gen(11);
  const std::int64_t c = 6;
  Tensor x = (randn({c, 5000}, gen) * 3.0).set_requires_grad(true);
  Tensor scale = (rand({per_channel ? c : 1}, gen) * 0.05 + 0.01).set_requires_grad(true);
  Tensor zp = (rand({per_channel ? c : 1}, gen) * 10.0).set_requires_grad(true);
  Tensor y;
  if (aimet) {
    const Tensor s = per_channel ? scale.reshape({c, 1}) : scale.reshape({});
    const Tensor o = per_channel ? (zp - 5.0).reshape({c, 1}) : (zp - 5.0).reshape({});
    y = aimet::quantize_dequantize(x, s, o, -128, 127);
  } else if (per_channel) {
    y = ao::fake_quantize_learnable_per_channel_affine(x, scale, zp, 0, 0, 255, 0.5);
  } else {
    y = ao::fake_quantize_learnable_per_tensor_affine(x, scale.reshape({}), zp.reshape({}), 0, 255,
                                                      0.5);
  }
  y.backward(randn(y.shape(), gen));
  omp_set_num_threads(before);
  return {x.grad().to_vector<float>(), scale.grad().to_vector<float>(),
          zp.grad().to_vector<float>()};
}

}  // namespace

TEST_CASE("learnable quantizers: scale and offset gradients do not depend on the thread count") {
  for (const bool aimet : {false, true}) {
    for (const bool per_channel : {false, true}) {
      INFO((aimet ? "aimet quantize_dequantize" : "torch.ao learnable")
           << (per_channel ? ", per channel" : ", per tensor"));
      const Grads one = run(1, aimet, per_channel), two = run(2, aimet, per_channel),
                  four = run(4, aimet, per_channel);
      CHECK(one.dx == two.dx);
      CHECK(one.dscale == two.dscale);
      CHECK(one.dzp == two.dzp);
      CHECK(one.dscale == four.dscale);
      CHECK(one.dzp == four.dzp);
    }
  }
}
