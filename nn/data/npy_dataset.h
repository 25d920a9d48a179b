/// @file
/// NpyDataset: images and labels from two NumPy .npy files (core/npy.h), for data that a user
/// prepared in Python (np.save). Images are uint8 (scaled to [0, 1]) or float32 (taken as they
/// are), [N, C, H, W] or [N, H, W, C] (NHWC is transposed to NCHW once, on loading), or [N, H, W]
/// (one channel). Labels are a 1-d integer array [N] of class indices. Examples are float32
/// [C, H, W] and int64 0-d labels, as MNIST's and CIFAR's.
#pragma once

#include <cstdint>
#include <string>

#include "nn/data/dataset.h"

namespace qgrad::data {

/// How the channels of a 4-d images array are laid out.
enum class ImageLayout { NCHW, NHWC };

/// A dataset of an images .npy and a labels .npy, loaded into memory.
class NpyDataset : public Dataset {
 public:
  /// Loads both files. Throws IOError naming the file when one is missing or malformed, holds an
  /// unsupported dtype or rank, is empty, when the two counts differ, or a label is negative or
  /// (with num_classes > 0) not below num_classes.
  NpyDataset(const std::string& images_path, const std::string& labels_path,
             ImageLayout layout = ImageLayout::NCHW, std::int64_t num_classes = 0);
  /// The same checks on arrays already loaded; the paths name them in errors.
  NpyDataset(Tensor images, Tensor labels, const std::string& images_path,
             const std::string& labels_path, ImageLayout layout = ImageLayout::NCHW,
             std::int64_t num_classes = 0);

  /// The number of images.
  std::size_t size() const override;
  /// Image `index` as float32 [C, H, W] and its int64 0-d label.
  Example get(std::size_t index) const override;

  const Tensor& images() const { return images_; }    ///< uint8 or float32 [N, C, H, W]
  const Tensor& targets() const { return targets_; }  ///< int64 [N]

 private:
  Tensor images_, targets_;
};

/// The example shape [C, H, W] of the images array in `path` (read from the file; NHWC and 3-d
/// arrays as NpyDataset takes them). Throws IOError as NpyDataset does.
Shape npy_image_shape(const std::string& path, ImageLayout layout);

}  // namespace qgrad::data
