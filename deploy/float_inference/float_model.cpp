// FloatInferenceModel: the input wrapped as NCHW, the layers in order, the output reordered back.
#include "deploy/float_inference/float_model.h"

#include "core/error.h"
#include "core/factory.h"
#include "core/shape.h"
#include "deploy/float_inference/float_dnnl.h"
#include "deploy/float_inference/float_layer.h"
#include "ops/dnnl/dnnl_context.h"

namespace qgrad::deploy {

FloatInferenceModel::FloatInferenceModel() = default;
FloatInferenceModel::~FloatInferenceModel() = default;
FloatInferenceModel::FloatInferenceModel(FloatInferenceModel&&) noexcept = default;
FloatInferenceModel& FloatInferenceModel::operator=(FloatInferenceModel&&) noexcept = default;

void FloatInferenceModel::append(std::unique_ptr<FloatLayer> layer) {
  QGRAD_CHECK(layer != nullptr, ValueError, "FloatInferenceModel::append: null layer");
  layers_.push_back(std::move(layer));
}

Tensor FloatInferenceModel::forward(const Tensor& x) {
  QGRAD_CHECK(!layers_.empty(), ValueError,
              "FloatInferenceModel::forward: the model has no layers");
  QGRAD_CHECK(x.dtype() == DType::Float32 && x.dim() >= 2, DTypeError,
              "FloatInferenceModel::forward: the input must be float32 [N, ...], got ",
              dtype_name(x.dtype()), " ", shape_str(x.shape()));
  const Tensor in = x.contiguous();  // alive until the first layer has read it
  FloatActivation a{dnnl_backend::wrap(dnnl_backend::plain_desc(in.shape(), DType::Float32), in),
                    /*owned=*/false};
  for (const auto& layer : layers_) a = layer->forward(a);
  // The output in plain row-major order (the last layer's may be blocked).
  const dnnl::memory::dims dims = a.mem.get_desc().dims();
  Tensor y = empty(Shape(dims.begin(), dims.end()));
  const dnnl::memory out =
      dnnl_backend::wrap(dnnl_backend::plain_desc(y.shape(), DType::Float32), y);
  float_dnnl::guarded("output", [&] {
    dnnl::memory src = a.mem;
    dnnl::memory dst = out;
    dnnl::reorder(src, dst).execute(float_dnnl::stream(), src, dst);
    float_dnnl::stream().wait();
  });
  return y;
}

std::vector<FloatLayerInfo> FloatInferenceModel::implementations() const {
  std::vector<FloatLayerInfo> out;
  for (const auto& layer : layers_)
    for (const auto& p : layer->implementations()) out.push_back({p.first, p.second});
  return out;
}

}  // namespace qgrad::deploy
