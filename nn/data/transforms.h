/// @file
/// Per-example transforms applied by the DataLoader to each example's data: Normalize,
/// RandomCrop (zero padding, then a random window) and RandomHorizontalFlip, as torchvision's
/// (the resizing ones are in nn/data/resize_transforms.h).
/// Randomness comes from the Generator the loader derives for each example from (seed, epoch,
/// position), so augmentations are reproducible and independent of threading. Transforms take
/// float32/float64 images [C, H, W] (or [H, W]) and return a new tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/generator.h"
#include "core/tensor.h"

namespace qgrad::data {

/// `image` as a contiguous [C, H, W] (an [H, W] image gets C = 1), checked to be a float32 or
/// float64 CPU image; `op` names the transform in errors. For the transforms' implementations.
Tensor as_chw(const char* op, const Tensor& image);

/// An image transform of a DataLoader, drawing its randomness from the loader's generator.
class Transform {
 public:
  virtual ~Transform() = default;
  /// The transformed image.
  virtual Tensor operator()(const Tensor& image, Generator& gen) const = 0;
  /// A description such as "Normalize(mean=..., std=...)".
  virtual std::string repr() const = 0;
};

/// (x - mean[c]) / std[c] per channel; one value applies to every channel.
class Normalize : public Transform {
 public:
  /// Per-channel (image - mean[c]) / std[c].
  Normalize(std::vector<double> mean, std::vector<double> std);
  /// The normalised image.
  Tensor operator()(const Tensor& image, Generator& gen) const override;
  /// A description of the transform.
  std::string repr() const override;

 private:
  std::vector<double> mean_, std_;
};

/// Pads every side with `padding` zeros, then crops a size x size window at a uniformly random
/// position (torchvision.transforms.RandomCrop(size, padding)).
class RandomCrop : public Transform {
 public:
  /// A random size x size crop of the image padded by `padding` zeros on each side.
  explicit RandomCrop(std::int64_t size, std::int64_t padding = 0);
  /// A random height x width crop of the image padded by `padding` zeros on each side.
  RandomCrop(std::int64_t height, std::int64_t width, std::int64_t padding);
  /// The cropped image.
  Tensor operator()(const Tensor& image, Generator& gen) const override;
  /// A description of the transform.
  std::string repr() const override;

 private:
  std::int64_t height_, width_, padding_;
};

/// Mirrors the last dim with probability p.
class RandomHorizontalFlip : public Transform {
 public:
  /// Flips the image left-right with probability p.
  explicit RandomHorizontalFlip(double p = 0.5);
  /// The image, flipped or not.
  Tensor operator()(const Tensor& image, Generator& gen) const override;
  /// A description of the transform.
  std::string repr() const override;

 private:
  double p_;
};

}  // namespace qgrad::data
