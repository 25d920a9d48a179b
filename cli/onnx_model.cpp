// onnx_model: import and check a config's ONNX model.
#include "cli/onnx_model.h"

#include <string>

#include "cli/usage_error.h"
#include "core/autograd/grad_mode.h"
#include "core/error.h"
#include "core/factory.h"
#include "core/shape.h"
#ifdef QGRAD_WITH_ONNX
#include "deploy/onnx/onnx_import.h"
#endif

namespace qgrad::cli {

std::shared_ptr<nn::UnaryModule> onnx_model(const TrainConfig& config, const DataShape& shape) {
#ifdef QGRAD_WITH_ONNX
  std::shared_ptr<nn::UnaryModule> model = deploy::import_onnx(config.onnx);
  const nn::ImageShape& s = shape.image;
  const std::string image =
      std::to_string(s.channels) + "x" + std::to_string(s.height) + "x" + std::to_string(s.width);
  Tensor logits;
  {
    // Evaluation mode, so the check leaves batch norm's running statistics as the file has them.
    NoGradGuard no_grad;
    model->eval();
    try {
      logits = model->forward(zeros({1, s.channels, s.height, s.width}));
    } catch (const Error& e) {
      throw UsageError("model: '" + config.onnx + "' cannot take the data's " + image +
                       " images: " + e.what());
    }
    model->train();
  }
  if (logits.shape() != Shape{1, shape.num_classes})
    throw UsageError("model: '" + config.onnx + "' gives outputs of shape " +
                     shape_str(logits.shape()) + " for one " + image + " image; the data has " +
                     std::to_string(shape.num_classes) + " classes, so [1, " +
                     std::to_string(shape.num_classes) + "] was expected");
  return model;
#else
  (void)shape;
  throw UsageError("model: '" + config.onnx +
                   "' is an ONNX model, but this qgrad was built without ONNX support (install "
                   "libonnx-dev and libprotobuf-dev, e.g. with scripts/install_deps.sh, and "
                   "configure with -DQGRAD_ONNX=ON)");
#endif
}

}  // namespace qgrad::cli
