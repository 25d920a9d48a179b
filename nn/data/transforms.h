// Per-example transforms applied by the DataLoader to each example's data: Normalize,
// RandomCrop (zero padding, then a random window) and RandomHorizontalFlip, as torchvision's.
// Randomness comes from the Generator the loader derives for each example from (seed, epoch,
// position), so augmentations are reproducible and independent of threading. Transforms take
// float32/float64 images [C, H, W] (or [H, W]) and return a new tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/generator.h"
#include "core/tensor.h"

namespace qgrad::data {

class Transform {
 public:
  virtual ~Transform() = default;
  virtual Tensor operator()(const Tensor& image, Generator& gen) const = 0;
  virtual std::string repr() const = 0;
};

// (x - mean[c]) / std[c] per channel; one value applies to every channel.
class Normalize : public Transform {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std);
  Tensor operator()(const Tensor& image, Generator& gen) const override;
  std::string repr() const override;

 private:
  std::vector<double> mean_, std_;
};

// Pads every side with `padding` zeros, then crops a size x size window at a uniformly random
// position (torchvision.transforms.RandomCrop(size, padding)).
class RandomCrop : public Transform {
 public:
  explicit RandomCrop(std::int64_t size, std::int64_t padding = 0);
  RandomCrop(std::int64_t height, std::int64_t width, std::int64_t padding);
  Tensor operator()(const Tensor& image, Generator& gen) const override;
  std::string repr() const override;

 private:
  std::int64_t height_, width_, padding_;
};

// Mirrors the last dim with probability p.
class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor operator()(const Tensor& image, Generator& gen) const override;
  std::string repr() const override;

 private:
  double p_;
};

}  // namespace qgrad::data
