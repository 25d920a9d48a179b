/// @file
/// ImageShape, the channels x height x width of one input image that the zoo's models are built
/// for, and the argument check they share.
#pragma once

#include <cstdint>

namespace qgrad::nn {

/// The shape of one input image, channels x height x width.
struct ImageShape {
  std::int64_t channels = 1;  ///< input channels (1 grey, 3 RGB)
  std::int64_t height = 28;   ///< rows
  std::int64_t width = 28;    ///< columns
};

/// ValueError naming `model` unless the channel and class counts are positive and the image is
/// at least `min_size` x `min_size`.
void check_image_shape(const char* model, const ImageShape& input, std::int64_t num_classes,
                       std::int64_t min_size);

}  // namespace qgrad::nn
