/// @file
/// The resizing transforms of ImageNet-style pipelines, with torchvision's semantics on PIL images:
/// Resize (the shorter side to N, the longer one scaled and truncated), CenterCrop and
/// RandomResizedCrop (scale (0.08, 1), ratio (3/4, 4/3), 10 attempts, then a centre crop), all
/// resampling with resized_crop: bilinear with PIL's antialiasing (when shrinking, the triangle
/// filter widens by the reduction factor, as PIL's Image.resize(BILINEAR) and torch's
/// interpolate(antialias=True) do). The arithmetic is float32 where PIL's is 8-bit fixed point with
/// a rounding after each of its two passes, so results differ from torchvision's by a rounding,
/// at most 2/255 before Normalize (tests/data/test_image_folder.cpp checks this against fixtures
/// that torchvision wrote). Randomness comes from the loader's per-example Generator.
#pragma once

#include <cstdint>
#include <string>

#include "nn/data/transforms.h"

namespace qgrad::data {

/// The window rows [top, top + height) x columns [left, left + width) of `image` ([C, H, W] or
/// [H, W], float32 or float64), resized to out_height x out_width (bilinear, antialiased as PIL).
/// Throws ShapeError when the window leaves the image or a size is not positive.
Tensor resized_crop(const Tensor& image, std::int64_t top, std::int64_t left, std::int64_t height,
                    std::int64_t width, std::int64_t out_height, std::int64_t out_width);

/// Scales the image so that its shorter side is `size` (torchvision.transforms.Resize(size)).
class Resize : public Transform {
 public:
  /// The shorter side to `size`; the longer one to int(size * long / short).
  explicit Resize(std::int64_t size);
  /// The resized image.
  Tensor operator()(const Tensor& image, Generator& gen) const override;
  /// A description of the transform.
  std::string repr() const override;

 private:
  std::int64_t size_;
};

/// The central size x size window (torchvision.transforms.CenterCrop(size)); an image smaller
/// than the window is a ShapeError (resize it first: torchvision would pad it with zeros).
class CenterCrop : public Transform {
 public:
  /// A size x size centre crop.
  explicit CenterCrop(std::int64_t size);
  /// The cropped image.
  Tensor operator()(const Tensor& image, Generator& gen) const override;
  /// A description of the transform.
  std::string repr() const override;

 private:
  std::int64_t size_;
};

/// A random window of random area and aspect ratio, resized to size x size
/// (torchvision.transforms.RandomResizedCrop(size, scale, ratio)).
class RandomResizedCrop : public Transform {
 public:
  /// Windows of scale_min..scale_max of the image's area and aspect ratio (width / height)
  /// ratio_min..ratio_max, drawn log-uniformly.
  explicit RandomResizedCrop(std::int64_t size, double scale_min = 0.08, double scale_max = 1.0,
                             double ratio_min = 3.0 / 4.0, double ratio_max = 4.0 / 3.0);
  /// The window {top, left, height, width} that torchvision's get_params chooses for an image
  /// of height x width, with `gen`'s numbers.
  struct Window {
    std::int64_t top, left, height, width;  ///< in pixels
  };
  /// The window for an image of height x width.
  Window window(std::int64_t height, std::int64_t width, Generator& gen) const;
  /// The cropped and resized image.
  Tensor operator()(const Tensor& image, Generator& gen) const override;
  /// A description of the transform.
  std::string repr() const override;

 private:
  std::int64_t size_;
  double scale_min_, scale_max_, ratio_min_, ratio_max_;
};

}  // namespace qgrad::data
