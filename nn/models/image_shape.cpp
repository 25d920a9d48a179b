// check_image_shape: the zoo's shared check of an input shape and class count.
#include "nn/models/image_shape.h"

#include "core/error.h"

namespace qgrad::nn {

void check_image_shape(const char* model, const ImageShape& input, std::int64_t num_classes,
                       std::int64_t min_size) {
  QGRAD_CHECK(input.channels > 0 && num_classes > 0, ValueError, model, ": ", input.channels,
              " input channels and ", num_classes, " classes; both must be positive");
  QGRAD_CHECK(input.height >= min_size && input.width >= min_size, ValueError, model, ": a ",
              input.height, "x", input.width, " input is too small (at least ", min_size, "x",
              min_size, ")");
}

}  // namespace qgrad::nn
